// --tls-client-ca: a connection without a verified client certificate can get nothing but /healthz
// and refusals, so it does not stay open: HTTP/1.1 ends with the answer to a refused request
// (Connection: close), and any such connection, busy or idle, is closed a while after its
// handshake. Otherwise a client without a certificate could hold thousands of connections (and
// their memory) open for free, as an independent review showed (1,000 sessions still open after
// 45 s, +73 kB of gateway memory each).

import * as http2 from "node:http2";
import * as tls from "node:tls";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { openShell, startTestServer, type TestServer } from "./harness.js";
import { credentials, h1Request, serverTls, testPki } from "./tls-support.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.server.close({ graceMs: 200 });
  t = undefined;
});

const GET_CONFIG = "/openshell.v1.OpenShell/GetGatewayConfig";
const LIFETIME_MS = 400;

/** Resolves when `session` closes; rejects after `ms`. */
function closed(session: http2.ClientHttp2Session | tls.TLSSocket, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still open after ${ms} ms`)), ms);
    session.once("close", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

describe("connections without a verified client certificate", () => {
  it("50 HTTP/2 sessions each refused once are all closed by the gateway soon after, and the refusals stay clear until then", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki, { clientCa: true }), unverifiedLifetimeMs: LIFETIME_MS });
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        const session = http2.connect(t!.server.url, { ca: pki.ca.cert });
        session.on("error", () => undefined);
        const end = closed(session, 5_000);
        for (let i = 0; i < 2; i++) {
          const stream = session.request({ ":method": "POST", ":path": GET_CONFIG, "content-type": "application/proto" });
          stream.on("error", () => undefined);
          const status = await new Promise<unknown>((resolve) => stream.once("response", (h) => resolve(h[":status"])));
          stream.resume();
          stream.end();
          expect(status).toBe(401);
        }
        await end;
      }),
    );
  });

  it("an HTTP/1.1 refusal says Connection: close", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki, { clientCa: true }) });
    const res = await h1Request(t.server.url, credentials(pki), { method: "POST", path: GET_CONFIG, headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(401);
    expect(res.headers.connection).toBe("close");
  });

  it("a connection that sends nothing after its handshake is closed, while a verified one stays and is served", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki, { clientCa: true }), unverifiedLifetimeMs: LIFETIME_MS });
    const port = Number(new URL(t.server.url).port);
    const open = (options: tls.ConnectionOptions) =>
      new Promise<tls.TLSSocket>((resolve, reject) => {
        const s = tls.connect({ host: "127.0.0.1", port, ca: pki.ca.cert, ALPNProtocols: ["h2"], ...options }, () => resolve(s));
        s.once("error", reject);
      });
    const anonymous = await open({});
    const verified = await open({ cert: pki.client.cert, key: pki.client.key });
    await closed(anonymous, 5_000);
    expect(verified.destroyed).toBe(false);
    verified.destroy();
    const client = openShell(createGrpcTransport({ baseUrl: t.server.url, nodeOptions: { ca: pki.ca.cert, cert: pki.client.cert, key: pki.client.key } }));
    await new Promise((r) => setTimeout(r, LIFETIME_MS * 2));
    await expect(client.getGatewayConfig({})).resolves.toBeDefined();
  });
});
