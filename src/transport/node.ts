/**
 * The Node transport: gRPC (the default) or Connect or gRPC-Web, over HTTP/2 with node:http2, or
 * Connect and gRPC-Web over HTTP/1.1. Server processes and command lines use this one; browsers
 * use `openshell-config/transport/web`. Pass the transport to `createConfigClient({ transport })`.
 *
 * @module openshell-config/transport/node
 */

import {
  compressionGzip,
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
} from "@connectrpc/connect-node";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { tagBaseUrl } from "./base-url.js";

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
  /** Idle HTTP/2 connections are pinged and closed after this long. Default 5 min. */
  readonly idleConnectionTimeoutMs?: number;
  /** Extra Connect interceptors. */
  readonly interceptors?: Interceptor[];
}

/**
 * A Connect transport over node:http2 (or node:http for HTTP/1.1), for `createConfigClient`.
 *
 * @example
 * ```ts
 * import { createConfigClient } from "openshell-config";
 * import { createNodeTransport } from "openshell-config/transport/node";
 *
 * const client = createConfigClient({
 *   transport: createNodeTransport({ baseUrl: "https://gateway.internal:8443" }), // gRPC over HTTP/2
 *   token: async () => process.env.OPENSHELL_TOKEN!, // called before every request
 * });
 *
 * // Connect over HTTP/1.1, e.g. through a proxy that speaks no HTTP/2:
 * const viaProxy = createNodeTransport({ baseUrl: "http://127.0.0.1:8080", protocol: "connect", httpVersion: "1.1" });
 * ```
 */
export function createNodeTransport(options: NodeTransportOptions): Transport {
  const protocol = options.protocol ?? "grpc";
  const httpVersion = protocol === "grpc" ? "2" : (options.httpVersion ?? "2");
  const base = {
    baseUrl: options.baseUrl,
    interceptors: options.interceptors ?? [],
    // Without this, responses of 1 KiB and more come back gzipped: CPU for nothing on a LAN.
    ...(options.compression ? { sendCompression: compressionGzip } : { acceptCompression: [] }),
  };
  const h2 = {
    idleConnectionTimeoutMs: options.idleConnectionTimeoutMs ?? 300_000,
    pingIntervalMs: 30_000,
  };
  let transport: Transport;
  if (protocol === "grpc") {
    transport = createGrpcTransport({ ...base, ...h2 });
  } else {
    const http = httpVersion === "2" ? { httpVersion: "2" as const, ...h2 } : { httpVersion: "1.1" as const };
    transport =
      protocol === "grpc-web"
        ? createGrpcWebTransport({ ...base, ...http, useBinaryFormat: true })
        : createConnectTransport({ ...base, ...http, useBinaryFormat: true });
  }
  return tagBaseUrl(transport, options.baseUrl);
}
