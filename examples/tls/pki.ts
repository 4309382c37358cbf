// Test and demo certificates, made in this process (no files unless asked): a CA, a server
// certificate for 127.0.0.1/::1/localhost, a client certificate, an expired and a wrongly named
// server certificate, and a second, unrelated CA with a client certificate of its own. The local
// stack (`npm run gateway -- --mtls`) and the TLS tests use it; nothing here is for production.
//
// Why @peculiar/x509 rather than the openssl command: certificates with any validity window (an
// expired one, for the "expired certificate" error) and subject alternative names without a
// config file per certificate, and no child processes in tests.

import { webcrypto } from "node:crypto";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
// @peculiar/x509 resolves its classes through tsyringe, which needs the Reflect metadata API.
import "reflect-metadata";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Crypto);

const ALG: EcKeyGenParams & EcdsaParams = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
const DAY_MS = 86_400_000;

/** A certificate and its private key, PEM. */
export interface Pem {
  readonly cert: string;
  readonly key: string;
}

/** Everything a TLS test needs. `ca.key` signs; the others are leaves. */
export interface TestPki {
  /** The CA of the gateway's server certificate and of `client` (the trusted one). */
  readonly ca: Pem;
  /** Server certificate for 127.0.0.1, ::1 and localhost, signed by `ca`. */
  readonly server: Pem;
  /** Client certificate (CN `openshell-client`), signed by `ca`. */
  readonly client: Pem;
  /** A second client, CN `openshell-user`, signed by `ca`: for per-certificate principals. */
  readonly client2: Pem;
  /** Server certificate for 127.0.0.1 etc., signed by `ca`, expired a day ago. */
  readonly expiredServer: Pem;
  /** Server certificate for `gateway.example.com` only, signed by `ca`. */
  readonly wrongNameServer: Pem;
  /** An unrelated CA. */
  readonly otherCa: Pem;
  /** Client certificate signed by `otherCa`. */
  readonly otherClient: Pem;
  /** Server certificate for 127.0.0.1 etc., signed by `otherCa`. */
  readonly otherServer: Pem;
}

interface Issuer {
  readonly cert: x509.X509Certificate;
  readonly keys: CryptoKeyPair;
}

async function newKeys(): Promise<CryptoKeyPair> {
  return (await webcrypto.subtle.generateKey(ALG, true, ["sign", "verify"])) as CryptoKeyPair;
}

async function keyPem(keys: CryptoKeyPair): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey("pkcs8", keys.privateKey as webcrypto.CryptoKey));
  const b64 = der.toString("base64").replace(/(.{64})/g, "$1\n").replace(/\n$/, "");
  return `-----BEGIN PRIVATE KEY-----\n${b64}\n-----END PRIVATE KEY-----\n`;
}

async function createCa(cn: string): Promise<Issuer & { pem: Pem }> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${cn}`,
    notBefore: new Date(Date.now() - DAY_MS),
    notAfter: new Date(Date.now() + 3650 * DAY_MS),
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert, keys, pem: { cert: cert.toString("pem") + "\n", key: await keyPem(keys) } };
}

interface LeafOptions {
  readonly cn: string;
  readonly usage: "server" | "client";
  /** DNS names and IP addresses (server certificates). */
  readonly dns?: readonly string[];
  readonly ips?: readonly string[];
  readonly notBefore?: Date;
  readonly notAfter?: Date;
}

async function createLeaf(issuer: Issuer, o: LeafOptions): Promise<Pem> {
  const keys = await newKeys();
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
    new x509.ExtendedKeyUsageExtension([o.usage === "server" ? x509.ExtendedKeyUsage.serverAuth : x509.ExtendedKeyUsage.clientAuth]),
    await x509.AuthorityKeyIdentifierExtension.create(issuer.keys.publicKey),
  ];
  const names = [...(o.dns ?? []).map((value) => ({ type: "dns" as const, value })), ...(o.ips ?? []).map((value) => ({ type: "ip" as const, value }))];
  if (names.length > 0) extensions.push(new x509.SubjectAlternativeNameExtension(names));
  const cert = await x509.X509CertificateGenerator.create({
    subject: `CN=${o.cn}`,
    issuer: issuer.cert.subject,
    notBefore: o.notBefore ?? new Date(Date.now() - DAY_MS),
    notAfter: o.notAfter ?? new Date(Date.now() + 825 * DAY_MS),
    publicKey: keys.publicKey,
    signingKey: issuer.keys.privateKey,
    signingAlgorithm: ALG,
    extensions,
  });
  return { cert: cert.toString("pem") + "\n", key: await keyPem(keys) };
}

const LOCAL = { dns: ["localhost"], ips: ["127.0.0.1", "::1"] };

/** Makes a fresh set of certificates (ECDSA P-256; about 50 ms). */
export async function createTestPki(): Promise<TestPki> {
  const ca = await createCa("openshell-config test CA");
  const other = await createCa("unrelated test CA");
  const [server, client, client2, expiredServer, wrongNameServer, otherClient, otherServer] = await Promise.all([
    createLeaf(ca, { cn: "127.0.0.1", usage: "server", ...LOCAL }),
    createLeaf(ca, { cn: "openshell-client", usage: "client" }),
    createLeaf(ca, { cn: "openshell-user", usage: "client" }),
    createLeaf(ca, { cn: "127.0.0.1", usage: "server", ...LOCAL, notBefore: new Date(Date.now() - 30 * DAY_MS), notAfter: new Date(Date.now() - DAY_MS) }),
    createLeaf(ca, { cn: "gateway.example.com", usage: "server", dns: ["gateway.example.com"] }),
    createLeaf(other, { cn: "openshell-client", usage: "client" }),
    createLeaf(other, { cn: "127.0.0.1", usage: "server", ...LOCAL }),
  ]);
  return { ca: ca.pem, server, client, client2, expiredServer, wrongNameServer, otherCa: other.pem, otherClient, otherServer };
}

/**
 * Writes an upstream mTLS client bundle (`ca.crt`, `tls.crt`, `tls.key`; the key 0600) into
 * `dir`, which is created 0700 when missing. Returns `dir`.
 */
export function writeMtlsBundle(dir: string, ca: Pem, client: Pem): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, "ca.crt"), ca.cert, { mode: 0o644 });
  writeFileSync(join(dir, "tls.crt"), client.cert, { mode: 0o644 });
  writeFileSync(join(dir, "tls.key"), client.key, { mode: 0o600 });
  chmodSync(join(dir, "tls.key"), 0o600);
  return dir;
}
