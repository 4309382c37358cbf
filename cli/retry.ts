// The one retry rule of every command: a request that fails because the gateway cannot be reached
// (connection refused or reset, UNAVAILABLE) is sent again 3 times, after 0.5 s, 1 s and 2 s,
// reads and writes alike. One exception: a commit (UpdateConfig) is resent here only when it
// never left (refused, DNS); after a failure where it may have reached the gateway, it goes back to
// the SDK as it failed, because only the SDK knows whether this gateway replays a resent commit by
// its idempotency key (a gateway without durable operations would commit it twice). While it
// retries, one line on stderr says so; when the retries run out, the command fails with one line
// (GatewayUnreachableError, described in errors.ts). It is a Connect interceptor on the CLI's
// transport, so it covers the SDK's calls and raw ones equally; the SDK's own retries see only
// its final answer, which they do not retry again. A TLS failure is never "unreachable": the same
// certificates fail the same way.

import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { tlsErrorOf, UnavailableError } from "openshell-config";
import { countOf, formatDuration } from "./format.js";

export interface RetryRule {
  /** The pauses before each retry; their number is the number of retries. */
  readonly delaysMs: readonly number[];
}

export const RETRY_RULE: RetryRule = { delaysMs: [500, 1_000, 2_000] };

const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EPIPE", "ERR_HTTP2_GOAWAY_SESSION", "ERR_HTTP2_ERROR", "ERR_HTTP2_SESSION_ERROR", "ERR_HTTP2_STREAM_CANCEL", "ERR_HTTP2_INVALID_SESSION", "ERR_HTTP2_STREAM_ERROR", "UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT"]);

/** The network error code (ECONNREFUSED, ENOTFOUND, …) somewhere in the cause chain, if any. */
export function networkCode(err: unknown): string | undefined {
  for (let e = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_CODES.has(code)) return code;
  }
  return undefined;
}

/** Where the SDK's Node transport records a failed socket's TLS state. */
const TLS_CONNECTION = Symbol.for("openshell-config.tls.connection");

// Node's certificate and handshake errors, and the SDK's TlsError that names them.
const TLS_CODE = /^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_(GET|VERIFY)_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|HOSTNAME_MISMATCH$|EPROTO$)/;

/** True when a TLS failure is anywhere in the cause chain (also as the SDK's Node transport classifies it). */
export function isTlsFailure(err: unknown): boolean {
  if (tlsErrorOf(err) !== undefined) return true;
  for (let e = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, name } = e as { code?: unknown; name?: unknown };
    if (name === "TlsError" || (typeof code === "string" && TLS_CODE.test(code))) return true;
  }
  return false;
}

/**
 * True when `err` proves the request never left: the connection was refused, the name did not
 * resolve, or the connection attempt itself failed. After anything else it may have arrived.
 */
export function neverSent(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, syscall } = e as { code?: unknown; syscall?: unknown };
    // The SDK's Node transport marks a socket's error with whether its TLS handshake had completed.
    if ((e as { [TLS_CONNECTION]?: { secured?: unknown } })[TLS_CONNECTION]?.secured === false) return true;
    if (typeof code !== "string") continue;
    if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "UND_ERR_CONNECT_TIMEOUT") return true;
    if (syscall === "connect" || syscall === "getaddrinfo") return true;
  }
  return false;
}

/** True for a failure that says nothing about the request: the gateway was not reached, or went away. */
export function isUnreachable(err: unknown): boolean {
  if (isTlsFailure(err)) return false;
  if (err instanceof ConnectError) {
    if (err.code === Code.Unavailable) return true;
    // connect-node reports a broken connection under a call as UNKNOWN, INTERNAL or ABORTED (and
    // a reset stream as CANCELED); only the cause tells it from the gateway's own answer.
    if (err.code === Code.Unknown || err.code === Code.Internal || err.code === Code.Aborted || err.code === Code.Canceled) {
      return networkCode(err.cause) !== undefined || /^http\/2 stream closed with error code CANCEL\b/.test(err.rawMessage);
    }
    return false;
  }
  return networkCode(err) !== undefined;
}

/**
 * The retries ran out. Carries no cause chain, so that nothing above retries it again. An SDK
 * UnavailableError, so that a wait on a committed change that meets it ends as the SDK's
 * CompletionTimeoutError (reason "unavailable") with the ref that resumes it.
 */
export class GatewayUnreachableError extends UnavailableError {
  static override readonly errorName: string = "GatewayUnreachableError";
  constructor(
    /** What the last attempt failed with, e.g. `connect ECONNREFUSED 127.0.0.1:8080`. */
    readonly reason: string,
    readonly attempts: number,
  ) {
    super(`gateway unreachable after ${attempts} attempts: ${reason}`, { connectCode: Code.Unavailable });
  }
}

/** Why `err` failed, in a few words: connect-node's message, without its `[unavailable]` tag. */
export function reasonOf(err: unknown): string {
  const ce = err instanceof ConnectError ? err : undefined;
  const text = ce ? ce.rawMessage || Code[ce.code] : err instanceof Error ? err.message : String(err);
  const code = networkCode(err);
  return code && !text.includes(code) ? `${text} (${code})` : text;
}

/** What the user is told while a request is retried: the first retry of an outage prints the line. */
export interface RetryReport {
  retrying(reason: string, rule: RetryRule): void;
  recovered(): void;
}

/** A report that prints one line per outage (not per request, not per attempt). */
export function lineReport(note: (line: string) => void): RetryReport {
  let shown = false;
  return {
    retrying(reason, rule) {
      if (shown) return;
      shown = true;
      const total = rule.delaysMs.reduce((a, b) => a + b, 0);
      note(`gateway unreachable (${reason}); retrying ${countOf(rule.delaysMs.length, "time")} within ${formatDuration(total)}…`);
    },
    recovered() {
      shown = false;
    },
  };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Set on a call that must be tried once and silently (a lookup that only decorates an error line). */
export const ONE_ATTEMPT = createContextKey(false, { description: "no retry, no retry lines" });

/**
 * Retries unary calls by `rule`, a commit only while it never left; streams pass through (their
 * callers reconnect), as do calls marked ONE_ATTEMPT.
 */
export function retryInterceptor(report: RetryReport, rule: RetryRule = RETRY_RULE): Interceptor {
  return (next) => async (req) => {
    if (req.stream || req.contextValues.get(ONE_ATTEMPT)) return next(req);
    const commit = (req.method as { name?: string } | undefined)?.name === "UpdateConfig";
    for (let attempt = 0; ; attempt++) {
      try {
        const res = await next(req);
        report.recovered();
        return res;
      } catch (err) {
        if (req.signal.aborted || !isUnreachable(err)) throw err;
        if (commit && !neverSent(err)) throw err;
        if (attempt >= rule.delaysMs.length) throw new GatewayUnreachableError(reasonOf(err), attempt + 1);
        report.retrying(reasonOf(err), rule);
        await pause(rule.delaysMs[attempt]!, req.signal);
      }
    }
  };
}
