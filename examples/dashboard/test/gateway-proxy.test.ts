// The dashboard's proxy to a mutual-TLS gateway (gateway-proxy.ts), between a real HTTP server in
// front (as Vite's) and a real TLS server behind that requires a client certificate of the test CA
// (HTTP/2 with HTTP/1.1, as the gateway): what is forwarded with which certificate and headers,
// that responses stream, and each bound at its limit.

import * as http from "node:http";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestPki, type TestPki } from "../../tls/pki.js";
import { createGatewayProxy, type GatewayProxy, type GatewayProxyOptions } from "../gateway-proxy.js";

let pki: TestPki;
let upstream: http2.Http2SecureServer;
let target: string;
/** What the upstream saw of each call, by the test's `x-call` header. */
const seen = new Map<string, { cn: string; headers: http.IncomingHttpHeaders; bodyBytes: number; closedEarly: boolean }>();
/** Calls the upstream holds open until the test releases them. */
const held = new Map<string, http2.Http2ServerResponse>();
const sockets = new Set<TLSSocket>();

beforeAll(async () => {
  pki = await createTestPki();
  upstream = http2.createSecureServer({ ...pki.server, ca: pki.ca.cert, requestCert: true, rejectUnauthorized: true, allowHTTP1: true }, (req, res) => {
    const call = String(req.headers["x-call"] ?? "");
    const cn = String((req.socket as TLSSocket).getPeerCertificate().subject?.CN ?? "");
    const record = { cn, headers: { ...req.headers } as http.IncomingHttpHeaders, bodyBytes: 0, closedEarly: false };
    seen.set(call, record);
    res.once("close", () => (record.closedEarly = !res.writableFinished));
    req.on("data", (c: Buffer) => (record.bodyBytes += c.length));
    req.once("end", () => {
      if (req.url === "/test.v1.Echo/Unary") {
        res.writeHead(200, { "content-type": "application/json", "set-cookie": "x=1" }).end(JSON.stringify({ cn, bodyBytes: record.bodyBytes }));
      } else if (req.url === "/test.v1.Echo/Stream") {
        res.writeHead(200, { "content-type": "application/connect+json" });
        res.write("first;");
        held.set(call, res);
      } else if (req.url === "/test.v1.Echo/Silent") {
        held.set(call, res);
      } else {
        res.writeHead(404).end();
      }
    });
  });
  upstream.on("secureConnection", (socket: TLSSocket) => sockets.add(socket.once("close", () => sockets.delete(socket))));
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  target = `https://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
});

afterAll(async () => {
  // Held calls and pooled keep-alive connections would keep close() waiting.
  for (const socket of sockets) socket.destroy();
  await new Promise<void>((r) => upstream?.close(() => r()));
});

interface Front {
  readonly url: string;
  readonly proxy: GatewayProxy;
  close(): Promise<void>;
}
const fronts: Front[] = [];

/** The proxy inside an HTTP server, as Vite's middleware; what it passes on answers 404 "next". */
async function front(options: Partial<GatewayProxyOptions> = {}): Promise<Front> {
  const proxy = createGatewayProxy({ target, tls: { ca: pki.ca.cert, ...pki.client }, ...options });
  const server = http.createServer((req, res) => proxy.handle(req, res, () => res.writeHead(404).end("next")));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const f: Front = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    proxy,
    close: async () => {
      server.closeAllConnections();
      proxy.close();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  fronts.push(f);
  return f;
}

afterEach(async () => {
  await Promise.all(fronts.splice(0).map((f) => f.close()));
});

/** A raw HTTP/1.1 request, for what fetch cannot do (stall a body, stream one without a length). */
function rawRequest(url: string, path: string, headers: http.OutgoingHttpHeaders): { req: http.ClientRequest; response: Promise<{ status: number; body: string }> } {
  const req = http.request(`${url}${path}`, { method: "POST", headers });
  const response = new Promise<{ status: number; body: string }>((resolve, reject) => {
    req.once("response", (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c));
      res.once("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.once("error", reject);
  });
  return { req, response };
}

const until = async (probe: () => boolean, what: string) => {
  const end = Date.now() + 5_000;
  while (!probe()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe("the dashboard's gateway proxy", () => {
  it("forwards an RPC presenting the bundle's certificate, without the browser's cookies or origin, and passes the rest on", async () => {
    const f = await front();
    const res = await fetch(`${f.url}/test.v1.Echo/Unary`, {
      method: "POST",
      headers: { "x-call": "unary", "content-type": "application/json", "connect-protocol-version": "1", cookie: "session=secret", origin: f.url, authorization: "Bearer t" },
      body: "{}",
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ cn: "openshell-client", bodyBytes: 2 });
    expect(res.headers.get("set-cookie")).toBeNull();
    const { headers } = seen.get("unary")!;
    expect(headers["connect-protocol-version"]).toBe("1");
    expect(headers.authorization).toBe("Bearer t");
    expect(headers.cookie).toBeUndefined();
    expect(headers.origin).toBeUndefined();
    expect(await (await fetch(`${f.url}/index.html`)).text()).toBe("next");
    expect(await (await fetch(`${f.url}/test.v1.Echo/Unary`)).json()).toMatchObject({ code: "unimplemented" });
  });

  it("refuses a call from another origin, however local, before it reaches the gateway", async () => {
    const f = await front();
    const res = await fetch(`${f.url}/test.v1.Echo/Unary`, { method: "POST", headers: { "x-call": "cross", origin: "http://localhost:3000" }, body: "{}" });
    expect(res.status).toBe(403);
    expect(await res.json()).toEqual({ code: "permission_denied", message: "dashboard proxy: calls from http://localhost:3000 are not forwarded (only from the dashboard's own page)" });
    expect(seen.has("cross")).toBe(false);
  });

  it("streams a response as it arrives, and a client that goes away closes the call upstream", async () => {
    const f = await front();
    const ctl = new AbortController();
    const res = await fetch(`${f.url}/test.v1.Echo/Stream`, { method: "POST", headers: { "x-call": "stream" }, body: "{}", signal: ctl.signal });
    const reader = res.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("first;");
    held.get("stream")!.write("second;");
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("second;");
    ctl.abort();
    await until(() => seen.get("stream")!.closedEarly, "the upstream call to close");
  });

  it("forwards a body of exactly the bound and refuses one a byte over it, declared or streamed, without forwarding it whole", async () => {
    const f = await front({ maxBodyBytes: 1000 });
    const at = await fetch(`${f.url}/test.v1.Echo/Unary`, { method: "POST", headers: { "x-call": "at" }, body: "x".repeat(1000) });
    expect(await at.json()).toEqual({ cn: "openshell-client", bodyBytes: 1000 });
    const declared = await fetch(`${f.url}/test.v1.Echo/Unary`, { method: "POST", headers: { "x-call": "declared" }, body: "x".repeat(1001) });
    expect(declared.status).toBe(429);
    expect(await declared.json()).toEqual({ code: "resource_exhausted", message: "dashboard proxy: request body larger than 1000 bytes" });
    expect(seen.has("declared")).toBe(false);
    const streamed = rawRequest(f.url, "/test.v1.Echo/Unary", { "x-call": "streamed", "transfer-encoding": "chunked" });
    streamed.req.write("x".repeat(600));
    streamed.req.end("x".repeat(600));
    // The answer comes once the client has sent its body: answered earlier, it would see a reset.
    expect(await streamed.response).toEqual({ status: 429, body: JSON.stringify({ code: "resource_exhausted", message: "dashboard proxy: request body larger than 1000 bytes" }) });
    await until(() => seen.get("streamed")?.closedEarly === true, "the upstream call to be cut");
    expect(seen.get("streamed")!.bodyBytes).toBeLessThanOrEqual(1000);
    // What goes on past twice the bound is not read to the end: the connection is cut.
    const endless = rawRequest(f.url, "/test.v1.Echo/Unary", { "x-call": "endless", "transfer-encoding": "chunked" });
    for (let i = 0; i < 6; i++) endless.req.write("x".repeat(800));
    await expect(endless.response).rejects.toThrow(/socket hang up|ECONNRESET|EPIPE/);
  });

  it("refuses calls beyond the in-flight bound instead of queueing them, and takes them again once one ends", async () => {
    const f = await front({ maxInFlight: 2 });
    const ctl = new AbortController();
    const silent = (call: string) => fetch(`${f.url}/test.v1.Echo/Silent`, { method: "POST", headers: { "x-call": call }, body: "{}", signal: ctl.signal }).then((r) => r.text(), () => undefined);
    const first = silent("held-1");
    void silent("held-2");
    await until(() => held.has("held-1") && held.has("held-2"), "two calls in flight");
    const third = await fetch(`${f.url}/test.v1.Echo/Unary`, { method: "POST", headers: { "x-call": "third" }, body: "{}" });
    expect(third.status).toBe(503);
    expect(await third.json()).toEqual({ code: "unavailable", message: "dashboard proxy: 2 calls already in flight; try again" });
    held.get("held-1")!.writeHead(200).end("done");
    expect(await first).toBe("done");
    const fourth = await fetch(`${f.url}/test.v1.Echo/Unary`, { method: "POST", headers: { "x-call": "fourth" }, body: "{}" });
    expect(fourth.status).toBe(200);
    ctl.abort();
  });

  it("cuts a client that does not finish its body in time, and a call on which nothing moves", async () => {
    const f = await front({ bodyTimeoutMs: 200, idleTimeoutMs: 300 });
    const stalled = rawRequest(f.url, "/test.v1.Echo/Unary", { "x-call": "stalled", "content-length": "10" });
    stalled.req.write("12345");
    expect(await stalled.response).toEqual({ status: 504, body: JSON.stringify({ code: "deadline_exceeded", message: "dashboard proxy: the request body did not arrive within 200 ms" }) });
    const quiet = await fetch(`${f.url}/test.v1.Echo/Silent`, { method: "POST", headers: { "x-call": "quiet" }, body: "{}" });
    expect(quiet.status).toBe(504);
    expect(await quiet.json()).toEqual({ code: "deadline_exceeded", message: "dashboard proxy: nothing moved on the call for 300 ms" });
  });

  it("answers UNAVAILABLE, naming the gateway, when the gateway refuses the certificate or cannot be reached", async () => {
    const other = await front({ tls: { ca: pki.ca.cert, ...pki.otherClient } });
    const refused = await fetch(`${other.url}/test.v1.Echo/Unary`, { method: "POST", headers: { "x-call": "other-ca" }, body: "{}" });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { message: string }).message).toContain(`the gateway at ${new URL(target).host} could not be reached`);
    expect(seen.has("other-ca")).toBe(false);
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const gone = createGatewayProxy({ target: `https://127.0.0.1:${port}`, tls: { ca: pki.ca.cert, ...pki.client } });
    const server = http.createServer((req, res) => gone.handle(req, res, () => res.end()));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    fronts.push({ url: "", proxy: gone, close: () => new Promise<void>((r) => server.close(() => r())) });
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/test.v1.Echo/Unary`, { method: "POST", body: "{}" });
    expect(res.status).toBe(503);
    expect(((await res.json()) as { message: string }).message).toMatch(new RegExp(`the gateway at 127\\.0\\.0\\.1:${port} could not be reached: .*ECONNREFUSED`));
  });

  it("refuses a gateway that is not https", () => {
    expect(() => createGatewayProxy({ target: "http://127.0.0.1:1", tls: { ca: "", cert: "", key: "" } })).toThrow("needs an https:// gateway");
  });
});
