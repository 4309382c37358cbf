// The TLS files read at startup: each problem is one line naming the flag and the file.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthFileError, checkAuthFileSections, parseAuthFile } from "../../src/auth/auth-file.js";
import { loadTlsFiles, TlsFileError } from "../../src/http/tls-files.js";
import { testPki, type TestPki } from "./tls-support.js";

let dir: string;
let pki: TestPki;
const f = { ca: "", cert: "", key: "", chain: "", clientKey: "", garbage: "", badBlock: "", encryptedKey: "" };
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gateway-tls-files-"));
  pki = await testPki();
  const write = async (name: string, text: string) => {
    const path = join(dir, name);
    await writeFile(path, text);
    return path;
  };
  f.ca = await write("ca.crt", pki.ca.cert);
  f.cert = await write("tls.crt", pki.server.cert);
  f.chain = await write("chain.crt", pki.server.cert + pki.ca.cert);
  f.key = await write("tls.key", pki.server.key);
  f.clientKey = await write("client.key", pki.client.key);
  f.garbage = await write("garbage.pem", "not a certificate\n");
  f.badBlock = await write("bad-block.pem", `${pki.ca.cert}-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n`);
  const { createPrivateKey } = await import("node:crypto");
  f.encryptedKey = await write(
    "encrypted.key",
    createPrivateKey(pki.server.key).export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase: "secret" }) as string,
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function problem(files: Parameters<typeof loadTlsFiles>[0]): Promise<string> {
  try {
    await loadTlsFiles(files);
  } catch (err) {
    expect(err).toBeInstanceOf(TlsFileError);
    expect((err as Error).message).not.toContain("\n");
    return (err as Error).message;
  }
  throw new Error("accepted");
}

describe("TLS files", () => {
  it("loads a certificate (or a chain), its key and a client CA", async () => {
    const loaded = await loadTlsFiles({ certFile: f.chain, keyFile: f.key, clientCaFile: f.ca });
    expect(loaded.cert).toBe(pki.server.cert + pki.ca.cert);
    expect(loaded.clientCa).toBe(pki.ca.cert);
    expect(loaded.leaf.subject).toBe("CN=127.0.0.1");
    expect((await loadTlsFiles({ certFile: f.cert, keyFile: f.key })).clientCa).toBeUndefined();
  });

  it("names the flag and file of an unreadable, non-PEM, encrypted or mismatched file", async () => {
    const missing = join(dir, "missing.crt");
    expect(await problem({ certFile: missing, keyFile: f.key })).toBe(`--tls-cert ${missing}: cannot read (ENOENT)`);
    expect(await problem({ certFile: f.cert, keyFile: missing })).toBe(`--tls-key ${missing}: cannot read (ENOENT)`);
    expect(await problem({ certFile: f.garbage, keyFile: f.key })).toBe(`--tls-cert ${f.garbage}: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)`);
    expect(await problem({ certFile: f.badBlock, keyFile: f.key })).toBe(`--tls-cert ${f.badBlock}: certificate 2 is not a valid PEM certificate`);
    expect(await problem({ certFile: f.cert, keyFile: f.garbage })).toBe(`--tls-key ${f.garbage}: not a PEM private key`);
    expect(await problem({ certFile: f.cert, keyFile: f.encryptedKey })).toBe(`--tls-key ${f.encryptedKey}: the key is encrypted; give an unencrypted PEM key`);
    expect(await problem({ certFile: f.cert, keyFile: f.clientKey })).toBe(`--tls-key ${f.clientKey}: does not match the certificate in --tls-cert ${f.cert}`);
    expect(await problem({ certFile: f.cert, keyFile: f.key, clientCaFile: f.garbage })).toBe(
      `--tls-client-ca ${f.garbage}: no PEM certificate in it (expected -----BEGIN CERTIFICATE-----)`,
    );
  });
});

describe("auth file sections against the flags", () => {
  it("refuses a certificate or OIDC section the gateway runs without", () => {
    const certs = parseAuthFile({ defaultClientCertificate: "none" });
    expect(() => checkAuthFileSections(certs, { clientCertificates: false, oidc: true }, "auth file a.json")).toThrow(
      new AuthFileError('auth file a.json: "clientCertificates"/"defaultClientCertificate" need --tls-client-ca'),
    );
    expect(() => checkAuthFileSections(certs, { clientCertificates: true, oidc: false })).not.toThrow();
    const oidc = parseAuthFile({ oidc: {} });
    expect(() => checkAuthFileSections(oidc, { clientCertificates: true, oidc: false }, "auth file a.json")).toThrow(
      'auth file a.json: "oidc" needs --oidc-issuer and --oidc-audience',
    );
  });
});
