// --tls-client-ca: every request on a connection without a verified client certificate is refused
// UNAUTHENTICATED before its body is read, with a message saying what was wrong; /healthz stays
// open; a verified certificate is a principal, and a bearer token on the same call decides instead.

import * as http2 from "node:http2";
import * as tls from "node:tls";
import { Code } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { ServiceStatus } from "openshell-config/raw";
import { EMPTY_AUTH_FILE, parseAuthFile } from "../../src/auth/auth-file.js";
import { createAuthInterceptor } from "../../src/auth/interceptor.js";
import { CLIENT_CERTIFICATE_REQUIRED } from "../../src/server.js";
import { openShell, PRINCIPAL_HEADER, startTestServer, type TestServer, rpcFailure as failure } from "./harness.js";
import { credentials, h1Request, h2Request, serverTls, testPki, tlsTransports } from "./tls-support.js";

let t: TestServer | undefined;
afterEach(async () => {
  await t?.server.close({ graceMs: 200 });
  t = undefined;
});

const REQUIRED = "client certificate required: this gateway accepts only clients with a certificate from its client CA";
const TOKEN = "alice-token-0123456789";

async function startMtls(): Promise<TestServer> {
  const pki = await testPki();
  const auth = parseAuthFile({ tokens: [{ token: TOKEN, principal: "alice", role: "user", workspaces: ["default"] }] });
  return startTestServer({ tls: serverTls(pki, { clientCa: true }), interceptors: [createAuthInterceptor(auth)] });
}


