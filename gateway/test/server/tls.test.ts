// The listener over TLS (--tls-cert/--tls-key): ALPN h2 and http/1.1 so every protocol works,
// the plain-HTTP endpoints, CORS, the handshake bound, and graceful shutdown as on cleartext.

import * as net from "node:net";
import * as tls from "node:tls";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it } from "vitest";
import { ServiceStatus } from "openshell-config/raw";
import { openShell, SLEEP_HEADER, startTestServer, type TestServer } from "./harness.js";
import { credentials, h1Request, h2Request, serverTls, testPki, tlsTransports } from "./tls-support.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.server.close({ graceMs: 200 });
  t = undefined;
});

function alpn(port: number, ca: string, offered: string[]): Promise<string | false | null> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, ca, ALPNProtocols: offered }, () => {
      resolve(socket.alpnProtocol ?? null);
      socket.destroy();
    });
    socket.on("error", reject);
  });
}

describe("TLS listener", () => {
  it("serves gRPC over HTTP/2, and Connect and gRPC-Web over HTTP/2 and HTTP/1.1, on an https:// URL", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki) });
    expect(t.server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    for (const [name, transport] of Object.entries(tlsTransports(t.server.url, credentials(pki)))) {
      const client = openShell(transport);
      expect((await client.health({})).status, name).toBe(ServiceStatus.HEALTHY);
      expect((await client.getGatewayConfig({}, { headers: { [SLEEP_HEADER]: "3" } })).settingsRevision, name).toBe(3n);
    }
  });

  it("negotiates h2 or http/1.1 by ALPN, preferring h2", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki) });
    expect(await alpn(t.server.port, pki.ca.cert, ["h2", "http/1.1"])).toBe("h2");
    expect(await alpn(t.server.port, pki.ca.cert, ["http/1.1"])).toBe("http/1.1");
    expect(await alpn(t.server.port, pki.ca.cert, [])).toBe(false);
  });

  it("answers an HTTP/1.1 client that offers no ALPN at all", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki) });
    const status = await new Promise<string>((resolve, reject) => {
      const socket = tls.connect({ host: "127.0.0.1", port: t!.server.port, ca: pki.ca.cert }, () => {
        socket.end("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
      });
      let text = "";
      socket.setEncoding("utf8");
      socket.on("data", (c: string) => (text += c));
      socket.on("end", () => resolve(text.split("\r\n")[0]!));
      socket.on("error", reject);
    });
    expect(status).toBe("HTTP/1.1 200 OK");
  });

  it("serves /healthz and /metrics over HTTPS on HTTP/1.1 and HTTP/2", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki) });
    const creds = credentials(pki);
    for (const request of [h1Request, h2Request]) {
      expect(await request(t.server.url, creds, { path: "/healthz" })).toMatchObject({ status: 200, body: "ok" });
      const metrics = await request(t.server.url, creds, { path: "/metrics" });
      expect(metrics.status).toBe(200);
      expect(metrics.body).toContain("openshell_config_update_operations_pending");
    }
  });

  it("answers CORS preflights and adds CORS headers over TLS", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki), corsOrigins: ["https://dash.example.com"] });
    const preflight = await h1Request(t.server.url, credentials(pki), {
      method: "OPTIONS",
      path: "/openshell.v1.OpenShell/Health",
      headers: { origin: "https://dash.example.com", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe("https://dash.example.com");
  });

  it("receives a multi-megabyte request intact over TLS on both HTTP versions", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki) });
    const body = JSON.stringify({ pad: "y".repeat(3 * 1024 * 1024) });
    const headers = { "content-type": "application/json", "connect-protocol-version": "1" };
    for (const request of [h1Request, h2Request]) {
      const res = await request(t.server.url, credentials(pki), { method: "POST", path: "/openshell.v1.OpenShell/Health", headers, body });
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ status: "SERVICE_STATUS_HEALTHY" });
    }
  });

  it("drops a client that opens a TCP connection and never sends a ClientHello", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki), tlsHandshakeTimeoutMs: 300 });
    const socket = net.connect(t.server.port, "127.0.0.1");
    socket.on("error", () => undefined);
    const closed = await new Promise<boolean>((resolve) => {
      socket.once("close", () => resolve(true));
      // Far beyond the bound: without it the connection would stay open until the test times out.
      setTimeout(() => resolve(false), 10_000).unref();
    });
    expect(closed).toBe(true);
  });

  it("drops a client that stops half-way through its ClientHello", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki), tlsHandshakeTimeoutMs: 300 });
    const socket = net.connect(t.server.port, "127.0.0.1");
    socket.on("error", () => undefined);
    // A TLS record header announcing 512 bytes of handshake, then only a few of them.
    socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc]));
    const closed = await new Promise<boolean>((resolve) => {
      socket.once("close", () => resolve(true));
      setTimeout(() => resolve(false), 10_000).unref();
    });
    expect(closed).toBe(true);
  });

  it("finishes in-flight calls on both HTTP versions during graceful shutdown, then refuses connections", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki) });
    const { server, probe } = t;
    const transports = tlsTransports(server.url, credentials(pki));
    const calls = Object.values(transports).map((transport) =>
      openShell(transport).getGatewayConfig({}, { headers: { [SLEEP_HEADER]: "300" } }).then((r) => r.settingsRevision),
    );
    while (probe.inFlight < calls.length) await sleep(5);
    const closed = server.close({ graceMs: 5_000 });
    expect(await Promise.all(calls)).toEqual(calls.map(() => 300n));
    await closed;
    const refused = await new Promise<boolean>((resolve) => {
      const socket = net.connect(server.port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(false);
      });
      socket.once("error", () => resolve(true));
    });
    expect(refused).toBe(true);
    t = undefined;
  });

  it("closes a connection still in its handshake when shutdown begins", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki) });
    const socket = net.connect(t.server.port, "127.0.0.1");
    socket.on("error", () => undefined);
    await new Promise((resolve) => socket.once("connect", resolve));
    const closed = new Promise((resolve) => socket.once("close", resolve));
    await t.server.close({ graceMs: 5_000 });
    await closed;
    t = undefined;
  });
});
