// createNodeTransport's `tls` options, checked when the transport is created: the certificate and
// key belong together and match, the CA list keeps the system roots, and the name checked is the
// one asked for. The result is one secure context per transport, reused by every connection.
// Node only; imported by transport/node.ts alone.

import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import * as tls from "node:tls";
import { InvalidArgumentError, TlsError } from "../errors.js";

/** A PEM text, as a string or the bytes of a file. */
export type PemInput = string | Buffer;

/**
 * TLS settings of `createNodeTransport`, for an `https://` baseUrl. Certificates and keys are PEM
 * (strings or Buffers, e.g. from `readFileSync`, or `readMtlsBundle(dir)` for an upstream bundle).
 *
 * @example
 * ```ts
 * import { readFileSync } from "node:fs";
 * import { createNodeTransport } from "openshell-config/transport/node";
 *
 * // A gateway whose certificate comes from a private CA, with mutual TLS:
 * const transport = createNodeTransport({
 *   baseUrl: "https://gateway.internal:8443",
 *   tls: {
 *     ca: readFileSync("/etc/openshell/ca.crt"), // trusted besides the system roots
 *     cert: readFileSync("/etc/openshell/tls.crt"),
 *     key: readFileSync("/etc/openshell/tls.key"),
 *   },
 * });
 * ```
 */
export interface NodeTlsOptions {
  /**
   * CA certificates that may sign the gateway's certificate, trusted in addition to the system
   * roots (Node's own `ca` option would replace them). One PEM may hold several certificates.
   */
  readonly ca?: PemInput | readonly PemInput[];
  /** The client certificate (PEM) for mutual TLS; requires `key`. */
  readonly cert?: PemInput;
  /** The client certificate's private key (PEM, unencrypted); requires `cert`. */
  readonly key?: PemInput;
  /**
   * The name sent as SNI and checked against the gateway's certificate. Default: the baseUrl's
   * host. An IP address is checked but not sent (TLS carries only host names in SNI).
   */
  readonly serverName?: string;
  /**
   * Accept any certificate the gateway presents: no CA check, no name check. Anyone on the network
   * path can then impersonate the gateway and read the token. For a throwaway local gateway only;
   * the process gets a warning (code `OPENSHELL_TLS_INSECURE`) the first time.
   */
  readonly insecureSkipVerify?: boolean;
  /** Where `ca`, `cert` and `key` were read from, named in errors; `readMtlsBundle` fills it in. */
  readonly files?: {
    /** The file `ca` came from. */
    readonly ca?: string;
    /** The file `cert` came from. */
    readonly cert?: string;
    /** The file `key` came from. */
    readonly key?: string;
  };
}

/** What every TLS connection of one transport is opened with. */
export interface TlsSettings {
  readonly secureContext: tls.SecureContext;
  readonly rejectUnauthorized: boolean;
  /** SNI: the name checked, unless it is an IP address. */
  readonly servername: string | undefined;
  readonly checkServerIdentity: (host: string, cert: tls.PeerCertificate) => Error | undefined;
  /** A client certificate is configured (the error mapping tells "required" from other handshake failures by it). */
  readonly clientCertificate: boolean;
}

/** The code of the warning `insecureSkipVerify` emits, once per process. */
export const INSECURE_WARNING_CODE = "OPENSHELL_TLS_INSECURE";
// On the process object, so that two copies of this package (ESM and CJS builds) warn once between them.
const WARNED = Symbol.for("openshell-config.tls.insecureWarned");

/**
 * The TLS settings for `url`, or undefined for http:// (where any TLS option is an
 * InvalidArgumentError: it would silently do nothing). Throws TlsError "key-mismatch" when the
 * key is not the certificate's.
 */
