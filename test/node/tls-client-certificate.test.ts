// Client certificates the gateway wants and does not get, or gets and refuses. Servers say so in
// two ways: a TLS alert during or right after the handshake (Node's TLS server for a missing
// certificate, OpenSSL-based and most other servers for a refused one too), or, when the gateway
// checks certificates itself as the reference gateway does, an UNAUTHENTICATED answer starting
// `client certificate required` / `client certificate rejected: <why>`. Both become TlsError.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestPki, type TestPki } from "../../examples/tls/pki.js";
import { createConfigClient, TlsError, type ConfigClient } from "../../src/index.js";
import { createNodeTransport, type NodeTransportOptions } from "../../src/transport/node.js";
import { rejectionOf, samplePolicy } from "./helpers.js";
import { hasOpenssl, PROTOCOLS, startAlertServer, startOpensslServer, startTlsGateway, type TestServer, type TlsGateway } from "./tls-servers.js";

const REQUIRED = "the gateway requires a client certificate: pass tls.cert and tls.key (the mTLS bundle's tls.crt and tls.key)";
const rejected = (why: string) =>
  `the gateway rejected the client certificate (${why}): pass a certificate and key issued by a CA the gateway trusts (the mTLS bundle's tls.crt and tls.key)`;

/** `openssl s_server` sends the alert Node's TLS server does not; without openssl those tests are skipped. */
const OPENSSL = await hasOpenssl();

let pki: TestPki;
let server: Omit<TestServer, "connections"> & Partial<TestServer> | undefined;
let dir: string;

