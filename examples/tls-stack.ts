// What the local stack (local-stack.ts) needs to run on TLS: its certificates under `<dir>/tls/`,
// kept across starts while they are sound and far from expiry; the upstream gateway registry
// entry a client finds it by (UPSTREAM.md §8: `gateways/<name>/metadata.json` and the mTLS client
// bundle); and health checks over https that trust the stack's own CA.
//
// The certificates come from examples/tls/pki.ts: a test CA, nothing for production. The CA's
// private key is not written anywhere: nothing here signs again, a new set replaces the old.

import { createPrivateKey, randomBytes, X509Certificate } from "node:crypto";
import { chmodSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import * as https from "node:https";
import * as tls from "node:tls";
import { join } from "node:path";
import { createTestPki, type Pem } from "./tls/pki.js";

/** The registry name the stack's gateway is written under: never `openshell`, which a stock install's user entry would shadow. */
export const LOCAL_GATEWAY_NAME = "openshell-local";

/** Certificates are replaced when one of them expires within this long. */
const RENEW_BEFORE_MS = 30 * 86_400_000;

/** The stack's certificates: PEM contents and the files they are in. */
export interface StackCertificates {
  readonly ca: string;
  readonly server: Pem;
  readonly client: Pem;
  readonly files: {
    readonly dir: string;
    readonly ca: string;
    readonly serverCert: string;
    readonly serverKey: string;
    readonly clientCert: string;
    readonly clientKey: string;
  };
  /** False when the files on disk were sound and kept. */
  readonly created: boolean;
}

/** What a client of a TLS stack presents and trusts (PEM strings; `cert`/`key` only for mutual TLS). */
export interface ClientTls {
  readonly ca: string;
  readonly cert?: string;
  readonly key?: string;
}

/**
 * Writes `data` to `path` through a fresh file of mode `mode` renamed over it: a reader never sees
 * half a key, and a key never sits in a file with looser permissions, not even for a moment.
 */
export function writeFileAtomic(path: string, data: string, mode: number): void {
  const tmp = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    writeFileSync(tmp, data, { mode, flag: "wx" });
    chmodSync(tmp, mode); // the umask may have narrowed it; it never widens it
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** A directory that exists with exactly `mode` (mkdir's mode applies only to new ones, through the umask). */
function privateDir(dir: string, mode = 0o700): void {
  mkdirSync(dir, { recursive: true, mode });
  chmodSync(dir, mode);
}

function paths(dir: string): StackCertificates["files"] {
  return {
    dir,
    ca: join(dir, "ca.crt"),
    serverCert: join(dir, "server.crt"),
    serverKey: join(dir, "server.key"),
    clientCert: join(dir, "client.crt"),
    clientKey: join(dir, "client.key"),
  };
}

/** The certificates in `files` when they can be used as they are; otherwise undefined (the reason does not matter: a new set is made). */
function readSound(files: StackCertificates["files"], now: number): Omit<StackCertificates, "files" | "created"> | undefined {
  try {
    const read = (p: string) => readFileSync(p, "utf8");
    const pem = { ca: read(files.ca), server: { cert: read(files.serverCert), key: read(files.serverKey) }, client: { cert: read(files.clientCert), key: read(files.clientKey) } };
    const ca = new X509Certificate(pem.ca);
    const server = new X509Certificate(pem.server.cert);
    const client = new X509Certificate(pem.client.cert);
    const fresh = (c: X509Certificate) => Date.parse(c.validFrom) <= now && Date.parse(c.validTo) - now > RENEW_BEFORE_MS;
    const ok =
      ca.ca &&
      [ca, server, client].every(fresh) &&
      [server, client].every((c) => c.checkIssued(ca) && c.verify(ca.publicKey)) &&
      server.checkIP("127.0.0.1") !== undefined &&
      server.checkPrivateKey(createPrivateKey(pem.server.key)) &&
      client.checkPrivateKey(createPrivateKey(pem.client.key));
    return ok ? pem : undefined;
  } catch {
    return undefined; // missing, unreadable or not PEM
  }
}

/**
 * The stack's certificates in `dir` (mode 0700): the ones there when they are sound (each readable,
 * issued by the CA, valid now and for 30 more days, keys matching), else a new set written over
 * them (keys 0600).
 */
export async function ensureStackCertificates(dir: string, now = Date.now()): Promise<StackCertificates> {
  privateDir(dir);
  const files = paths(dir);
  const kept = readSound(files, now);
  if (kept) return { ...kept, files, created: false };
  const pki = await createTestPki();
  writeFileAtomic(files.ca, pki.ca.cert, 0o644);
  writeFileAtomic(files.serverCert, pki.server.cert, 0o644);
  writeFileAtomic(files.serverKey, pki.server.key, 0o600);
  writeFileAtomic(files.clientCert, pki.client.cert, 0o644);
  writeFileAtomic(files.clientKey, pki.client.key, 0o600);
  return { ca: pki.ca.cert, server: pki.server, client: pki.client, files, created: true };
}

/** An entry of the upstream gateway registry, as written. */
export interface RegistryEntry {
  /** The registry root: `OPENSHELL_SYSTEM_GATEWAY_DIR`. */
  readonly dir: string;
  /** The gateway's name in it: `OPENSHELL_GATEWAY`. */
  readonly name: string;
  readonly metadataFile: string;
  /** `ca.crt`, `tls.crt`, `tls.key`. */
  readonly bundleDir: string;
}

/**
 * Writes `<dir>/gateways/<name>/metadata.json` and the client bundle `<dir>/gateways/<name>/mtls/`
 * (UPSTREAM.md §8) for a local mutual-TLS gateway at `endpoint`.
 */
export function writeLocalRegistry(dir: string, entry: { readonly name: string; readonly endpoint: string; readonly ca: string; readonly client: Pem }): RegistryEntry {
  const url = new URL(entry.endpoint);
  const gatewayDir = join(dir, "gateways", entry.name);
  const bundleDir = join(gatewayDir, "mtls");
  mkdirSync(join(dir, "gateways"), { recursive: true });
  privateDir(gatewayDir);
  privateDir(bundleDir);
  writeFileAtomic(join(bundleDir, "ca.crt"), entry.ca, 0o644);
  writeFileAtomic(join(bundleDir, "tls.crt"), entry.client.cert, 0o644);
  writeFileAtomic(join(bundleDir, "tls.key"), entry.client.key, 0o600);
  const metadataFile = join(gatewayDir, "metadata.json");
  const metadata = { name: entry.name, gateway_endpoint: entry.endpoint, is_remote: false, gateway_port: Number(url.port), auth_mode: "mtls" };
  writeFileAtomic(metadataFile, `${JSON.stringify(metadata, null, 2)}\n`, 0o644);
  return { dir, name: entry.name, metadataFile, bundleDir };
}

/** True when `GET <url>/healthz` answers 2xx over https, the server verified against `client.ca` (and the client certificate presented, when given). */
export function httpsHealthy(url: string, client: ClientTls, timeoutMs = 2_000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = https.get(`${url}/healthz`, { ca: client.ca, cert: client.cert, key: client.key, agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300);
    });
    req.once("timeout", () => req.destroy());
    req.once("error", () => resolve(false));
  });
}

/** True once a TLS handshake with 127.0.0.1:`port` succeeds, the server verified against `ca` (the sandbox listener may serve nothing but RPCs). */
export function tlsListening(port: number, ca: string, timeoutMs = 2_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: "127.0.0.1", port, ca, ALPNProtocols: ["h2", "http/1.1"], timeout: timeoutMs }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("timeout", () => socket.destroy());
    socket.once("error", () => resolve(false));
    socket.once("close", () => resolve(false));
  });
}

/** `s` as one word for a POSIX shell. */
function shellWord(s: string): string {
  return /^[\w/.,:@%+=-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

/** The line that points the `openshell` CLI's environment (and ours) at `entry`: `export OPENSHELL_SYSTEM_GATEWAY_DIR=… OPENSHELL_GATEWAY=…`. */
export function registryExportLine(entry: RegistryEntry): string {
  return `export OPENSHELL_SYSTEM_GATEWAY_DIR=${shellWord(entry.dir)} OPENSHELL_GATEWAY=${shellWord(entry.name)}`;
}
