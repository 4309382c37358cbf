// What listens on the local stack's ports before it starts: nothing (start), the stack of this
// same folder (`npm run gateway` or `npm run dashboard` already running: the dashboard attaches to
// it, anything else says so), or something else. Checked before the stack writes or starts
// anything, so that a command on a busy port changes nothing.

import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { createStackAdminClient } from "./stack-admin.js";
import { tlsListening } from "./tls-stack.js";

/** A port the stack needs is taken. */
export class PortInUseError extends Error {
  override readonly name = "PortInUseError";
  constructor(
    readonly port: number,
    readonly what: string,
  ) {
    super(`port ${port} (${what}) is in use`);
  }
}

/** Resolves when `port` on 127.0.0.1 can be listened on; PortInUseError when it is taken. */
export function assertPortFree(port: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", (err: NodeJS.ErrnoException) => reject(err.code === "EADDRINUSE" ? new PortInUseError(port, what) : err));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve()));
  });
}

/** Who answers on a busy gateway port. */
export type Occupant =
  /** This folder's stack: its admin token works there. */
  | { readonly kind: "stack"; readonly url: string }
  /** Another gateway, or anything else. */
  | { readonly kind: "other" };

/**
 * Asks `http://127.0.0.1:port` whether it is the gateway this folder's admin token belongs to: a
 * health check, then a ListSandboxes call with the token. Each answer
 * is awaited at most 2 s.
 */
export async function occupantOf(port: number, adminToken: string): Promise<Occupant> {
  const url = `http://127.0.0.1:${port}`;
  const ask = (path: string, init?: RequestInit) => fetch(`${url}${path}`, { ...init, signal: AbortSignal.timeout(2_000) }).catch(() => undefined);
  const health = await ask("/healthz");
  if (!health?.ok) return { kind: "other" };
  const raw = createStackAdminClient({ url, adminToken, clientTls: undefined }).raw(OpenShell);
  const listed = await raw.listSandboxes({ workspaceScope: workspaceScope(), pageSize: 1 }, { timeoutMs: 2_000 }).then(
    () => true,
    () => false,
  );
  return listed ? { kind: "stack", url } : { kind: "other" };
}

/** True when the gateway at `url` allows a browser at `origin` (a CORS preflight for a Connect call). */
export async function allowsOrigin(url: string, origin: string): Promise<boolean> {
  const res = await fetch(`${url}/openshell.v1.OpenShell/ListSandboxes`, {
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": "content-type,authorization" },
    signal: AbortSignal.timeout(2_000),
  }).catch(() => undefined);
  const allowed = res?.headers.get("access-control-allow-origin");
  return allowed === origin || allowed === "*";
}

/**
 * The line for a stack command whose port is taken: whether this folder's stack already runs
 * there (with the line to use it), this folder's stack on mutual TLS (its certificate issued by
 * the folder's own CA, `stack.stateDir`/tls/ca.crt), or something else, and how to pick another
 * port.
 */
export async function busyPortLine(
  err: PortInUseError,
  gatewayPort: number,
  adminToken: string | undefined,
  portEnv: string,
  stack?: { readonly stateDir: string; readonly forDashboard: boolean },
): Promise<string> {
  const another = `or set ${portEnv} to another port`;
  if (err.port !== gatewayPort) return `${err.message}: stop what listens there, ${another}`;
  const occupant = adminToken === undefined ? { kind: "other" as const } : await occupantOf(gatewayPort, adminToken);
  if (occupant.kind === "stack") {
    return `${err.message}: this folder's gateway already runs there (npm run gateway or npm run dashboard). Use it (export OPENSHELL_GATEWAY_URL=${occupant.url} OPENSHELL_TOKEN=${adminToken}), stop it first, ${another}`;
  }
  if (stack !== undefined && (await mtlsStackOn(gatewayPort, stack.stateDir))) {
    const why = stack.forDashboard ? ", which the dashboard cannot attach to" : "";
    return `${err.message}: this folder's gateway already runs there on mutual TLS (npm run gateway -- --mtls)${why}: stop it first (Ctrl-C in its terminal), ${another}`;
  }
  return `${err.message} by another program: stop it, ${another}`;
}

/** True when 127.0.0.1:`port` completes a TLS handshake with a certificate of this folder's stack CA. */
async function mtlsStackOn(port: number, stateDir: string): Promise<boolean> {
  let ca: string;
  try {
    ca = readFileSync(join(stateDir, "tls", "ca.crt"), "utf8");
  } catch {
    return false;
  }
  return tlsListening(port, ca);
}
