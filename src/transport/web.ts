// The browser transport: Connect (or gRPC-Web) over fetch. Also runs in Node, Deno and Bun, where
// fetch exists, over HTTP/1.1.

import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { tagBaseUrl } from "./base-url.js";

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
  const common = {
    baseUrl: options.baseUrl,
    interceptors: options.interceptors ?? [],
    // Late-bound: msw and polyfills replace globalThis.fetch after this module loads.
    fetch: options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init)),
  };
  const transport =
    options.protocol === "grpc-web"
      ? createGrpcWebTransport({ ...common, useBinaryFormat: true })
      : createConnectTransport({ ...common, useBinaryFormat: options.binary ?? true });
  return tagBaseUrl(transport, options.baseUrl);
}