export function resolveTls(url: URL, options: NodeTlsOptions | undefined): TlsSettings | undefined {
  if (url.protocol !== "https:") {
    const o = options ?? {};
    if (o.ca !== undefined || o.cert !== undefined || o.key !== undefined || o.serverName !== undefined || o.insecureSkipVerify) {
      throw new InvalidArgumentError(`tls options need an https:// baseUrl, not ${url.protocol}//${url.host}`, { field: "tls" });
    }
    return undefined;
  }
  const o = options ?? {};
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const name = o.serverName ?? host;
  if (typeof name !== "string" || !/^[^\s/]+$/.test(name)) {
    throw new InvalidArgumentError("tls.serverName must be a host name or IP address", { field: "tls.serverName" });
  }
  if ((o.cert === undefined) !== (o.key === undefined)) {
    const missing = o.cert === undefined ? "cert" : "key";
    const other = missing === "cert" ? "key" : "cert";
    throw new InvalidArgumentError(`tls.${missing} is required with tls.${other}: a client certificate needs its key`, {
      field: `tls.${missing}`,
    });
  }
  const ca = o.ca === undefined ? undefined : caList(o.ca);
  if (o.cert !== undefined && o.key !== undefined) assertKeyMatches(o.cert, o.key, o.files);
  let secureContext: tls.SecureContext;
  try {
    secureContext = tls.createSecureContext({
      ...(ca === undefined ? {} : { ca: trustedCas(ca) }),
      ...(o.cert === undefined ? {} : { cert: o.cert, key: o.key }),
    });
  } catch (err) {
    if ((err as { code?: unknown }).code === "ERR_OSSL_X509_KEY_VALUES_MISMATCH") throw keyMismatch(o.files, err);
    throw new InvalidArgumentError(`the tls options cannot be used: ${(err as Error).message}`, { field: "tls", cause: err });
  }
  if (o.insecureSkipVerify === true) warnInsecure(url.host);
  return {
    secureContext,
    rejectUnauthorized: o.insecureSkipVerify !== true,
    servername: isIP(name) === 0 ? name : undefined,
    checkServerIdentity: (_host, cert) => tls.checkServerIdentity(name, cert),
    clientCertificate: o.cert !== undefined,
  };
}

/**
 * The system roots followed by `extra`. The roots are Node's default store: on Node 22.15 and
 * later exactly that (`tls.getCACertificates("default")`), before it the bundled Mozilla roots
 * plus the file NODE_EXTRA_CA_CERTS names.
 */
export function trustedCas(extra: readonly PemInput[]): PemInput[] {
  return [...systemRoots(), ...extra];
}

let roots: readonly string[] | undefined;
function systemRoots(): readonly string[] {
  if (roots !== undefined) return roots;
  const get = (tls as { getCACertificates?: (type: "default") => string[] }).getCACertificates;
  if (typeof get === "function") return (roots = get("default"));
  let extra: string[] = [];
  const file = process.env.NODE_EXTRA_CA_CERTS;
  if (file) {
    try {
      extra = [readFileSync(file, "utf8")];
    } catch {
      // Node itself warned about this file when the process started.
    }
  }
  return (roots = [...tls.rootCertificates, ...extra]);
}

function caList(ca: PemInput | readonly PemInput[]): PemInput[] {
  const list: PemInput[] = typeof ca === "string" || Buffer.isBuffer(ca) ? [ca] : [...(ca as readonly PemInput[])];
  for (const pem of list) {
    if (!pemHolds(pem, /-----BEGIN CERTIFICATE-----/)) {
      throw new InvalidArgumentError("tls.ca is not a PEM certificate (-----BEGIN CERTIFICATE-----)", { field: "tls.ca" });
    }
  }
  return list;
}

function assertKeyMatches(cert: PemInput, key: PemInput, files: NodeTlsOptions["files"]): void {
  let x509: X509Certificate;
  let privateKey: KeyObject;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw new InvalidArgumentError(`tls.cert is not a PEM certificate (${(err as Error).message})`, { field: "tls.cert", cause: err });
  }
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw new InvalidArgumentError(`tls.key is not a usable PEM private key (${(err as Error).message})`, { field: "tls.key", cause: err });
  }
  if (privateKey.type !== "private" || !x509.checkPrivateKey(privateKey)) throw keyMismatch(files, undefined);
}

function keyMismatch(files: NodeTlsOptions["files"], cause: unknown): TlsError {
  const which = files?.key !== undefined && files.cert !== undefined ? `${files.key} is not the key of ${files.cert}` : "tls.key is not the key of tls.cert";
  return new TlsError(`the client key does not match the client certificate (${which}): pass the key issued with that certificate`, {
    reason: "key-mismatch",
    ...(files?.key !== undefined ? { file: files.key } : {}),
    ...(cause !== undefined ? { cause } : {}),
  });
}

function pemHolds(pem: PemInput, marker: RegExp): boolean {
  return marker.test(typeof pem === "string" ? pem : pem.toString("latin1"));
}

function warnInsecure(host: string): void {
  const flags = process as unknown as Record<symbol, boolean | undefined>;
  if (flags[WARNED]) return;
  flags[WARNED] = true;
  process.emitWarning(
    `TLS certificate verification is off for ${host} (tls.insecureSkipVerify): anyone on the network path can impersonate the gateway and read what is sent to it`,
    { code: INSECURE_WARNING_CODE, type: "SecurityWarning" },
  );
}
