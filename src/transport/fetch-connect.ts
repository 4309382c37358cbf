// The Connect protocol over fetch, on its own so that a client created from a bare `baseUrl`
// does not pull the gRPC-Web implementation into browser bundles.

import { createConnectTransport } from "@connectrpc/connect-web";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { guardFetch } from "./guard-fetch.js";
import { tagBaseUrl } from "./base-url.js";

/** Options shared by the fetch-based transports. */
export interface FetchTransportOptions {
  readonly baseUrl: string;
  readonly fetch?: typeof globalThis.fetch | undefined;
  readonly interceptors?: Interceptor[] | undefined;
  /** The largest answer read, in bytes, already checked (createWebTransport). Default 64 MiB. */
  readonly readMaxBytes?: number | undefined;
}

/** The fields both fetch-based protocols take. */
export function fetchCommon(options: FetchTransportOptions) {
  return {
    baseUrl: options.baseUrl,
    interceptors: options.interceptors ?? [],
    // Late-bound: msw and polyfills replace globalThis.fetch after this module loads. The wrapper
    // makes an abort or a deadline end the call even where fetch loses it, and bounds what each
    // answer may hold, which connect-web does not (guard-fetch.ts).
    fetch: guardFetch(options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init)), options.readMaxBytes),
  };
}

/** Connect over fetch, binary by default. */
export function createFetchConnectTransport(options: FetchTransportOptions & { readonly binary?: boolean | undefined }): Transport {
  const transport = createConnectTransport({ ...fetchCommon(options), useBinaryFormat: options.binary ?? true });
  return tagBaseUrl(transport, options.baseUrl);
}
