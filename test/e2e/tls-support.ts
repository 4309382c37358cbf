// Shared by the end-to-end TLS tests: the ways a client speaks to the gateway, and reading what
// the gateway holds for a sandbox (to show that a refused call changed nothing).

import type { Client } from "@connectrpc/connect";
import type { NodeTransportOptions } from "openshell-config/transport/node";
import { workspaceScope, type OpenShell } from "openshell-config/raw";

/** gRPC, Connect and gRPC-Web over HTTP/2, and Connect over HTTP/1.1 (gRPC needs HTTP/2). */
export const WIRES: readonly { readonly name: string; readonly options: Pick<NodeTransportOptions, "protocol" | "httpVersion"> }[] = [
  { name: "gRPC over HTTP/2", options: { protocol: "grpc" } },
  { name: "Connect over HTTP/2", options: { protocol: "connect", httpVersion: "2" } },
  { name: "gRPC-Web over HTTP/2", options: { protocol: "grpc-web", httpVersion: "2" } },
  { name: "Connect over HTTP/1.1", options: { protocol: "connect", httpVersion: "1.1" } },
];

/** The newest policy version the gateway holds for `sandbox`. */
export async function desiredVersion(raw: Client<typeof OpenShell>, sandbox: string): Promise<number | undefined> {
  return (await raw.getSandbox({ name: sandbox, workspaceScope: workspaceScope() })).sandbox?.status?.desiredPolicyVersion;
}
