// One call's retries of transient issuer failures: bounded exponential backoff with jitter, a
// Retry-After honoured up to a cap, a timeout per attempt and a budget for the whole call. Only a
// TokenProviderError marked transient is retried; anything else ends the call at once.

import { InvalidArgumentError, TokenProviderError } from "../errors.js";
import type { OidcRetryOptions } from "./options.js";

export type Backoff = Required<OidcRetryOptions>;

const DEFAULTS: Backoff = {
  retries: 3,
  minDelayMs: 250,
  maxDelayMs: 4_000,
  maxRetryAfterMs: 5_000,
  attemptTimeoutMs: 5_000,
  budgetMs: 10_000,
  cooldownMs: 1_000,
};

/** The retry options with their defaults; InvalidArgumentError for a negative or non-finite number. */
export function backoffOptions(options: OidcRetryOptions = {}): Backoff {
  const out = { ...DEFAULTS };
  for (const key of Object.keys(DEFAULTS) as (keyof Backoff)[]) {
    const value = options[key];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new InvalidArgumentError(`retry.${key} must be a finite number >= 0, got ${String(value)}`, { field: `retry.${key}` });
    }
    out[key] = value;
  }
  return out;
}

// Retry-After of a transient failure, in ms: the wait it asks for, and for a final failure the
// time before which the provider must not ask again.
const retryAfter = new WeakMap<TokenProviderError, number>();

/** A transient TokenProviderError that asks for `ms` before the next request. */
export function withRetryAfter(err: TokenProviderError, ms: number | undefined): TokenProviderError {
  if (ms !== undefined) retryAfter.set(err, ms);
  return err;
}

/** The Retry-After carried by `err`, in ms. */
export function retryAfterOf(err: unknown): number | undefined {
  return err instanceof TokenProviderError ? retryAfter.get(err) : undefined;
}

/**
 * Runs `attempt` until it succeeds or fails for good. Each attempt gets a signal that aborts at
 * its timeout (or at the end of the budget, whichever is first).
 */
export async function withBackoff<T>(attempt: (signal: AbortSignal, timeoutMs: number) => Promise<T>, b: Backoff): Promise<T> {
  const start = Date.now();
  for (let n = 1; ; n++) {
    const timeoutMs = Math.max(1, Math.min(b.attemptTimeoutMs, b.budgetMs - (Date.now() - start)));
    try {
      return await attempt(AbortSignal.timeout(timeoutMs), timeoutMs);
    } catch (err) {
      if (!(err instanceof TokenProviderError) || !err.transient) throw err;
      const asked = retryAfterOf(err);
      if (asked !== undefined && asked > b.maxRetryAfterMs) throw final(err, n, `the issuer asked to wait ${seconds(asked)}`, asked);
      if (n > b.retries) throw final(err, n);
      const delay = Math.max(jitter(n, b), asked ?? 0);
      if (Date.now() - start + delay >= b.budgetMs) throw final(err, n);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

// Equal jitter: half the exponential step fixed, half random, so that a fleet of providers that
// failed together spreads out without any of them hammering.
function jitter(n: number, b: Backoff): number {
  const step = Math.min(b.maxDelayMs, b.minDelayMs * 2 ** (n - 1));
  return step / 2 + Math.random() * (step / 2);
}

function final(err: TokenProviderError, attempts: number, why?: string, asked?: number): TokenProviderError {
  const tail = [attempts === 1 ? "1 attempt" : `${attempts} attempts`, why].filter(Boolean).join("; ");
  const out = new TokenProviderError(`${err.message} (${tail})`, {
    transient: true,
    ...(err.status === undefined ? {} : { status: err.status }),
    ...(err.oauthError === undefined ? {} : { oauthError: err.oauthError }),
    ...(err.cause === undefined ? {} : { cause: err.cause }),
  });
  return withRetryAfter(out, asked);
}

export function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
