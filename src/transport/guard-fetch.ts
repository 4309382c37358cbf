// fetch whose answers are safe to read: an abort always ends the call, and no answer is read past
// a bound.
//
// The abort. Node 20's fetch (undici 6) follows the caller's signal only through a weak reference
// to the Request it builds inside fetch(); once that Request has been garbage-collected (nothing
// keeps it after the headers arrive), an abort or a deadline is lost: a server stream, an
// operations watch say, reads on until the server ends it, and its connection stays open.
// (Before the headers, the pending fetch keeps its Request, and an abort works.) So the
// response's body is wrapped in a stream that the signal's own listener errors, and the
// underlying body is cancelled, which closes the connection. In browsers this only adds a thin
// stream around the body.
//
// The bound. connect-web reads a Connect unary answer whole with arrayBuffer() and never looks at
// readMaxBytes, so a hostile or broken gateway could fill the caller's memory. The wrapper counts
// what it passes on: a unary body (and an error's JSON) may hold READ_MAX_BYTES in all, a stream
// (Connect or gRPC-Web envelopes, which a watch receives for hours) that much per envelope, judged
// from the envelope's length prefix before its body is read. Past it, the call fails
// ResourceExhausted, as the Node transport's readMaxBytes does, and the body is cancelled. The
// bytes counted are those fetch hands over, after any Content-Encoding is undone.

import { Code, ConnectError } from "@connectrpc/connect";
import { READ_MAX_BYTES } from "./read-max-bytes.js";

type Fetch = typeof globalThis.fetch;

/** Statuses whose responses cannot carry a body (`new Response` refuses one; 101 and 103 never reach a Response). */
const NULL_BODY = new Set([204, 205, 304]);

/** `fetch`, with `init.signal` applied to the response's body by this wrapper too, and its answers bounded by `max` bytes. */
export function guardFetch(fetch: Fetch, max = READ_MAX_BYTES): Fetch {
  return async (input, init) => {
    const signal = init?.signal;
    const res = await fetch(input, init);
    // A body that is not a web stream (a fetch of the caller's own, node-fetch say) is left as it
    // is. The reason phrase is not carried over: Connect does not read it, and one that is not
    // Latin-1 would make the Response constructor throw.
    const body = res.body as ReadableStream<Uint8Array> | null | undefined;
    if (!body || typeof body.getReader !== "function" || NULL_BODY.has(res.status)) return res;
    const init2 = { status: res.status, headers: res.headers };
    const type = (headers: HeadersInit | undefined) => new Headers(headers).get("content-type") ?? "";
    // A stream's answer, and every gRPC-Web answer, is read envelope by envelope: judged by the
    // request, since connect-web's gRPC-Web client reads envelopes whatever the answer's type.
    // A Connect unary answer connect-web does not read (a wrong type, an HTML error page: the call
    // fails from its status) goes the same way, unread. One it reads whole (the answer, or an
    // error's JSON) is read here instead, where the guard's error surfaces as it is: a browser's
    // arrayBuffer() would turn it into "Failed to fetch" (Chromium does). One whose
    // Content-Length is too large is refused before any of it is read.
    if (/^application\/(connect\+|grpc-web)/i.test(type(init?.headers)) || !/^application\/(proto|json|connect\+json)/i.test(type(res.headers))) {
      return new Response(guardedBody(body, signal, max), init2);
    }
    const reader = guardedBody(body, signal).getReader();
    const chunks: Uint8Array[] = [];
    for (let size = Number(res.headers.get("content-length")), total = 0; ; ) {
      if (size > max) {
        reader.cancel().catch(() => undefined);
        throw tooLarge(max);
      }
      const { done, value } = await reader.read();
      if (done) return new Response(new Blob(chunks as BlobPart[]), init2);
      chunks.push(value);
      size = total += value.byteLength;
    }
  };
}

/** ResourceExhausted, worded as connect words its own readMaxBytes failures. */
function tooLarge(max: number, size = ""): ConnectError {
  return new ConnectError(`message size ${size}is larger than configured readMaxBytes ${max}`, Code.ResourceExhausted);
}

/**
 * `body`'s chunks, until `signal` aborts or an envelope's length prefix says it holds more than
 * `max` bytes: then the stream errors with the abort's reason or ResourceExhausted, and
 * `body` is cancelled.
 *
 * No state is kept of how the stream ended: erroring a stream that has closed or failed does
 * nothing, cancelling a finished body settles at once, and a pull that throws on a stream that
 * has failed meanwhile (its read came back done after the cancel) is ignored by the stream. The
 * abort listener stays until the signal fires or goes: connect aborts each call's own signal
 * when the call ends.
 */
function guardedBody(body: ReadableStream<Uint8Array>, signal: AbortSignal | null | undefined, max = Infinity): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  // Of the current envelope: the bytes of its body still to come, and of its 5-byte header (a
  // flags byte, then the length, big-endian) those read and the length so far.
  let rest = 0;
  let head = 0;
  let length = 0;
  const fail = (reason: unknown) => {
    controller.error(reason);
    reader.cancel(reason).catch(() => undefined);
  };
  const abort = () => fail(signal?.reason);
  return new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      if (signal?.aborted) abort();
      else signal?.addEventListener("abort", abort, { once: true });
    },
    // A read that fails fails the stream with its error, as a pull that throws does.
    async pull(c) {
      const { done, value } = await reader.read();
      if (done) return c.close();
      for (let i = 0; i < value.length; ) {
        if (rest > 0) {
          const n = Math.min(rest, value.length - i);
          rest -= n;
          i += n;
          continue;
        }
        if (head++ > 0) length = length * 256 + value[i]!;
        i++;
        if (head === 5) {
          if (length > max) return fail(tooLarge(max, `${length} `));
          rest = length;
          head = length = 0;
        }
      }
      c.enqueue(value);
    },
    cancel(reason) {
      signal?.removeEventListener("abort", abort);
      return reader.cancel(reason);
    },
  });
}
