/**
 * The browser transport: Connect (the default, binary or JSON) or gRPC-Web, over fetch. Also runs
 * in Node, Deno and Bun, where fetch exists, over HTTP/1.1. `createConfigClient({ baseUrl })`
 * without a transport already uses Connect over fetch; this entry point chooses gRPC-Web or JSON,
 * or a fetch of your own.
 *
 * @module openshell-config/transport/web
 */

import { createGrpcWebTransport } from "@connectrpc/connect-web";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { tagBaseUrl } from "./base-url.js";
import { createFetchConnectTransport, fetchCommon } from "./fetch-connect.js";
import { readMaxBytesOf } from "./read-max-bytes.js";

/** Options of `createWebTransport`. */
export interface WebTransportOptions {
  /** The gateway URL, e.g. `https://gateway.example.com` or `/api` behind the dashboard's origin. */
  readonly baseUrl: string;
  /** `connect` (default) or `grpc-web`. */
  readonly protocol?: "connect" | "grpc-web";
  /** Send protobuf binary instead of JSON (Connect protocol only; gRPC-Web is always binary). Default true. */
  readonly binary?: boolean;
  /** A fetch implementation (tests, proxies). Default: `globalThis.fetch`. */
  readonly fetch?: typeof globalThis.fetch;
  /** Extra Connect interceptors. */
  readonly interceptors?: Interceptor[];
  /**
   * The largest answer read, in bytes (1 to 4294967295): a unary answer in all, one message of a
   * stream (an operations watch reads on for hours). A larger one fails its call
   * ResourceExhausted. Default 64 MiB.
   */
  readonly readMaxBytes?: number;
}

/**
 * A Connect transport over fetch, for `createConfigClient`.
 *
 * @example
 * ```ts
 * import { createConfigClient } from "openshell-config";
 * import { createWebTransport } from "openshell-config/transport/web";
 *
 * // gRPC-Web, for a proxy that passes only gRPC-Web; the gateway must allow the page's origin (CORS).
 * const client = createConfigClient({ transport: createWebTransport({ baseUrl: "/api", protocol: "grpc-web" }) });
 *
 * // Connect with JSON bodies, readable in the browser's network panel:
 * const readable = createWebTransport({ baseUrl: "https://gateway.example.com", binary: false });
 * ```
 *
 * @throws InvalidArgumentError when `readMaxBytes` is not a whole number from 1 to 4294967295.
 */
export function createWebTransport(options: WebTransportOptions): Transport {
  const checked = { ...options, readMaxBytes: readMaxBytesOf(options.readMaxBytes) };
  if (options.protocol !== "grpc-web") return createFetchConnectTransport(checked);
  return tagBaseUrl(createGrpcWebTransport({ ...fetchCommon(checked), useBinaryFormat: true }), options.baseUrl);
}
