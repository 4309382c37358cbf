// Retrying transient failures (UNAVAILABLE, broken connections) and abortable sleeps. Errors that
// describe the request itself (bad input, unknown sandbox, auth, conflicts) or the TLS settings
// are never retried; a commit (UpdateConfig) is resent only when that cannot commit it twice,
// which commit.ts decides with the same backoff. One small loop rather than p-retry, which this
// used until issue 28: the library cost 1.0 kB of the browser bundle's 40 kB (brotli) for what
// is a dozen lines here, and the commit path needed a loop of its own anyway.

import { Code, ConnectError } from "@connectrpc/connect";
import { tlsFailureOf } from "./tls-failure.js";

/** How a client retries transient failures. */
export interface RetryOptions {
  /** Retries after the first attempt. Default 6. */
  readonly retries?: number;
  /** First backoff delay. Default 100 ms. */
  readonly minDelayMs?: number;
  /** Backoff cap. Default 5 s. */
  readonly maxDelayMs?: number;
}

const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ERR_HTTP2_GOAWAY_SESSION",
  "ERR_HTTP2_STREAM_CANCEL",
  "ERR_HTTP2_INVALID_SESSION",
  // An HTTP/2 session or stream torn down by the peer (a gateway crashing or restarting).
  "ERR_HTTP2_SESSION_ERROR",
  "ERR_HTTP2_STREAM_ERROR",
]);

/**
 * True for failures that say nothing about the request: worth the same request again. A TLS
 * failure never is (an unknown CA or a refused client certificate fails the same way every time),
 * whatever code it arrived with.
 */
export function isTransient(err: unknown, extra: readonly Code[] = []): boolean {
  if (tlsFailureOf(err) !== undefined) return false;
  if (err instanceof ConnectError || isConnectErrorLike(err)) {
    const ce = err as ConnectError;
    if (ce.code === Code.Unavailable || extra.includes(ce.code)) return true;
    // connect-node reports a connection reset under a call as ABORTED (and others as UNKNOWN or
    // INTERNAL); only the cause tells a broken connection from the gateway's own answer.
    if (ce.code === Code.Unknown || ce.code === Code.Internal || ce.code === Code.Aborted) return isNetworkFailure(ce.cause) || isCutShort(ce);
    // A connection that dies under an open call (the gateway crashed or restarted) resets its
    // HTTP/2 streams with CANCEL, which connect-node reports as CANCELED although nobody
    // cancelled. The caller's own cancellations never get here: every caller checks its signal first.
    if (ce.code === Code.Canceled) return H2_CANCEL_RESET.test(ce.rawMessage);
    return isCutShort(ce);
  }
  return isNetworkFailure(err);
}

/**
 * connect's errors for a response that stopped before its end (no gRPC status, no Connect
 * end-of-stream, a truncated message): what a gateway that dies or restarts under an open call
 * leaves behind, when the connection itself closed cleanly. Nothing in them is the gateway's answer.
 */
const CUT_SHORT = /^protocol error: (missing status|missing output message for unary method|missing EndStreamResponse|incomplete envelope|promised \d+ bytes, received \d+)$/;

/** True when `err` is a response cut short (see CUT_SHORT): the call may be made again. */
export function isCutShort(err: ConnectError): boolean {
  return (err.code === Code.Internal || err.code === Code.InvalidArgument || err.code === Code.Unknown) && CUT_SHORT.test(err.rawMessage);
}

/** connect-node's message for an HTTP/2 stream reset with CANCEL (0x8). */
const H2_CANCEL_RESET = /^http\/2 stream closed with error code CANCEL\b/;

function isConnectErrorLike(err: unknown): boolean {
  return typeof err === "object" && err !== null && (err as { name?: unknown }).name === "ConnectError";
}

/** True when `err` or one of its causes is a failed or broken connection (and not a TLS failure). */
export function isNetworkFailure(err: unknown): boolean {
  if (tlsFailureOf(err) !== undefined) return false;
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_CODES.has(code)) return true;
    // fetch() rejects with a bare TypeError when the connection fails.
    if (e instanceof TypeError && /fetch|network|load failed/i.test(e.message)) return true;
  }
  return false;
}

/**
 * Runs `fn` until it succeeds, fails with a non-transient error, or retries run out. The signal
 * stops both the attempts and the backoff sleeps; the abort reason is what rejects.
 */
export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions & {
    signal?: AbortSignal | undefined;
    retryOn?: readonly Code[];
    onRetry?: (error: unknown, attempt: number) => void;
  } = {},
): Promise<T> {
  options.signal?.throwIfAborted();
  const retries = options.retries ?? 6;
  const minDelayMs = options.minDelayMs ?? 100;
  const maxDelayMs = options.maxDelayMs ?? 5_000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (error) {
      if (attempt > retries || options.signal?.aborted || !isTransient(error, options.retryOn)) throw error;
      options.onRetry?.(error, attempt);
    }
    await sleep(backoffDelay(attempt, minDelayMs, maxDelayMs), options.signal);
  }
}

/**
 * The pause after failed attempt `attempt` (1-based): doubling from `minDelayMs`, each pause
 * drawn from [d, 2d) so that clients failing together do not retry together, capped at `maxDelayMs`.
 */
export function backoffDelay(attempt: number, minDelayMs: number, maxDelayMs: number): number {
  return Math.min(maxDelayMs, minDelayMs * 2 ** (attempt - 1) * (1 + Math.random()));
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * One signal that aborts when the caller's does or when `deadline` (epoch ms) passes; `expired`
 * tells the two apart afterwards. `dispose` releases the timer and listener.
 */
export function deadlineSignal(
  signal: AbortSignal | undefined,
  deadline: number,
): { signal: AbortSignal; expired: () => boolean; dispose: () => void } {
  const controller = new AbortController();
  let expired = false;
  const onAbort = () => controller.abort(signal!.reason);
  if (signal?.aborted) controller.abort(signal.reason);
  else signal?.addEventListener("abort", onAbort, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (Number.isFinite(deadline)) {
    // setTimeout overflows past 2^31-1 ms; such deadlines are effectively infinite.
    const ms = Math.min(Math.max(0, deadline - Date.now()), 2_147_483_647);
    timer = setTimeout(() => {
      expired = true;
      controller.abort(new Error("deadline exceeded"));
    }, ms);
  }
  return {
    signal: controller.signal,
    expired: () => expired,
    dispose: () => {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    },
  };
}
