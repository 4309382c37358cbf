// The browser transport: Connect (or gRPC-Web) over fetch. Also runs in Node, Deno and Bun, where
// fetch exists, over HTTP/1.1.

import { createGrpcWebTransport } from "@connectrpc/connect-web";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { tagBaseUrl } from "./base-url.js";
import { createFetchConnectTransport, fetchCommon } from "./fetch-connect.js";

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
}

/** A Connect transport over fetch. */
export function createWebTransport(options: WebTransportOptions): Transport {
  if (options.protocol !== "grpc-web") return createFetchConnectTransport(options);
  return tagBaseUrl(createGrpcWebTransport({ ...fetchCommon(options), useBinaryFormat: true }), options.baseUrl);
}
