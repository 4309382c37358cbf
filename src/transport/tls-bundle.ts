// Reads an upstream OpenShell mTLS client bundle (a directory holding ca.crt, tls.crt and tls.key,
// as the openshell CLI and the gateway's installer write it) into createNodeTransport's `tls`
// options. Every failure names the file. Node only; imported by transport/node.ts alone.

import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import { join, resolve } from "node:path";
import { TlsError } from "../errors.js";

/** The files of a bundle, read; also usable as is as `createNodeTransport`'s `tls`. */
export interface MtlsBundle {
  /** `ca.crt`: the CA that signed the gateway's certificate. */
  readonly ca?: Buffer;
  /** `tls.crt`: the client certificate. */
  readonly cert?: Buffer;
  /** `tls.key`: the client certificate's private key. */
  readonly key?: Buffer;
  /** The absolute paths of the three files, whether they were there or not. */
  readonly files: {
    /** `<dir>/ca.crt`. */
    readonly ca: string;
    /** `<dir>/tls.crt`. */
    readonly cert: string;
    /** `<dir>/tls.key`. */
    readonly key: string;
  };
}

/** Options of `readMtlsBundle`. */
export interface ReadMtlsBundleOptions {
  /**
   * Missing files are left out instead of failing (a gateway that takes OIDC tokens presents the
   * bundle only when there is one). A client certificate without its key, or the reverse, still
   * fails: one is no use without the other.
   */
  readonly optional?: boolean;
}

/** A bundle file larger than this is not a certificate or key (a CA bundle of 1,000 roots is ~250 kB). */
export const MAX_BUNDLE_FILE_BYTES = 1024 * 1024;

const FILES = [
  { field: "ca", what: "mTLS CA certificate", pem: "certificate" },
  { field: "cert", what: "mTLS client certificate", pem: "certificate" },
  { field: "key", what: "mTLS client key", pem: "private key" },
] as const;

/**
 * Reads the mTLS bundle in `dir` (`ca.crt`, `tls.crt`, `tls.key`, PEM) for
 * `createNodeTransport({ tls })`. All three are required unless `optional` is set. Throws
 * `TlsError` with reason `"bundle"` and `file` set when a file is missing (`no mTLS client key at
 * /abs/path/tls.key`), unreadable, larger than 1 MiB or not PEM. A key that is not the
 * certificate's is found when the transport is created (TlsError `"key-mismatch"`).
 *
 * @example
 * ```ts
 * import { homedir } from "node:os";
 * import { join } from "node:path";
 * import { createConfigClient } from "openshell-config";
 * import { createNodeTransport, readMtlsBundle } from "openshell-config/transport/node";
 *
 * // A stock OpenShell install: the gateway on loopback, mutual TLS with the bundle it wrote.
 * const client = createConfigClient({
 *   transport: createNodeTransport({
 *     baseUrl: "https://127.0.0.1:17670",
 *     tls: readMtlsBundle(join(homedir(), ".config/openshell/gateways/openshell/mtls")),
 *   }),
 * });
 * ```
 */
export function readMtlsBundle(dir: string, options: ReadMtlsBundleOptions = {}): MtlsBundle {
  const base = resolve(dir);
  const files = { ca: join(base, "ca.crt"), cert: join(base, "tls.crt"), key: join(base, "tls.key") };
  const read: { ca?: Buffer; cert?: Buffer; key?: Buffer } = {};
  for (const f of FILES) {
    const path = files[f.field];
    const bytes = readBounded(path);
    if (bytes === undefined) {
      if (!options.optional) throw bundleError(`no ${f.what} at ${path}`, path);
      continue;
    }
    const marker = f.pem === "certificate" ? /-----BEGIN CERTIFICATE-----/ : /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----/;
    if (!marker.test(bytes.toString("latin1"))) throw bundleError(`${path} is not a PEM ${f.pem}`, path);
    read[f.field] = bytes;
  }
  // Optional: a missing CA means the system roots, but a certificate without its key is no use.
  if (read.cert !== undefined && read.key === undefined) throw bundleError(`no mTLS client key at ${files.key}`, files.key);
  if (read.key !== undefined && read.cert === undefined) throw bundleError(`no mTLS client certificate at ${files.cert}`, files.cert);
  return { ...read, files };
}

// The file's bytes, or undefined when it does not exist. Refuses what is not a regular file (a
// FIFO would block, a device never end) and anything over MAX_BUNDLE_FILE_BYTES.
function readBounded(path: string): Buffer | undefined {
  let fd: number;
  try {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    if ((err as { code?: unknown }).code === "ENOENT") return undefined;
    throw bundleError(`cannot read ${path}: ${reasonOf(err)}`, path, err);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw bundleError(`cannot read ${path}: not a regular file`, path);
    if (stat.size > MAX_BUNDLE_FILE_BYTES) throw bundleError(`${path} is larger than 1 MiB: not a certificate or key`, path);
    const buf = Buffer.alloc(stat.size);
    let n = 0;
    while (n < buf.length) {
      const got = readSync(fd, buf, n, buf.length - n, n);
      if (got === 0) break;
      n += got;
    }
    return buf.subarray(0, n);
  } catch (err) {
    if (err instanceof TlsError) throw err;
    throw bundleError(`cannot read ${path}: ${reasonOf(err)}`, path, err);
  } finally {
    closeSync(fd);
  }
}

// "EACCES: permission denied, open '/x/tls.key'" → "EACCES: permission denied" (the path is said already).
function reasonOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.replace(/, \w+ '.*'$/, "");
}

function bundleError(message: string, file: string, cause?: unknown): TlsError {
  return new TlsError(message, { reason: "bundle", file, ...(cause !== undefined ? { cause } : {}) });
}
