// Remembers which base URL a transport made by this package talks to, so the client can refuse
// to send a token over plain http even when it is handed a ready-made transport.

import type { Transport } from "@connectrpc/connect";

const BASE_URL = Symbol.for("openshell-config.transport.baseUrl");

/** Tags `transport` with its base URL and returns it. */
export function tagBaseUrl<T extends Transport>(transport: T, baseUrl: string): T {
  Object.defineProperty(transport, BASE_URL, { value: baseUrl, enumerable: false });
  return transport;
}

/** The base URL a transport was tagged with, if any. */
export function baseUrlOf(transport: Transport): string | undefined {
  return (transport as { [BASE_URL]?: string })[BASE_URL];
}
