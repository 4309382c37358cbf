// The Node transport over TLS against real TLS servers in this process: every protocol it offers
// (gRPC, Connect and gRPC-Web over HTTP/2; Connect and gRPC-Web over HTTP/1.1), with a CA of the
// caller's own, with mutual TLS, with a server name other than the URL's host; the system roots
// kept beside that CA; and the options refused when the transport is created.

import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { rootCertificates } from "node:tls";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestPki, writeMtlsBundle, type TestPki } from "../../examples/tls/pki.js";
import { createConfigClient, InsecureTransportError, InvalidArgumentError, TlsError } from "../../src/index.js";
import { createNodeTransport, readMtlsBundle, type NodeTransportOptions } from "../../src/transport/node.js";
import { trustedCas } from "../../src/transport/tls-options.js";
import { ConfigApplyOutcome as Outcome, ConfigUpdateOperationState as State } from "../../src/gen/openshell/v1/config_pb.js";
import { FAST, rejectionOf, samplePolicy } from "./helpers.js";
import { PROTOCOLS, startTlsGateway, type TlsGateway } from "./tls-servers.js";

const ROOT = resolve(fileURLToPath(import.meta.url), "../../..");

let pki: TestPki;
let server: TlsGateway | undefined;
const dirs: string[] = [];

beforeAll(async () => {
  pki = await createTestPki();
});
afterEach(async () => {
  await server?.close();
  server = undefined;
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function client(options: Omit<NodeTransportOptions, "baseUrl">) {
  return createConfigClient({ ...FAST, transport: createNodeTransport({ baseUrl: server!.url, ...options }) });
}

describe("TLS on every protocol", () => {
  it.each(PROTOCOLS)("a client given the gateway's CA commits and reads with $protocol over HTTP/$httpVersion", async (p) => {
    server = await startTlsGateway({ server: pki.server });
    const c = client({ protocol: p.protocol, httpVersion: p.httpVersion, tls: { ca: pki.ca.cert } });
    const res = await c.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const status = await c.getOperation(res.handle);
    expect(status.operationId).toBe(res.handle.operationId);
    expect(server.gateway.commits).toHaveLength(1);
    expect(server.requests()).toEqual([p.seen, p.seen]);
    // One TLS connection for both calls, and no SNI: the URL's host is an IP address.
    expect(server.handshakes()).toEqual([{ servername: undefined, clientName: undefined, alpn: p.httpVersion === "2" ? "h2" : undefined }]);
  });

  it.each(PROTOCOLS)("mutual TLS: a gateway that requires client certificates serves $protocol over HTTP/$httpVersion to one presenting its own", async (p) => {
    server = await startTlsGateway({ server: pki.server, clientCa: pki.ca.cert, clientCheck: "tls" });
    const c = client({ protocol: p.protocol, httpVersion: p.httpVersion, tls: { ca: pki.ca.cert, cert: pki.client.cert, key: pki.client.key } });
    await c.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(server.gateway.commits).toHaveLength(1);
    expect(server.handshakes().map((h) => h.clientName)).toEqual(["openshell-client"]);
  });

  it("an upstream mTLS bundle read from disk is all the transport needs, watch streams included", async () => {
    server = await startTlsGateway({ server: pki.server, clientCa: pki.ca.cert, clientCheck: "tls" });
    const dir = mkdtempSync(join(tmpdir(), "osc-tls-"));
    dirs.push(dir);
    writeMtlsBundle(join(dir, "mtls"), pki.ca, pki.client2);
    const c = client({ tls: readMtlsBundle(join(dir, "mtls")) });
    const res = await c.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const op = res.handle.operationId!;
    setTimeout(() => server!.gateway.complete(op, { state: State.APPLIED, outcome: Outcome.APPLIED }), 50);
    const done = await c.awaitCompletion({ operationId: op }, { timeoutMs: 5_000 });
    expect(done.operationId).toBe(op);
    expect(server.gateway.calls.watchConfigUpdateOperations).toBeGreaterThanOrEqual(1);
    expect(new Set(server.handshakes().map((h) => h.clientName))).toEqual(new Set(["openshell-user"]));
  });

  it.each(["2", "1.1"] as const)("tls.serverName is sent as SNI and is the name checked (HTTP/%s)", async (httpVersion) => {
    server = await startTlsGateway({ server: pki.wrongNameServer });
    const c = client({ protocol: "connect", httpVersion, tls: { ca: pki.ca.cert, serverName: "gateway.example.com" } });
    await c.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(server.handshakes().map((h) => h.servername)).toEqual(["gateway.example.com"]);
  });

  it("without tls options an https gateway is verified against the system roots alone, which do not hold a private CA", async () => {
    server = await startTlsGateway({ server: pki.server });
    const err = await rejectionOf(client({}).updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err).toBeInstanceOf(TlsError);
    expect((err as TlsError).reason).toBe("unknown-ca");
  });
});

describe("the system roots stay trusted beside tls.ca", () => {
  it("the CA list handed to TLS is Node's default roots followed by the given CAs", () => {
    const list = trustedCas([pki.ca.cert, pki.otherCa.cert]);
    expect(list.slice(-2)).toEqual([pki.ca.cert, pki.otherCa.cert]);
    expect(list.slice(0, rootCertificates.length)).toEqual([...rootCertificates]);
  });

  it("a CA trusted through NODE_EXTRA_CA_CERTS still verifies a gateway when tls.ca names another one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "osc-tls-"));
    dirs.push(dir);
    writeFileSync(join(dir, "extra.pem"), pki.otherCa.cert);
    // The gateway's certificate is signed by otherCa, known to the process only as an extra root.
    server = await startTlsGateway({ server: pki.otherServer });
    const script = `
      import { createConfigClient } from ${JSON.stringify(join(ROOT, "src/index.ts"))};
      import { createNodeTransport } from ${JSON.stringify(join(ROOT, "src/transport/node.ts"))};
      const transport = createNodeTransport({ baseUrl: process.argv[1], tls: { ca: process.env.TEST_CA } });
      const status = await createConfigClient({ transport }).getOperation({ operationId: "nope" }).catch((e) => e.code);
      console.log(status);`;
    const out = await new Promise<string>((done, fail) =>
      execFile(
        process.execPath,
        ["--import", "tsx", "--input-type=module", "-e", script, server!.url],
        { cwd: ROOT, env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, "extra.pem"), TEST_CA: pki.ca.cert }, timeout: 30_000 },
        (err, stdout, stderr) => (err ? fail(new Error(`${err.message}\n${stderr}`)) : done(stdout.trim())),
      ),
    );
    // The gateway answered (the operation does not exist): the TLS connection was verified.
    expect(out).toBe("not-found");
  });
});

