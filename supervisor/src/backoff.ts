// Reconnect pacing: capped exponential backoff with full jitter, and an abortable sleep.

export interface BackoffOptions {
  /** First ceiling. Default 250 ms. */
  readonly baseMs?: number;
  /** Largest ceiling. Default 30 s. */
  readonly capMs?: number;
}

export const DEFAULT_BACKOFF = { baseMs: 250, capMs: 30_000 } as const;

/** Full jitter: uniform in [0, min(cap, base·2^attempt)). `attempt` counts from 0. */
export function backoffDelay(attempt: number, options: BackoffOptions = {}, random: () => number = Math.random): number {
  const base = options.baseMs ?? DEFAULT_BACKOFF.baseMs;
  const cap = options.capMs ?? DEFAULT_BACKOFF.capMs;
  const ceiling = Math.min(cap, base * 2 ** Math.min(Math.max(attempt, 0), 30));
  return Math.floor(random() * ceiling);
}

/** Resolves after `ms`, or early (without error) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
