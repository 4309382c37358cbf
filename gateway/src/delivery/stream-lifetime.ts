// When a supervisor stream's server side ends, and what ending does, independent of the handler's
// generator: that generator is suspended at `yield` while connect-node writes the message, and a
// write the peer never takes (window 0, a reset stream, a dropped connection) keeps it suspended
// for good (see transport-stream.ts). So the stream ends on the first of:
//   - the handler finishing (its `finally`);
//   - the call's signal aborting (the peer reset the stream or went away, or the gateway stops);
//   - a message not taken by the stream within `writeTimeoutMs` (connect-node waits only once
//     the HTTP/2 stream's 16 KiB write buffer is full, so this is a peer that reads nothing);
//   - `end(reason)` from outside (superseded, session closed);
// and ending runs `onEnd` exactly once, then resets the HTTP/2 stream if a write is still pending,
// which drops the queued bytes. A write that cannot finish is the only thing that can keep a
// stream alive, and it is bounded.

import { Code, ConnectError } from "@connectrpc/connect";
import { resetTransportStream, type TransportStream } from "./transport-stream.js";

export interface StreamLifetimeOptions {
  /** The call's signal (aborts when the peer resets the stream or disconnects). */
  readonly signal: AbortSignal;
  /** The HTTP/2 stream to reset when a pending write must be abandoned. */
  readonly transport: TransportStream | undefined;
  /** A message not fully written within this long ends the stream. */
  readonly writeTimeoutMs: number;
  /** Runs once when the stream ends; `reason` is undefined for a handler that finished normally. */
  readonly onEnd: (reason: unknown) => void;
}

export interface StreamLifetime {
  /** A message is about to be yielded: from now on the write bound runs. */
  writing(): void;
  /** The consumer came back for the next message: the previous one was written. */
  written(): void;
  /** Ends the stream now (idempotent); resets the HTTP/2 stream if a write is pending. */
  end(reason?: unknown): void;
  readonly ended: boolean;
  /** Why it ended (undefined while running, or after a normal end). */
  readonly reason: unknown;
  /** `promise`, unless the stream ends first (then rejects with the reason) or `ms` pass (rejects with `onTimeout()`). */
  within<T>(promise: Promise<T>, ms: number, onTimeout: () => unknown): Promise<T>;
}

/**
 * Default bounds of a supervisor stream. 20 s to write a message: a 3 MiB bootstrap (the largest
 * sent) then needs about 1.3 Mbit/s; 10 s for the hello, which a supervisor sends at once.
 */
export const DEFAULT_STREAM_BOUNDS = Object.freeze({ writeTimeoutMs: 20_000, helloTimeoutMs: 10_000 });

/** How long an ended stream may take to deliver its status before it is reset. */
const END_GRACE_MS = 1_000;

/** What a stream whose peer went away ends with when the signal gives no reason. */
const PEER_GONE = () => new ConnectError("the supervisor's stream was closed", Code.Canceled);

export function createStreamLifetime(options: StreamLifetimeOptions): StreamLifetime {
  const { signal, transport } = options;
  let pendingWrite = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Awaits (`within`) to fail when the stream ends. */
  const waiting = new Set<(reason: unknown) => void>();
  const onAbort = () => api.end(signal.reason ?? PEER_GONE());

  function within<T>(promise: Promise<T>, ms: number, onTimeout: () => unknown): Promise<T> {
    if (api.ended) return Promise.reject(api.reason ?? PEER_GONE());
    return new Promise<T>((resolve, reject) => {
      const t = setTimeout(() => reject(onTimeout()), ms);
      waiting.add(reject);
      promise.then(resolve, reject).finally(() => {
        clearTimeout(t);
        waiting.delete(reject);
      });
    });
  }

  const api: { -readonly [K in keyof StreamLifetime]: StreamLifetime[K] } = {
    ended: false,
    reason: undefined,
    writing() {
      if (api.ended) return;
      pendingWrite = true;
      timer = setTimeout(() => {
        const seconds = options.writeTimeoutMs / 1000;
        api.end(new ConnectError(`the supervisor did not read a message within ${seconds} s; the stream is reset`, Code.DeadlineExceeded));
      }, options.writeTimeoutMs);
    },
    written() {
      pendingWrite = false;
      clearTimeout(timer);
      timer = undefined;
    },
    end(reason) {
      if (api.ended) return;
      api.ended = true;
      api.reason = reason;
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      try {
        options.onEnd(reason);
      } finally {
        // The generator cannot finish a stream whose write is stuck: drop the write with the stream.
        if (pendingWrite) resetTransportStream(transport);
        // Otherwise the handler ends the stream with its status; but trailers wait behind any
        // data still queued, and a peer that reads nothing never gets them: reset what is still
        // open after a moment (a peer that got its status ignores the reset).
        else if (transport && !transport.closed) setTimeout(() => resetTransportStream(transport), END_GRACE_MS).unref();
        for (const fail of waiting) fail(reason ?? PEER_GONE());
      }
    },
    within,
  };
  signal.addEventListener("abort", onAbort, { once: true });
  if (signal.aborted) onAbort();
  return api;
}