describe("client certificates required (--tls-client-ca)", () => {
  it("exports the exact refusal message the SDK maps", () => {
    expect(CLIENT_CERTIFICATE_REQUIRED).toBe(REQUIRED);
  });

  it("refuses a client without a certificate with UNAUTHENTICATED on every protocol, and no handler runs", async () => {
    const pki = await testPki();
    t = await startMtls();
    for (const [name, transport] of Object.entries(tlsTransports(t.server.url, credentials(pki)))) {
      const client = openShell(transport);
      expect(await failure(client.getGatewayConfig({})), name).toEqual({ code: Code.Unauthenticated, message: REQUIRED });
      expect(await failure(client.health({})), name).toEqual({ code: Code.Unauthenticated, message: REQUIRED });
    }
    expect(t.probe.maxInFlight).toBe(0);
  });

  it("refuses a certificate from another CA with the verification error, on every protocol", async () => {
    const pki = await testPki();
    t = await startMtls();
    for (const [name, transport] of Object.entries(tlsTransports(t.server.url, credentials(pki, pki.otherClient)))) {
      expect(await failure(openShell(transport).getGatewayConfig({})), name).toEqual({
        code: Code.Unauthenticated,
        message: "client certificate rejected: UNABLE_TO_VERIFY_LEAF_SIGNATURE",
      });
    }
    expect(t.probe.maxInFlight).toBe(0);
  });

  it("answers a refused HTTP/2 call at once while its body is still being sent", async () => {
    const pki = await testPki();
    t = await startMtls();
    const session = http2.connect(t.server.url, { ca: pki.ca.cert });
    session.on("error", () => undefined);
    try {
      const req = session.request({ ":method": "POST", ":path": "/openshell.v1.OpenShell/GetGatewayConfig", "content-type": "application/grpc", te: "trailers" });
      req.on("error", () => undefined);
      const closed = new Promise((resolve) => req.on("close", resolve));
      // 1 MiB of a message announced as 16 MiB, and the stream left open: only an answer that does
      // not wait for the body can arrive.
      const frame = Buffer.alloc(5 + 1024 * 1024);
      frame.writeUInt32BE(16 * 1024 * 1024, 1);
      const response = new Promise<http2.IncomingHttpHeaders>((resolve) => req.on("response", resolve));
      req.write(frame);
      req.resume();
      const headers = await response;
      expect(headers[":status"]).toBe(200);
      expect(headers["grpc-status"]).toBe(String(Code.Unauthenticated));
      expect(decodeURIComponent(String(headers["grpc-message"]))).toBe(REQUIRED);
      // The server resets the stream (NO_ERROR) rather than reading the rest.
      await closed;
      expect(req.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    } finally {
      session.destroy();
    }
  });

  it("answers a refused HTTP/1.1 call at once, without reading its announced body, and closes the connection", async () => {
    const pki = await testPki();
    t = await startMtls();
    const socket = tls.connect({ host: "127.0.0.1", port: t.server.port, ca: pki.ca.cert, ALPNProtocols: ["http/1.1"] });
    socket.on("error", () => undefined);
    await new Promise((resolve) => socket.once("secureConnect", resolve));
    socket.write(
      "POST /openshell.v1.OpenShell/GetGatewayConfig HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        `Connect-Protocol-Version: 1\r\nContent-Length: ${64 * 1024 * 1024}\r\n\r\n{"pad":"`,
    );
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (c: string) => (text += c));
    await new Promise((resolve) => socket.once("close", resolve));
    const [head, body] = text.split("\r\n\r\n");
    expect(head!.split("\r\n")[0]).toBe("HTTP/1.1 401 Unauthorized");
    expect(head).toMatch(/\r\nconnection: close/i);
    expect(JSON.parse(body!)).toEqual({ code: "unauthenticated", message: REQUIRED });
  });

  it("reads a refused HTTP/1.1 call's small body before answering, so a client still writing it gets the answer rather than a broken pipe", async () => {
    const pki = await testPki();
    t = await startMtls();
    const socket = tls.connect({ host: "127.0.0.1", port: t.server.port, ca: pki.ca.cert, ALPNProtocols: ["http/1.1"] });
    socket.on("error", () => undefined);
    await new Promise((resolve) => socket.once("secureConnect", resolve));
    const body = JSON.stringify({ workspaceScope: "x" });
    socket.write(
      "POST /openshell.v1.OpenShell/ListSandboxes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
        `Connect-Protocol-Version: 1\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    let text = "";
    socket.setEncoding("utf8");
    socket.on("data", (c: string) => (text += c));
    // The body follows the headers a moment later, as it does from a client that writes them apart.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(text, "answered (and closed) while the client still had its body to write").toBe("");
    socket.write(body);
    await new Promise((resolve) => socket.once("close", resolve));
    const [head, answer] = text.split("\r\n\r\n");
    expect(head!.split("\r\n")[0]).toBe("HTTP/1.1 401 Unauthorized");
    expect(JSON.parse(answer!)).toEqual({ code: "unauthenticated", message: REQUIRED });
  });

  it("keeps /healthz open without a certificate and refuses /metrics with a plain 401", async () => {
    const pki = await testPki();
    t = await startMtls();
    const creds = credentials(pki);
    for (const request of [h1Request, h2Request]) {
      expect(await request(t.server.url, creds, { path: "/healthz" })).toMatchObject({ status: 200, body: "ok" });
      const metrics = await request(t.server.url, creds, { path: "/metrics" });
      expect(metrics.status).toBe(401);
      expect(metrics.body).toBe(`${REQUIRED}\n`);
      expect(metrics.headers["content-type"]).toMatch(/^text\/plain/);
    }
  });

  it("serves /metrics and every protocol to a client with a verified certificate, as the platform admin cert:<CN>", async () => {
    const pki = await testPki();
    t = await startMtls();
    for (const [name, transport] of Object.entries(tlsTransports(t.server.url, credentials(pki, pki.client)))) {
      const client = openShell(transport);
      let principal: string | null = null;
      await client.getGatewayConfig({}, { onHeader: (h) => (principal = h.get(PRINCIPAL_HEADER)) });
      expect(principal, name).toBe("cert:openshell-client");
      expect((await client.health({})).status, name).toBe(ServiceStatus.HEALTHY);
    }
    const metrics = await h2Request(t.server.url, credentials(pki, pki.client), { path: "/metrics" });
    expect(metrics.status).toBe(200);
  });

  it("lets a valid bearer token on a verified connection decide the principal, and refuses an invalid one", async () => {
    const pki = await testPki();
    t = await startMtls();
    const client = openShell(tlsTransports(t.server.url, credentials(pki, pki.client))["gRPC over HTTP/2"]!);
    let principal: string | null = null;
    await client.getGatewayConfig({}, { headers: { authorization: `Bearer ${TOKEN}` }, onHeader: (h) => (principal = h.get(PRINCIPAL_HEADER)) });
    expect(principal).toBe("alice");
    expect(await failure(client.getGatewayConfig({}, { headers: { authorization: "Bearer not-a-token" } }))).toEqual({
      code: Code.Unauthenticated,
      message: "invalid bearer token",
    });
  });

  it("with defaultClientCertificate none, a verified but unmapped certificate needs a bearer token", async () => {
    const pki = await testPki();
    const auth = parseAuthFile({ defaultClientCertificate: "none", tokens: [{ token: TOKEN, principal: "alice", role: "admin", workspaces: "*" }] });
    t = await startTestServer({ tls: serverTls(pki, { clientCa: true }), interceptors: [createAuthInterceptor(auth)] });
    const client = openShell(tlsTransports(t.server.url, credentials(pki, pki.client))["Connect over HTTP/1.1"]!);
    expect(await failure(client.getGatewayConfig({}))).toEqual({
      code: Code.Unauthenticated,
      message: "missing bearer token: this gateway's client certificates identify no principal",
    });
    let principal: string | null = null;
    await client.getGatewayConfig({}, { headers: { authorization: `Bearer ${TOKEN}` }, onHeader: (h) => (principal = h.get(PRINCIPAL_HEADER)) });
    expect(principal).toBe("alice");
  });

  it("maps certificates to the auth file's principals by subject and by fingerprint", async () => {
    const pki = await testPki();
    const fingerprint = new (await import("node:crypto")).X509Certificate(pki.client.cert).fingerprint256;
    const auth = parseAuthFile({
      clientCertificates: [
        { subject: "CN=openshell-user", principal: "bob", role: "user", workspaces: ["default"] },
        { fingerprint256: fingerprint.replaceAll(":", "").toLowerCase(), principal: "ci", role: "admin", workspaces: ["default"] },
      ],
    });
    t = await startTestServer({ tls: serverTls(pki, { clientCa: true }), interceptors: [createAuthInterceptor(auth)] });
    const principalOf = async (client: typeof pki.client) => {
      let principal: string | null = null;
      const transport = tlsTransports(t!.server.url, credentials(pki, client))["gRPC-Web over HTTP/1.1"]!;
      await openShell(transport).getGatewayConfig({}, { onHeader: (h) => (principal = h.get(PRINCIPAL_HEADER)) });
      return principal;
    };
    expect(await principalOf(pki.client2)).toBe("bob");
    expect(await principalOf(pki.client)).toBe("ci");
  });

  it("runs without an auth file: the certificate alone authenticates", async () => {
    const pki = await testPki();
    t = await startTestServer({ tls: serverTls(pki, { clientCa: true }), interceptors: [createAuthInterceptor(EMPTY_AUTH_FILE)] });
    const client = openShell(tlsTransports(t.server.url, credentials(pki, pki.client2))["Connect over HTTP/2"]!);
    let principal: string | null = null;
    await client.getGatewayConfig({}, { onHeader: (h) => (principal = h.get(PRINCIPAL_HEADER)) });
    expect(principal).toBe("cert:openshell-user");
  });
});