beforeAll(async () => {
  pki = await createTestPki();
  dir = mkdtempSync(join(tmpdir(), "osc-tls-cc-"));
});
afterEach(async () => {
  await server?.close();
  server = undefined;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function client(options: Omit<NodeTransportOptions, "baseUrl">): ConfigClient {
  return createConfigClient({
    transport: createNodeTransport({ baseUrl: server!.url, ...options }),
    retry: { minDelayMs: 1, maxDelayMs: 5 },
  });
}

async function tlsErrorOf(promise: Promise<unknown>): Promise<TlsError> {
  const err = await rejectionOf(promise);
  expect(err).toBeInstanceOf(TlsError);
  return err as TlsError;
}

const own = () => ({ ca: pki.ca.cert, cert: pki.client.cert, key: pki.client.key });
const foreign = () => ({ ca: pki.ca.cert, cert: pki.otherClient.cert, key: pki.otherClient.key });

describe("refused in the TLS handshake", () => {
  it.each(PROTOCOLS)("a client without a certificate gets client-certificate-required from the TLS 1.3 alert, once ($protocol, HTTP/$httpVersion)", async (p) => {
    const s = await startTlsGateway({ server: pki.server, clientCa: pki.ca.cert, clientCheck: "tls" });
    server = s;
    const err = await tlsErrorOf(client({ protocol: p.protocol, httpVersion: p.httpVersion, tls: { ca: pki.ca.cert } }).updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err).toMatchObject({ reason: "client-certificate-required", message: REQUIRED, connectCode: Code.Internal });
    expect(s.connections()).toBe(1);
    expect(s.gateway.commits).toHaveLength(0);
  });

  it.each(["2", "1.1"] as const)("over TLS 1.2 the handshake_failure alert means the same to a client that sent none (HTTP/%s)", async (httpVersion) => {
    const s = await startTlsGateway({ server: pki.server, clientCa: pki.ca.cert, clientCheck: "tls", maxVersion: "TLSv1.2" });
    server = s;
    const err = await tlsErrorOf(client({ protocol: "connect", httpVersion, tls: { ca: pki.ca.cert } }).getOperation({ operationId: "op-1" }));
    expect(err).toMatchObject({ reason: "client-certificate-required", message: REQUIRED });
    expect(s.connections()).toBe(1);
  });

  it.each(["2", "1.1"] as const)("over TLS 1.2 a server that refuses a certificate by closing the connection, without an alert, is client-certificate-rejected after one connection, and nothing is committed (HTTP/%s)", async (httpVersion) => {
    const s = await startTlsGateway({ server: pki.server, clientCa: pki.ca.cert, clientCheck: "tls", maxVersion: "TLSv1.2" });
    server = s;
    const err = await tlsErrorOf(client({ protocol: "connect", httpVersion, tls: foreign() }).updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err.reason).toBe("client-certificate-rejected");
    expect(err.message).toMatch(/closed the connection during the TLS handshake, after the client certificate was offered/);
    expect(s.connections()).toBe(1);
    expect(s.gateway.commits).toHaveLength(0);
  });

  it.skipIf(!OPENSSL).each(["2", "1.1"] as const)("an OpenSSL server refusing a certificate from an unknown CA: client-certificate-rejected from its alert (HTTP/%s)", async (httpVersion) => {
    const files = { cert: join(dir, "server.crt"), key: join(dir, "server.key"), ca: join(dir, "ca.crt") };
    writeFileSync(files.cert, pki.server.cert);
    writeFileSync(files.key, pki.server.key, { mode: 0o600 });
    writeFileSync(files.ca, pki.ca.cert);
    server = await startOpensslServer(files);
    const err = await tlsErrorOf(client({ protocol: "connect", httpVersion, tls: foreign() }).getOperation({ operationId: "op-1" }));
    expect(err).toMatchObject({ reason: "client-certificate-rejected", message: rejected("TLS alert unknown ca") });
  });

  // The alerts a server sends about a client certificate (RFC 8446 §6.2), as OpenSSL reports them:
  // ERR_SSL_*_ALERT_* over HTTP/2, EPROTO with the alert in the message over HTTP/1.1.
  const ALERTS = [
    { alert: 48, name: "unknown ca", reason: "client-certificate-rejected", client: "sent" },
    { alert: 42, name: "bad certificate", reason: "client-certificate-rejected", client: "sent" },
    { alert: 46, name: "certificate unknown", reason: "client-certificate-rejected", client: "sent" },
    { alert: 44, name: "certificate revoked", reason: "client-certificate-rejected", client: "sent" },
    { alert: 45, name: "certificate expired", reason: "client-certificate-rejected", client: "sent" },
    { alert: 49, name: "access denied", reason: "client-certificate-rejected", client: "sent" },
    { alert: 51, name: "decrypt error", reason: "client-certificate-rejected", client: "sent" },
    { alert: 116, name: "certificate required", reason: "client-certificate-required", client: "did not send" },
    { alert: 40, name: "handshake failure", reason: "client-certificate-required", client: "did not send" },
    { alert: 40, name: "handshake failure", reason: "handshake", client: "sent" },
    { alert: 70, name: "protocol version", reason: "handshake", client: "sent" },
  ] as const;
  for (const httpVersion of ["2", "1.1"] as const) {
    it.each(ALERTS)(`the alert $alert ($name) to a client that $client a certificate is $reason (HTTP/${httpVersion})`, async (a) => {
      const s = await startAlertServer(a.alert);
      server = s;
      const tls = a.client === "sent" ? own() : { ca: pki.ca.cert };
      const err = await tlsErrorOf(client({ protocol: "connect", httpVersion, tls }).getOperation({ operationId: "op-1" }));
      expect(err.reason).toBe(a.reason);
      if (a.reason === "client-certificate-rejected") expect(err.message).toBe(rejected(`TLS alert ${a.name}`));
      if (a.reason === "client-certificate-required") expect(err.message).toBe(REQUIRED);
      if (a.reason === "handshake") {
        expect(err.message).toMatch(new RegExp(`^the TLS handshake with 127\\.0\\.0\\.1:\\d+ failed \\(.*alert ${a.name}\\): check the baseUrl and the gateway's TLS settings$`));
      }
      expect(s.connections()).toBe(1);
    });
  }
});

describe("refused by the gateway after the handshake", () => {
  it.each(PROTOCOLS)("no certificate: UNAUTHENTICATED 'client certificate required' becomes client-certificate-required, once ($protocol, HTTP/$httpVersion)", async (p) => {
    const s = await startTlsGateway({ server: pki.server, clientCa: pki.ca.cert, clientCheck: "gateway" });
    server = s;
    const err = await tlsErrorOf(client({ protocol: p.protocol, httpVersion: p.httpVersion, tls: { ca: pki.ca.cert } }).updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err).toMatchObject({ reason: "client-certificate-required", message: REQUIRED, connectCode: Code.Unauthenticated });
    expect(s.requests()).toHaveLength(1);
  });

  it.each(PROTOCOLS)("a certificate from an unknown CA: 'client certificate rejected: <why>' keeps the why ($protocol, HTTP/$httpVersion)", async (p) => {
    const s = await startTlsGateway({ server: pki.server, clientCa: pki.ca.cert, clientCheck: "gateway" });
    server = s;
    const err = await tlsErrorOf(client({ protocol: p.protocol, httpVersion: p.httpVersion, tls: foreign() }).updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err).toMatchObject({ reason: "client-certificate-rejected", message: rejected("UNABLE_TO_VERIFY_LEAF_SIGNATURE"), connectCode: Code.Unauthenticated });
    expect(s.requests()).toHaveLength(1);
  });

  it("the watch stream reports the gateway's refusal the same way", async () => {
    const s = await startTlsGateway({ server: pki.server, clientCa: pki.ca.cert, clientCheck: "gateway" });
    server = s;
    const err = await tlsErrorOf(client({ tls: { ca: pki.ca.cert } }).awaitCompletion({ operationId: "op-1" }, { timeoutMs: 5_000 }));
    expect(err).toMatchObject({ reason: "client-certificate-required", message: REQUIRED });
    expect(s.requests()).toHaveLength(1);
  });

  it("a certificate the gateway trusts is served", async () => {
    const s: TlsGateway = await startTlsGateway({ server: pki.server, clientCa: pki.ca.cert, clientCheck: "gateway" });
    server = s;
    await client({ tls: own() }).updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(s.gateway.commits).toHaveLength(1);
  });
});
