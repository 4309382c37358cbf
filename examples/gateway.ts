// `npm run gateway`: a gateway on ./.openshell-local/gateway.db and supervisors for three
// sandboxes that stay up for interactive use (the SDK, the dashboard, curl). Ctrl-C stops all.

import { mkdirSync } from "node:fs";
import { resolve } from "node:path";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell } from "openshell-config/raw";
import { startLocalStack } from "./local-stack.js";

const SANDBOXES = ["dev", "staging", "prod"];
const dir = resolve(process.env.OPENSHELL_LOCAL_DIR ?? ".openshell-local");
mkdirSync(dir, { recursive: true });
const port = Number(process.env.OPENSHELL_GATEWAY_PORT ?? 8080);

const stack = await startLocalStack({ sandboxes: SANDBOXES, dir, port, corsOrigins: ["http://localhost:5173", "http://127.0.0.1:5173"] });
const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
for (const name of SANDBOXES) {
  const exists = await raw.getSandbox({ name }).then(() => true, () => false);
  if (!exists) {
    await raw.createSandbox({
      name,
      labels: { env: name },
      spec: { policy: { filesystem: { includeWorkdir: true, readWrite: ["/tmp"] }, networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }] } } } },
    });
  }
  stack.startSupervisor({ sandbox: name });
}
console.log(`gateway:     ${stack.url}  (gRPC, gRPC-Web and Connect)`);
console.log(`admin token: ${stack.adminToken}`);
console.log(`sandboxes:   ${SANDBOXES.join(", ")}`);
console.log(`state:       ${dir}   logs: ${stack.logFile}`);
console.log("Ctrl-C to stop.");
const shutdown = () => void stack.stop().then(() => process.exit(0));
process.once("SIGINT", shutdown);
process.once("SIGTERM", shutdown);
