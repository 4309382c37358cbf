// The Connect protocol over fetch, on its own so that a client created from a bare `baseUrl`
// does not pull the gRPC-Web implementation into browser bundles.

import { createConnectTransport } from "@connectrpc/connect-web";
import type { Interceptor, Transport } from "@connectrpc/connect";
import { withReliableAbort } from "./abortable-fetch.js";
import { tagBaseUrl } from "./base-url.js";

/** Options shared by the fetch-based transports. */
export interface FetchTransportOptions {
  readonly baseUrl: string;
  readonly fetch?: typeof globalThis.fetch | undefined;
  readonly interceptors?: Interceptor[] | undefined;
}

/** The fields both fetch-based protocols take. */
export function fetchCommon(options: FetchTransportOptions) {
  return {
    baseUrl: options.baseUrl,
    interceptors: options.interceptors ?? [],
    // Late-bound: msw and polyfills replace globalThis.fetch after this module loads. The wrapper
    // makes an abort or a deadline end the call even where fetch loses it (abortable-fetch.ts).
    fetch: withReliableAbort(options.fetch ?? ((input: RequestInfo | URL, init?: RequestInit) => globalThis.fetch(input, init))),
  };
}

/** Connect over fetch, binary by default. */
export function createFetchConnectTransport(options: FetchTransportOptions & { readonly binary?: boolean | undefined }): Transport {
  const transport = createConnectTransport({ ...fetchCommon(options), useBinaryFormat: options.binary ?? true });
  return tagBaseUrl(transport, options.baseUrl);
}
