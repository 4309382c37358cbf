// One port answers every protocol the SDK speaks, and the plain-HTTP endpoints on both HTTP versions.

import * as http2 from "node:http2";
import { afterEach, describe, expect, it } from "vitest";
import { ServiceStatus } from "openshell-config/raw";
import { openShell, PAD_HEADER, sdkTransports, SLEEP_HEADER, startTestServer, type TestServer } from "./harness.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.server.close({ graceMs: 500 });
  t = undefined;
});

/** GET over HTTP/2 prior knowledge. */
async function h2Get(url: string, path: string): Promise<{ status: number; body: string }> {
  const session = http2.connect(url);
  try {
    return await new Promise((resolve, reject) => {
      const req = session.request({ ":method": "GET", ":path": path });
      let status = 0;
      let body = "";
      req.on("response", (h) => (status = Number(h[":status"])));
      req.setEncoding("utf8");
      req.on("data", (c: string) => (body += c));
      req.on("end", () => resolve({ status, body }));
      req.on("error", reject);
      req.end();
    });
  } finally {
    session.close();
  }
}

describe("one port for every protocol", () => {
  it("answers Health over gRPC, Connect and gRPC-Web on HTTP/2 and HTTP/1.1 from the same port", async () => {
    t = await startTestServer();
    for (const [name, transport] of Object.entries(sdkTransports(t.server.url))) {
      const res = await openShell(transport).health({});
      expect(res.status, name).toBe(ServiceStatus.HEALTHY);
    }
  });

  it("carries request headers, response messages and 64-bit fields through every protocol", async () => {
    t = await startTestServer();
    for (const [name, transport] of Object.entries(sdkTransports(t.server.url))) {
      const res = await openShell(transport).getGatewayConfig({}, { headers: { [SLEEP_HEADER]: "7" } });
      expect(res.settingsRevision, name).toBe(7n);
    }
  });

  it("advertises a high concurrent-stream limit to HTTP/2 clients", async () => {
    t = await startTestServer();
    const session = http2.connect(t.server.url);
    try {
      const settings = await new Promise<http2.Settings>((resolve) => session.once("remoteSettings", resolve));
      expect(settings.maxConcurrentStreams).toBeGreaterThanOrEqual(10_000);
    } finally {
      session.close();
    }
  });

  it("does not gzip responses of a few KiB even when the client accepts gzip", async () => {
    t = await startTestServer();
    const res = await fetch(`${t.server.url}/openshell.v1.OpenShell/GetGatewayConfig`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "accept-encoding": "gzip",
        "connect-protocol-version": "1",
        [PAD_HEADER]: "8192",
      },
      body: "{}",
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-encoding")).toBeNull();
    expect(((await res.json()) as { settings: { pad: { stringValue: string } } }).settings.pad.stringValue).toHaveLength(8192);
  });

  it("receives a multi-megabyte request body intact over HTTP/1.1 and HTTP/2", async () => {
    t = await startTestServer();
    const body = JSON.stringify({ pad: "y".repeat(3 * 1024 * 1024) });
    const headers = { "content-type": "application/json", "connect-protocol-version": "1" };
    const h1 = await fetch(`${t.server.url}/openshell.v1.OpenShell/Health`, { method: "POST", headers, body });
    expect(h1.status).toBe(200);
    expect(await h1.json()).toEqual({ status: "SERVICE_STATUS_HEALTHY" });
    const session = http2.connect(t.server.url);
    try {
      const status = await new Promise<number>((resolve, reject) => {
        const req = session.request({ ":method": "POST", ":path": "/openshell.v1.OpenShell/Health", ...headers });
        req.on("response", (h) => resolve(Number(h[":status"])));
        req.on("error", reject);
        req.end(body);
      });
      expect(status).toBe(200);
    } finally {
      session.close();
    }
  });
});

describe("health and metrics endpoints", () => {
  it("serves /healthz as 200 ok on HTTP/1.1 and HTTP/2 while the gateway is healthy", async () => {
    t = await startTestServer({ isHealthy: async () => true });
    const res = await fetch(`${t.server.url}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("ok");
    expect(await h2Get(t.server.url, "/healthz")).toEqual({ status: 200, body: "ok" });
  });

  it("serves /healthz as 503 when the health check fails or throws", async () => {
    let healthy: boolean | Error = false;
    t = await startTestServer({
      isHealthy: async () => {
        if (healthy instanceof Error) throw healthy;
        return healthy;
      },
    });
    expect((await fetch(`${t.server.url}/healthz`)).status).toBe(503);
    expect((await h2Get(t.server.url, "/healthz")).status).toBe(503);
    healthy = new Error("database gone");
    expect((await fetch(`${t.server.url}/healthz`)).status).toBe(503);
    healthy = true;
    expect((await fetch(`${t.server.url}/healthz`)).status).toBe(200);
  });

  it("serves Prometheus text with every gateway metric at /metrics on both HTTP versions", async () => {
    t = await startTestServer();
    t.metrics.setPendingSource(() => 3);
    t.metrics.updateOperationsTerminal.inc({ state: "applied" });
    t.metrics.storeOperationSeconds.observe({ op: "commitUpdate" }, 0.002);
    t.metrics.operationWaitSeconds.observe(0.5);
    t.metrics.rpcRequests.inc({ method: "Health", code: "ok" });
    const res = await fetch(`${t.server.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await res.text();
    for (const name of [
      "openshell_config_update_operations_terminal_total",
      "openshell_config_update_operations_pending 3",
      "openshell_config_update_operation_wait_seconds_bucket",
      "openshell_gateway_store_operation_seconds_bucket",
      "openshell_gateway_rpc_requests_total",
      "process_cpu_seconds_total",
    ]) {
      expect(text).toContain(name);
    }
    const h2 = await h2Get(t.server.url, "/metrics");
    expect(h2.status).toBe(200);
    expect(h2.body).toContain("openshell_gateway_rpc_requests_total");
  });

  it("rejects methods other than GET and HEAD on the endpoints and 404s unknown paths", async () => {
    t = await startTestServer();
    expect((await fetch(`${t.server.url}/healthz`, { method: "POST" })).status).toBe(405);
    expect((await fetch(`${t.server.url}/nope`)).status).toBe(404);
  });
});
