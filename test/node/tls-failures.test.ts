// What a caller gets when the gateway's certificate is wrong: a TlsError whose reason names the
// case and whose one-line message says what to do, on every protocol and on every kind of call
// (a commit, a waited commit, the watch stream, a read), after a single connection attempt.

import { X509Certificate } from "node:crypto";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { Code } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestPki, type TestPki } from "../../examples/tls/pki.js";
import { createConfigClient, TlsError, type ConfigClient } from "../../src/index.js";
import { createNodeTransport, type NodeTransportOptions } from "../../src/transport/node.js";
import { createFakeGateway } from "../support/fake-gateway.js";
import { rejectionOf, samplePolicy } from "./helpers.js";
import { PROTOCOLS, startTlsGateway, type TlsGateway } from "./tls-servers.js";

let pki: TestPki;
let server: TlsGateway | undefined;

beforeAll(async () => {
  pki = await createTestPki();
});
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A client with the SDK's default of 6 retries (short pauses): a retried TLS failure would show as more connections. */
function client(options: Omit<NodeTransportOptions, "baseUrl">): ConfigClient {
  return createConfigClient({
    transport: createNodeTransport({ baseUrl: server!.url, ...options }),
    retry: { minDelayMs: 1, maxDelayMs: 5 },
    pollDelayMs: { min: 2, max: 10 },
  });
}

async function tlsErrorOf(promise: Promise<unknown>): Promise<TlsError> {
  const err = await rejectionOf(promise);
  expect(err).toBeInstanceOf(TlsError);
  const tls = err as TlsError;
  expect(tls.code).toBe("tls");
  expect(tls.message).not.toContain("\n");
  expect(tls.cause).toBeInstanceOf(Error);
  return tls;
}

const host = () => new URL(server!.url).host;