describe("options refused when the transport is created", () => {
  const refused = (options: Omit<NodeTransportOptions, "baseUrl">, baseUrl = "https://127.0.0.1:1") => {
    try {
      createNodeTransport({ baseUrl, ...options });
    } catch (err) {
      return err;
    }
    throw new Error("expected createNodeTransport to throw");
  };

  it("tls options on an http:// baseUrl are an InvalidArgumentError on tls", () => {
    const err = refused({ tls: { ca: pki.ca.cert } }, "http://127.0.0.1:8080");
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect(err).toMatchObject({ field: "tls", message: "tls options need an https:// baseUrl, not http://127.0.0.1:8080" });
    expect(() => createNodeTransport({ baseUrl: "http://127.0.0.1:8080", tls: {} })).not.toThrow();
  });

  it("a certificate without its key, or a key without its certificate, names the missing field", () => {
    expect(refused({ tls: { cert: pki.client.cert } })).toMatchObject({ code: "invalid-argument", field: "tls.key" });
    expect(refused({ tls: { key: pki.client.key } })).toMatchObject({ code: "invalid-argument", field: "tls.cert" });
  });

  it("text that is not PEM is refused with the field it was given in", () => {
    expect(refused({ tls: { ca: "not a certificate" } })).toMatchObject({ field: "tls.ca" });
    expect(refused({ tls: { ca: [pki.ca.cert, Buffer.from("junk")] } })).toMatchObject({ field: "tls.ca" });
    expect(refused({ tls: { cert: "junk", key: pki.client.key } })).toMatchObject({ field: "tls.cert" });
    expect(refused({ tls: { cert: pki.client.cert, key: "junk" } })).toMatchObject({ field: "tls.key" });
    expect(refused({}, "127.0.0.1:8080")).toMatchObject({ field: "baseUrl" });
  });

  it("a key that is not the certificate's is a TlsError key-mismatch, naming the bundle's files when it came from one", () => {
    const err = refused({ tls: { ca: pki.ca.cert, cert: pki.client.cert, key: pki.client2.key } });
    expect(err).toBeInstanceOf(TlsError);
    expect(err).toMatchObject({
      reason: "key-mismatch",
      message: "the client key does not match the client certificate (tls.key is not the key of tls.cert): pass the key issued with that certificate",
    });
    const dir = mkdtempSync(join(tmpdir(), "osc-tls-"));
    dirs.push(dir);
    writeMtlsBundle(dir, pki.ca, pki.client);
    writeFileSync(join(dir, "tls.key"), pki.client2.key);
    const fromBundle = refused({ tls: readMtlsBundle(dir) });
    expect(fromBundle).toMatchObject({ reason: "key-mismatch", file: join(dir, "tls.key") });
    expect((fromBundle as Error).message).toContain(`(${join(dir, "tls.key")} is not the key of ${join(dir, "tls.crt")})`);
  });

  it("a bearer token still goes only where TLS or loopback protects it", () => {
    const tls = { ca: pki.ca.cert };
    expect(() => createConfigClient({ transport: createNodeTransport({ baseUrl: "https://gateway.example.com", tls }), token: "t" })).not.toThrow();
    expect(() => createConfigClient({ transport: createNodeTransport({ baseUrl: "http://gateway.example.com" }), token: "t" })).toThrow(
      InsecureTransportError,
    );
  });
});
