// The provider's HTTP edge: the fetch handed to oauth4webapi, which marks every failure of the
// network (or of the caller's fetch) so that it can be told from a refusal, bounds each answer's
// body, and reads Retry-After.

import type { OidcFetch } from "./options.js";

/** The largest discovery document or token answer a provider reads. */
export const MAX_BODY_BYTES = 256 * 1024;

/** The request never got an answer: a network failure, a timeout, or the fetch itself threw. */
export class FetchFailure extends Error {
  /** True when the attempt's timeout ended it. */
  readonly timedOut: boolean;
  constructor(options: { cause: unknown }) {
    super("fetch failed", options);
    this.name = "FetchFailure";
    this.timedOut = (options.cause as { name?: unknown } | undefined)?.name === "TimeoutError";
  }
}

/** An answer's body was larger than MAX_BODY_BYTES. */
export class BodyTooLarge extends Error {
  constructor() {
    super(`the answer is larger than ${MAX_BODY_BYTES / 1024} KiB`);
    this.name = "BodyTooLarge";
  }
}

/** The first FetchFailure or BodyTooLarge in `err`'s cause chain. */
export function httpFailureIn(err: unknown): FetchFailure | BodyTooLarge | undefined {
  for (let e = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof FetchFailure || e instanceof BodyTooLarge) return e;
  }
  return undefined;
}

/** True when the issuer's answer says "try again later" rather than "no". */
export function isTransientStatus(status: number): boolean {
  return status >= 500 || status === 429 || status === 408;
}

/** Retry-After in milliseconds (delta-seconds or an HTTP date), when present and sane. */
export function retryAfterMs(response: Response, now = Date.now()): number | undefined {
  const value = response.headers.get("retry-after")?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The fetch given to oauth4webapi: calls `impl` (or the global fetch, looked up now so that a
 * test's interceptor is seen), turns a rejection into FetchFailure, refuses a declared length over
 * the bound and cuts a streamed body at it.
 */
export function boundedFetch(impl: OidcFetch | undefined): OidcFetch {
  return async (url, init) => {
    let response: Response;
    try {
      response = await (impl ?? globalThis.fetch)(url, init);
    } catch (cause) {
      throw new FetchFailure({ cause });
    }
    const declared = Number(response.headers.get("content-length") ?? "0");
    if (declared > MAX_BODY_BYTES) {
      await response.body?.cancel().catch(() => {});
      throw new BodyTooLarge();
    }
    if (response.body === null) return response;
    return new Response(limitBody(response.body), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}

function limitBody(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let size = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (cause) {
        controller.error(new FetchFailure({ cause }));
        return;
      }
      if (chunk.done) return controller.close();
      size += chunk.value.byteLength;
      if (size > MAX_BODY_BYTES) {
        controller.error(new BodyTooLarge());
        await reader.cancel().catch(() => {});
        return;
      }
      controller.enqueue(chunk.value);
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}
