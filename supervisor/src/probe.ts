// Reachability of supervisor middleware services: a plain TCP connect to each `grpc_endpoint`
// (host:port) with a short timeout. Unreachable services make an applied policy DEGRADED.

import { connect } from "node:net";
import type { SupervisorMiddlewareService } from "openshell-config/raw";

export const DEFAULT_PROBE_TIMEOUT_MS = 300;

export interface Unreachable {
  readonly name: string;
  /** Why, naming only host:port (never userinfo). */
  readonly reason: string;
}

/** `host:port` of an endpoint written as `host:port`, `[v6]:port` or `scheme://[user@]host:port[/…]`. */
export function parseHostPort(endpoint: string): { host: string; port: number } | undefined {
  let rest = endpoint.trim();
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(rest);
  if (scheme) rest = rest.slice(scheme[0].length);
  rest = rest.split("/")[0] ?? "";
  const at = rest.lastIndexOf("@");
  if (at >= 0) rest = rest.slice(at + 1);
  const m = /^\[([0-9a-fA-F:.]+)\]:(\d{1,5})$/.exec(rest) ?? /^([^:[\]\s]+):(\d{1,5})$/.exec(rest);
  if (!m) return undefined;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: m[1]!, port };
}

/** Resolves undefined when a TCP connection opens within `timeoutMs`, else the reason it did not. */
export function probeTcp(host: string, port: number, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let settled = false;
    const finish = (reason: string | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(reason);
    };
    const timer = setTimeout(() => finish(`no TCP connection to ${host}:${port} within ${timeoutMs} ms`), timeoutMs);
    socket.once("connect", () => finish(undefined));
    socket.once("error", (err: NodeJS.ErrnoException) => finish(`TCP connect to ${host}:${port} failed: ${err.code ?? "error"}`));
  });
}

/** Probes every service concurrently; returns the unreachable ones in input order. */
export async function probeMiddlewareServices(
  services: readonly SupervisorMiddlewareService[],
  timeoutMs = DEFAULT_PROBE_TIMEOUT_MS,
): Promise<Unreachable[]> {
  const results = await Promise.all(
    services.map(async (s): Promise<Unreachable | undefined> => {
      const hp = parseHostPort(s.grpcEndpoint);
      if (!hp) return { name: s.name, reason: "grpc_endpoint is not host:port" };
      const reason = await probeTcp(hp.host, hp.port, timeoutMs);
      return reason === undefined ? undefined : { name: s.name, reason };
    }),
  );
  return results.filter((r): r is Unreachable => r !== undefined);
}
