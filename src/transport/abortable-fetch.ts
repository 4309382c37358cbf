// fetch whose abort always ends the call. Node 20's fetch (undici 6) follows the caller's signal
// only through a weak reference to the Request it builds inside fetch(); once that Request has
// been garbage-collected (nothing keeps it after the headers arrive), an abort or a deadline is
// lost: a server stream, an operations watch say, reads on until the server ends it, and its
// connection stays open. (Before the headers, the pending fetch keeps its Request, and an abort
// works.) So the response's body is wrapped in a stream that the signal's own listener errors, and
// the underlying body is cancelled, which closes the connection. In browsers this only adds a thin
// stream around the body.

type Fetch = typeof globalThis.fetch;

/** Statuses whose responses cannot carry a body (`new Response` refuses one). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** `fetch`, with `init.signal` applied to the response's body by this wrapper too. */
export function withReliableAbort(fetch: Fetch): Fetch {
  return async (input, init) => {
    const signal = init?.signal ?? undefined;
    if (!signal) return fetch(input, init);
    const res = await fetch(input, init);
    // A body that is not a web stream (a fetch of the caller's own, node-fetch say) is left as it
    // is. The reason phrase is not carried over: Connect does not read it, and one that is not
    // Latin-1 would make the Response constructor throw.
    const body = res.body as ReadableStream<Uint8Array> | null | undefined;
    if (!body || typeof body.getReader !== "function" || NULL_BODY.has(res.status)) return res;
    return new Response(abortableBody(body, signal), { status: res.status, headers: res.headers });
  };
}

/** `body`'s chunks, until `signal` aborts: then the stream errors with its reason and `body` is cancelled. */
function abortableBody(body: ReadableStream<Uint8Array>, signal: AbortSignal): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  let settled = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const abort = () => {
    if (settled) return;
    settled = true;
    controller.error(signal.reason);
    reader.cancel(signal.reason).catch(() => undefined);
  };
  const finish = () => {
    settled = true;
    signal.removeEventListener("abort", abort);
  };
  return new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      if (signal.aborted) abort();
      else signal.addEventListener("abort", abort, { once: true });
    },
    async pull(c) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (!settled) {
          finish();
          c.error(err);
        }
        return;
      }
      if (settled) return;
      if (chunk.done) {
        finish();
        c.close();
      } else {
        c.enqueue(chunk.value);
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
}
