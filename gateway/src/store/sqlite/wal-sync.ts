// How the SQLite store makes a COMMIT's write-ahead log durable before acknowledging it: an fsync
// on libuv's thread pool, or on the main thread when that is the cheaper of the two.
//
// Why two ways: at low load a batch is one transaction, no other store work waits for it, and
// handing its fsync to the thread pool costs a thread wake-up, an eventfd write and an extra
// event-loop turn per COMMIT, two per waited update (about a tenth of the waited updates/s at one
// in flight; bench/README.md, Findings). Syncing inline blocks the event loop for the fsync, so
// it is done only while this disk's fsyncs are all fast: each of the last RECENT took under
// INLINE_SYNC_MAX_MS. One slow fsync (a writeback storm, a throttled cloud disk) sends the next
// RECENT to the pool, where the loop keeps serving streams, heartbeats and /metrics meanwhile;
// that first slow one still blocks. Either way the sync completes before anything is acknowledged.

import { fsync, fsyncSync } from "node:fs";

export interface WalSync {
  /**
   * Syncs `fd`. `alone`: the batch was one transaction and nothing else is queued, so blocking
   * the main thread for a fast fsync holds nothing up.
   */
  sync(fd: number, alone: boolean): Promise<void>;
}

/** An fsync that took this long or longer (ms) is slow. */
export const INLINE_SYNC_MAX_MS = 1;
/** After a slow fsync, this many in a row must be fast before one is done inline again. */
export const RECENT = 8;

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
  // Syncs still to go to the pool before one may be inline: 0 at first, so the first lone sync is
  // tried inline.
  let poolTurns = 0;
  const note = (ms: number) => {
    if (ms >= INLINE_SYNC_MAX_MS) poolTurns = RECENT;
    else if (poolTurns > 0) poolTurns--;
  };
  return {
    async sync(fd, alone) {
      const start = now();
      try {
        if (alone && syncInline !== null && poolTurns === 0) syncInline(fd);
        // Timed here too (the hand-off included, which only errs on the side of the pool), so
        // that a disk that was slow and is fast again earns the inline sync back.
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