describe("the gateway's certificate", () => {
  it.each(PROTOCOLS)("signed by a CA the client was not given: unknown-ca, once, with $protocol over HTTP/$httpVersion", async (p) => {
    server = await startTlsGateway({ server: pki.server });
    const err = await tlsErrorOf(client({ protocol: p.protocol, httpVersion: p.httpVersion }).updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err.reason).toBe("unknown-ca");
    expect(err.message).toBe(
      `the gateway's certificate (${host()}) is not signed by a trusted CA (unable to verify the first certificate): pass its CA as tls.ca (the mTLS bundle's ca.crt)`,
    );
    expect(err.connectCode).toBe(Code.Internal);
    expect(server.connections()).toBe(1);
    expect(server.gateway.commits).toHaveLength(0);
  });

  it("signed by another CA than the one given: unknown-ca", async () => {
    server = await startTlsGateway({ server: pki.otherServer });
    const err = await tlsErrorOf(client({ tls: { ca: pki.ca.cert } }).getOperation({ operationId: "op-1" }));
    expect(err.reason).toBe("unknown-ca");
    expect(server.connections()).toBe(1);
  });

  it.each(PROTOCOLS)("made out to another name: name-mismatch saying which names it holds, with $protocol over HTTP/$httpVersion", async (p) => {
    server = await startTlsGateway({ server: pki.wrongNameServer });
    const c = client({ protocol: p.protocol, httpVersion: p.httpVersion, tls: { ca: pki.ca.cert } });
    const err = await tlsErrorOf(c.updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err.reason).toBe("name-mismatch");
    expect(err.message).toBe(
      "the gateway's certificate does not name 127.0.0.1 (it names gateway.example.com): connect by a name it holds, or set tls.serverName to one",
    );
    expect(server.connections()).toBe(1);
  });

  it("checked against tls.serverName when given: name-mismatch names that name", async () => {
    server = await startTlsGateway({ server: pki.server });
    const err = await tlsErrorOf(client({ tls: { ca: pki.ca.cert, serverName: "gateway.example.com" } }).getOperation({ operationId: "op-1" }));
    expect(err.reason).toBe("name-mismatch");
    // Node spells the certificate's IPv6 address in full.
    expect(err.message).toBe(
      "the gateway's certificate does not name gateway.example.com (it names localhost, 127.0.0.1, 0:0:0:0:0:0:0:1): connect by a name it holds, or set tls.serverName to one",
    );
  });

  it.each(PROTOCOLS)("expired: expired, saying when, with $protocol over HTTP/$httpVersion", async (p) => {
    server = await startTlsGateway({ server: pki.expiredServer });
    const c = client({ protocol: p.protocol, httpVersion: p.httpVersion, tls: { ca: pki.ca.cert } });
    const err = await tlsErrorOf(c.updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    const expiredOn = new Date(new X509Certificate(pki.expiredServer.cert).validTo).toISOString().replace(".000Z", "Z");
    expect(err.reason).toBe("expired");
    expect(err.message).toBe(`the gateway's certificate (${host()}) expired on ${expiredOn}: renew the gateway's certificate`);
    expect(server.connections()).toBe(1);
  });
});

describe("every kind of call reports it the same way", () => {
  it("a waited commit, a resumed wait on the watch stream, a status read and a config read each fail with one connection", async () => {
    server = await startTlsGateway({ server: pki.otherServer });
    const c = client({ tls: { ca: pki.ca.cert } });
    const calls: [string, () => Promise<unknown>][] = [
      ["waited commit", () => c.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 5_000 } })],
      ["watch", () => c.awaitCompletion({ operationId: "op-1" }, { timeoutMs: 5_000 })],
      ["status by key", () => c.getOperation({ idempotencyKey: "k-1", sandbox: "dev", request: { policy: samplePolicy() } })],
      ["config", () => c.getConfig({ sandbox: "dev" })],
    ];
    for (const [name, call] of calls) {
      const before = server.connections();
      const err = await tlsErrorOf(call());
      expect(err.reason, name).toBe("unknown-ca");
      expect(server.connections() - before, name).toBe(1);
    }
  });

  it("a failure on a connection that already served calls (a restarted gateway with a new certificate) is not retried either", async () => {
    server = await startTlsGateway({ server: pki.server });
    const url = server.url;
    const c = createConfigClient({
      transport: createNodeTransport({ baseUrl: url, tls: { ca: pki.ca.cert } }),
      retry: { minDelayMs: 1, maxDelayMs: 5 },
    });
    await c.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    await server.close();
    // The same port, now with an expired certificate.
    const port = Number(new URL(url).port);
    const gw = createFakeGateway();
    gw.addSandbox("dev");
    let connections = 0;
    const replacement = http2.createSecureServer({ allowHTTP1: true, ...pki.expiredServer }, connectNodeAdapter({ routes: gw.routes }));
    replacement.on("connection", (s) => {
      connections++;
      replacement.once("close", () => s.destroy());
    });
    replacement.on("tlsClientError", () => {});
    await new Promise<void>((resolve) => replacement.listen(port, "127.0.0.1", resolve));
    try {
      expect((replacement.address() as AddressInfo).port).toBe(port);
      const err = await tlsErrorOf(c.updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
      expect(err.reason).toBe("expired");
      expect(connections).toBe(1);
    } finally {
      await new Promise((resolve) => replacement.close(resolve));
    }
  });
});

describe("a gateway that does not answer in TLS", () => {
  it.each(["2", "1.1"] as const)("plain HTTP behind an https:// URL is a handshake failure that says to use http:// (HTTP/%s)", async (httpVersion) => {
    const gw = createFakeGateway();
    const plain = http2.createServer(connectNodeAdapter({ routes: gw.routes }));
    let connections = 0;
    const sockets = new Set<import("node:net").Socket>();
    plain.on("connection", (s) => {
      connections++;
      sockets.add(s);
      s.on("error", () => {});
    });
    await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
    const where = `127.0.0.1:${(plain.address() as AddressInfo).port}`;
    try {
      const c = createConfigClient({
        transport: createNodeTransport({ baseUrl: `https://${where}`, protocol: "connect", httpVersion }),
        retry: { minDelayMs: 1, maxDelayMs: 5 },
      });
      const err = await tlsErrorOf(c.getOperation({ operationId: "op-1" }));
      expect(err.reason).toBe("handshake");
      expect(err.message).toMatch(new RegExp(`^${where.replace(/\./g, "\\.")} does not answer in TLS \\(.+\\): use an http:// baseUrl if the gateway serves plain HTTP$`));
      expect(connections).toBe(1);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => plain.close(resolve));
    }
  });
});
