// A configuration client of a local stack (local-stack.ts) as its platform admin, for the scripts
// that set the stack up: with mutual TLS the client certificate signs it in, else the admin token.

import { createConfigClient, type ConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import type { LocalStack } from "./local-stack.js";

export function createStackAdminClient(stack: Pick<LocalStack, "url" | "adminToken" | "clientTls">): ConfigClient {
  if (stack.clientTls?.cert !== undefined) return createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, tls: stack.clientTls }) });
  const tls = stack.clientTls ? { tls: stack.clientTls } : {};
  return createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, ...tls }), token: stack.adminToken });
}
