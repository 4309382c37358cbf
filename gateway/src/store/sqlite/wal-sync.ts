// How the SQLite store makes a COMMIT's write-ahead log durable before acknowledging it: an fsync
// on libuv's thread pool, or on the main thread when that is the cheaper of the two.
//
// Why two ways: at low load a batch is one transaction and the event loop has nothing else to do
// while the WAL syncs. Handing that fsync to the thread pool then buys no overlap and costs a
// thread wake-up, an eventfd write and an extra event-loop turn per COMMIT, two per waited update
// (about a tenth of the waited updates/s at one in flight; bench/README.md, Findings). When other
// transactions are queued, or this disk's fsyncs have been slow lately, the main thread must not
// block: the thread pool keeps the loop serving streams and reads meanwhile. Either way the sync
// completes before the caller acknowledges anything.

import { fsync, fsyncSync } from "node:fs";

export interface WalSync {
  /**
   * Syncs `fd`. `alone`: the batch was one transaction and nothing else is queued, so blocking
   * the main thread for a fast fsync holds nothing up.
   */
  sync(fd: number, alone: boolean): Promise<void>;
}

/** Recent fsyncs (a moving average, ms) at or above this go to the thread pool, even alone. */
export const INLINE_SYNC_MAX_MS = 1;
/** Weight of the newest fsync in the moving average. */
const WEIGHT = 0.25;

export interface WalSyncOptions {
  /** The thread-pool sync (default: fs.fsync). */
  readonly syncAsync?: (fd: number) => Promise<void>;
  /** The main-thread sync (default: fs.fsyncSync); null: never block the main thread. */
  readonly syncInline?: ((fd: number) => void) | null;
  /** Milliseconds, monotonic (default: performance.now). */
  readonly now?: () => number;
}

export function createWalSync(options: WalSyncOptions = {}): WalSync {
  const syncAsync = options.syncAsync ?? fsyncAsync;
  const syncInline = options.syncInline === undefined ? fsyncSync : options.syncInline;
  const now = options.now ?? (() => performance.now());
  // Starts at 0: the first lone sync is tried inline, and one slow one is enough to stop that.
  let recentMs = 0;
  const note = (ms: number) => {
    recentMs += (ms - recentMs) * WEIGHT;
  };
  return {
    async sync(fd, alone) {
      const start = now();
      try {
        if (alone && syncInline !== null && recentMs < INLINE_SYNC_MAX_MS) syncInline(fd);
        // Measured here too (thread-pool hand-off included), so that a disk that was slow and
        // is fast again earns the inline sync back.
        else await syncAsync(fd);
      } finally {
        note(now() - start);
      }
    },
  };
}

function fsyncAsync(fd: number): Promise<void> {
  return new Promise((resolve, reject) => fsync(fd, (err) => (err ? reject(err) : resolve())));
}
