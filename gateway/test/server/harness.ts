// Test support for the server tests: a tiny OpenShell router (Health, plus GetGatewayConfig as a
// call that sleeps and reports its principal), a server on an ephemeral loopback port, and the
// SDK's real transports pointed at it.

import { setTimeout as sleep } from "node:timers/promises";
import { Code, ConnectError, createClient, type Client, type ConnectRouter, type Interceptor, type Transport } from "@connectrpc/connect";
import { OpenShell, ServiceStatus } from "openshell-config/raw";
import { createNodeTransport } from "openshell-config/transport/node";
import { createWebTransport } from "openshell-config/transport/web";
import { principalKey } from "../../src/auth/interceptor.js";
import { createLogger } from "../../src/observability/logger.js";
import { createMetrics, type GatewayMetrics } from "../../src/observability/metrics.js";
import { startServer, type RunningServer, type ServerOptions } from "../../src/server.js";

/** Header naming how long GetGatewayConfig sleeps. */
export const SLEEP_HEADER = "x-test-sleep-ms";
/** Header asking GetGatewayConfig to return a setting of this many bytes. */
export const PAD_HEADER = "x-test-pad-bytes";
/** Response header carrying the caller's principal name. */
export const PRINCIPAL_HEADER = "x-test-principal";

export interface Probe {
  /** Calls currently inside GetGatewayConfig. */
  inFlight: number;
  /** Highest `inFlight` seen. */
  maxInFlight: number;
  /** Sleeps that were cut short by the handler's abort signal. */
  aborted: number;
}

/** Health answers HEALTHY with the principal's name as `version`; GetGatewayConfig sleeps. */
export function testRoutes(probe: Probe): (router: ConnectRouter) => void {
  return (router) => {
    router.service(OpenShell, {
      async health(_req, ctx) {
        return { status: ServiceStatus.HEALTHY, version: ctx.values.get(principalKey)?.name ?? "" };
      },
      async getGatewayConfig(_req, ctx) {
        const ms = Number(ctx.requestHeader.get(SLEEP_HEADER) ?? "0");
        probe.inFlight++;
        probe.maxInFlight = Math.max(probe.maxInFlight, probe.inFlight);
        try {
          await sleep(ms, undefined, { signal: ctx.signal });
        } catch (err) {
          probe.aborted++;
          throw err;
        } finally {
          probe.inFlight--;
        }
        ctx.responseHeader.set(PRINCIPAL_HEADER, ctx.values.get(principalKey)?.name ?? "");
        const pad = Number(ctx.requestHeader.get(PAD_HEADER) ?? "0");
        const settings: Record<string, { value: { case: "stringValue"; value: string } }> = {};
        if (pad > 0) settings.pad = { value: { case: "stringValue", value: "x".repeat(pad) } };
        return { settingsRevision: BigInt(ms), settings };
      },
    });
  };
}

export interface TestServer {
  server: RunningServer;
  metrics: GatewayMetrics;
  probe: Probe;
}

/** Starts a server on 127.0.0.1:0 with the test routes. */
export async function startTestServer(
  options: Partial<
    Pick<ServerOptions, "interceptors" | "corsOrigins" | "isHealthy" | "onShutdown" | "tls" | "tlsHandshakeTimeoutMs" | "unverifiedLifetimeMs" | "sandboxListener" | "logger">
  > = {},
): Promise<TestServer> {
  const probe: Probe = { inFlight: 0, maxInFlight: 0, aborted: 0 };
  const metrics = createMetrics();
  const server = await startServer({
    port: 0,
    routes: testRoutes(probe),
    logger: createLogger({ level: "silent" }),
    metricsRegistry: metrics.registry,
    ...options,
  });
  return { server, metrics, probe };
}

/** Every way the SDK can reach a gateway, by name. */
export function sdkTransports(baseUrl: string): Record<string, Transport> {
  return {
    "gRPC over HTTP/2 (node)": createNodeTransport({ baseUrl, protocol: "grpc" }),
    "Connect over HTTP/2 (node)": createNodeTransport({ baseUrl, protocol: "connect", httpVersion: "2" }),
    "Connect over HTTP/1.1 (node)": createNodeTransport({ baseUrl, protocol: "connect", httpVersion: "1.1" }),
    "gRPC-Web over HTTP/1.1 (node)": createNodeTransport({ baseUrl, protocol: "grpc-web", httpVersion: "1.1" }),
    "gRPC-Web over HTTP/2 (node)": createNodeTransport({ baseUrl, protocol: "grpc-web", httpVersion: "2" }),
    "Connect over fetch (web)": createWebTransport({ baseUrl }),
    "gRPC-Web over fetch (web)": createWebTransport({ baseUrl, protocol: "grpc-web" }),
  };
}

/** A raw OpenShell client over `transport`. */
export function openShell(transport: Transport): Client<typeof OpenShell> {
  return createClient(OpenShell, transport);
}

export type { Interceptor };

/** A TCP pass-through to `port` that counts the connections clients open through it. */
export async function countingProxy(port: number): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  const { createServer, connect } = await import("node:net");
  let count = 0;
  const sockets = new Set<import("node:net").Socket>();
  const proxy = createServer((client) => {
    count++;
    const upstream = connect(port, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const address = proxy.address() as import("node:net").AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    connections: () => count,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        proxy.close(() => resolve());
      }),
  };
}

/** The code and message a call failed with; throws when it succeeded. */
export async function rpcFailure(call: Promise<unknown>): Promise<{ code: Code; message: string }> {
  try {
    await call;
  } catch (err) {
    const e = ConnectError.from(err);
    return { code: e.code, message: e.rawMessage };
  }
  throw new Error("call succeeded");
}
