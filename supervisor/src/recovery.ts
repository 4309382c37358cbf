// Shared news that a gateway is reachable again, for the sessions of one process. Many sandboxes
// share a connection, so when a fault heals the first session the gateway accepts proves it for
// all of them; without this, a session whose backoff grew during the fault (up to the 30 s
// ceiling) would sit out the rest of it while its peers already run, and its pending updates
// with it. Sleepers woken here reconnect after a short jitter instead, so a healed fleet comes
// back within about a second, spread out rather than all at once.

/** The jitter (ms) a woken session waits before reconnecting. */
export const WAKE_JITTER_MS = 1_000;

export interface RecoveryBeacon {
  /** A session was accepted by a gateway. */
  accepted(): void;
  /** Resolves at the next `accepted()` after this call; `cancel` forgets the wait. */
  next(): { readonly promise: Promise<void>; cancel(): void };
}

export function createRecoveryBeacon(): RecoveryBeacon {
  let waiters = new Set<() => void>();
  return {
    accepted() {
      if (waiters.size === 0) return;
      const woken = waiters;
      waiters = new Set();
      for (const wake of woken) wake();
    },
    next() {
      let wake!: () => void;
      const promise = new Promise<void>((resolve) => (wake = resolve));
      waiters.add(wake);
      return { promise, cancel: () => waiters.delete(wake) };
    },
  };
}
