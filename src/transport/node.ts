/**
 * The Node transport: gRPC (the default) or Connect or gRPC-Web, over HTTP/2 with node:http2, or
 * Connect and gRPC-Web over HTTP/1.1, in plain HTTP or TLS (with a CA of your own, mutual TLS, and
 * `readMtlsBundle` for an upstream client bundle). Server processes and command lines use this
 * one; browsers use `openshell-config/transport/web`. Pass the transport to
 * `createConfigClient({ transport })`.
 *
 * @module openshell-config/transport/node
 */

import {
  compressionGzip,
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { InvalidArgumentError } from "../errors.js";
import { tagBaseUrl } from "./base-url.js";
import { withLeanUnary } from "./grpc-unary.js";
import { readMaxBytesOf } from "./read-max-bytes.js";
import { readMtlsBundle } from "./tls-bundle.js";
import { installTlsClassifier } from "./tls-classify.js";
import { http2TlsOptions, httpsTlsOptions } from "./tls-connection.js";
import { INSECURE_WARNING_CODE, resolveTls, type NodeTlsOptions } from "./tls-options.js";

export { readMtlsBundle, INSECURE_WARNING_CODE };
export type { MtlsBundle, ReadMtlsBundleOptions } from "./tls-bundle.js";
export type { NodeTlsOptions, PemInput } from "./tls-options.js";

// Node's TLS errors become TlsError from here on (toSdkError asks the classifier installed here).
installTlsClassifier();

/** Options of `createNodeTransport`. */
export interface NodeTransportOptions {
  /** The gateway URL, e.g. `http://127.0.0.1:8080` or `https://gateway.example.com`. */
  readonly baseUrl: string;
  /** Wire protocol: `grpc` (default), `connect` or `grpc-web`. */
  readonly protocol?: "grpc" | "connect" | "grpc-web";
  /** HTTP version: `2` (default; required for gRPC) or `1.1` (Connect and gRPC-Web only). */
  readonly httpVersion?: "2" | "1.1";
  /** Compress requests and accept compressed responses (gzip). Off by default: configuration messages are small and latency matters more. */
  readonly compression?: boolean;
  /**
   * The largest answer message read, in bytes (1 to 4294967295): a larger one fails its call
   * ResourceExhausted as soon as its length is read, before it is buffered. Default 64 MiB.
   */
  readonly readMaxBytes?: number;
  /** Idle HTTP/2 connections are pinged and closed after this long. Default 5 min. */
  readonly idleConnectionTimeoutMs?: number;
  /**
   * Extra Connect interceptors. Without any (and without compression), unary gRPC calls are made
   * directly on the HTTP/2 connection, with the outcomes connect-node would give them, at about a
   * quarter of its CPU per call; with any, every call goes through connect.
   */
  readonly interceptors?: Interceptor[];
  /**
   * TLS settings for an `https://` baseUrl: a CA to trust besides the system roots, a client
   * certificate and key for mutual TLS, the server name, or no verification at all. Checked when
   * the transport is created. Every TLS failure of a call becomes a `TlsError` whose message says
   * what to do.
   *
   * @example
   * ```ts
   * import { createNodeTransport, readMtlsBundle } from "openshell-config/transport/node";
   *
   * const transport = createNodeTransport({
   *   baseUrl: "https://127.0.0.1:17670",
   *   tls: readMtlsBundle("/home/me/.config/openshell/gateways/openshell/mtls"), // ca.crt, tls.crt, tls.key
   * });
   * ```
   */
  readonly tls?: NodeTlsOptions;
}

/**
 * A Connect transport over node:http2 (or node:http for HTTP/1.1), for `createConfigClient`.
 *
 * @example
 * ```ts
 * import { homedir } from "node:os";
 * import { join } from "node:path";
 * import { createConfigClient } from "openshell-config";
 * import { createNodeTransport, readMtlsBundle } from "openshell-config/transport/node";
 *
 * const client = createConfigClient({
 *   transport: createNodeTransport({ baseUrl: "https://gateway.internal:8443" }), // gRPC over HTTP/2
 *   token: async () => process.env.OPENSHELL_TOKEN!, // called before every request
 * });
 *
 * // Connect over HTTP/1.1, e.g. through a proxy that speaks no HTTP/2:
 * const viaProxy = createNodeTransport({ baseUrl: "http://127.0.0.1:8080", protocol: "connect", httpVersion: "1.1" });
 *
 * // A stock OpenShell install: mutual TLS on loopback, with the client bundle it wrote.
 * const local = createNodeTransport({
 *   baseUrl: "https://127.0.0.1:17670",
 *   tls: readMtlsBundle(join(homedir(), ".config/openshell/gateways/openshell/mtls")),
 * });
 * ```
 *
 * @throws InvalidArgumentError when the baseUrl is not a URL, `tls` is given for http://, or
 *   `tls.cert` comes without `tls.key` (or the reverse); TlsError `"key-mismatch"` when the key is
 *   not the certificate's.
 */
export function createNodeTransport(options: NodeTransportOptions): Transport {
  let url: URL;
  try {
    url = new URL(options.baseUrl);
  } catch {
    throw new InvalidArgumentError(`baseUrl is not an absolute URL: ${JSON.stringify(options.baseUrl)}`, { field: "baseUrl" });
  }
  const readMaxBytes = readMaxBytesOf(options.readMaxBytes);
  const tls = resolveTls(url, options.tls);
  installTlsClassifier(); // again: a bundler may have dropped the module's top-level call
  const protocol = options.protocol ?? "grpc";
  const httpVersion = protocol === "grpc" ? "2" : (options.httpVersion ?? "2");
  const base = {
    baseUrl: options.baseUrl,
    readMaxBytes,
    interceptors: options.interceptors ?? [],
    // Without this, responses of 1 KiB and more come back gzipped: CPU for nothing on a LAN.
    ...(options.compression ? { sendCompression: compressionGzip } : { acceptCompression: [] }),
  };
  const h2 = {
    idleConnectionTimeoutMs: options.idleConnectionTimeoutMs ?? 300_000,
    pingIntervalMs: 30_000,
    ...(tls ? { nodeOptions: http2TlsOptions(tls) } : {}),
  };
  let transport: Transport;
  if (protocol === "grpc") {
    // One session manager for both paths, so that unary calls made below connect (grpc-unary.ts)
    // and connect's streaming calls share one HTTP/2 connection, its pings and its idle close.
    const sessionManager = new Http2SessionManager(
      options.baseUrl,
      { pingIntervalMs: h2.pingIntervalMs, idleConnectionTimeoutMs: h2.idleConnectionTimeoutMs },
      h2.nodeOptions,
    );
    transport = createGrpcTransport({ ...base, ...h2, sessionManager });
    // Interceptors and compression are connect's to apply: such a transport stays connect's whole.
    if (!options.compression && base.interceptors.length === 0) {
      transport = withLeanUnary(transport, { baseUrl: options.baseUrl, sessionManager, readMaxBytes });
    }
  } else {
    const http =
      httpVersion === "2"
        ? { httpVersion: "2" as const, ...h2 }
        : { httpVersion: "1.1" as const, ...(tls ? { nodeOptions: httpsTlsOptions(tls) } : {}) };
    transport =
      protocol === "grpc-web"
        ? createGrpcWebTransport({ ...base, ...http, useBinaryFormat: true })
        : createConnectTransport({ ...base, ...http, useBinaryFormat: true });
  }
  return tagBaseUrl(transport, options.baseUrl);
}
