// When a session's delivery fails (the database unreachable, say), it is tried again by the
// session itself: a sandbox's pending operations would also be redelivered by the reconciler, but
// a global change has no operation, and without this a session would keep the old global part
// until something else changed. With backoff and jitter, so that every session of a gateway does
// not hit a failing database at the same moment, and at most one timer per session.

import type { BoundLogger } from "../observability/logger.js";

/** The first wait before a failed delivery is tried again; it doubles up to the maximum. */
export const DELIVERY_RETRY_FIRST_MS = 500;
export const DELIVERY_RETRY_MAX_MS = 30_000;

export interface DeliveryRetry {
  /**
   * A delivery failed with `err`: deliver again after the next backoff (unless already due).
   * `expected`: a condition of normal operation (another replica's commits racing this one's
   * reads), logged at info rather than as an error until the backoff reaches its maximum.
   */
  failed(err: unknown, expected?: boolean): void;
  /** A delivery succeeded: the next failure starts from the first wait again. */
  succeeded(): void;
  /** The session ended. */
  stop(): void;
}

export function createDeliveryRetry(deliverAgain: () => void, log: Pick<BoundLogger, "error" | "info">, random: () => number = Math.random): DeliveryRetry {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let delayMs = 0;
  let stopped = false;
  return {
    failed(err, expected = false) {
      if (stopped) return;
      // A failure while a retry is already due neither arms another timer nor lengthens the wait:
      // a burst of failures must not jump straight to the longest backoff.
      if (timer !== undefined) return;
      delayMs = delayMs === 0 ? DELIVERY_RETRY_FIRST_MS : Math.min(delayMs * 2, DELIVERY_RETRY_MAX_MS);
      const line = { err: err instanceof Error ? err.message : String(err), retryInMs: delayMs };
      // Expected once or twice; still so at the longest backoff, something is wrong: an error.
      if (expected && delayMs < DELIVERY_RETRY_MAX_MS) log.info(line, "configuration delivery failed; trying again");
      else log.error(line, "configuration delivery failed; trying again");
      // Between half the backoff and all of it.
      timer = setTimeout(() => {
        timer = undefined;
        if (!stopped) deliverAgain();
      }, delayMs * (0.5 + random() / 2));
      timer.unref?.();
    },
    succeeded() {
      delayMs = 0;
    },
    stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
