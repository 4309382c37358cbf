// A replaced credential must not outlive its replacement on disk. Two places keep old bytes:
// - the database file's pages: a rewritten or deleted row leaves its old bytes in the page's free
//   space, and a freed page (a long value's overflow pages) keeps its content. PRAGMA
//   secure_delete makes SQLite overwrite them with zeros (FAST for every write, ON for writes of
//   the providers table: sqlite-connection.ts, sqlite-queries.ts);
// - the write-ahead log: every committed page image, the old credential's included, stays in the
//   -wal file until a checkpoint copies the pages into the database file. Even then SQLite only
//   rewinds the log, and frames past the point that new writes reach keep their bytes
//   indefinitely.
// So a commit that wrote the providers table is followed, before it is acknowledged, by a
// TRUNCATE checkpoint: the pages go into the database file (where secure_delete zeroed the old
// value) and the -wal file is cut to 0 bytes. A checkpoint cannot finish while another connection
// (a backup, the sqlite3 shell) reads an older snapshot; then it is retried until it does,
// without ever blocking on that reader.

import type Database from "better-sqlite3";
import type { SqliteStoreLog } from "./sqlite-file-modes.js";

/** The tables whose rows hold credentials. */
const CREDENTIAL_TABLES = ["providers"] as const;

export interface CredentialScrubOptions {
  /** A file database in WAL mode. */
  readonly db: Database.Database;
  /** The database file, for log lines. */
  readonly file: string;
  /** The connection's busy_timeout, restored after each checkpoint. */
  readonly busyTimeoutMs: number;
  readonly log: SqliteStoreLog | undefined;
  /** How long a postponed truncation waits before it is tried again. */
  readonly retryMs: number;
  /** Runs `fn` while no transaction is open on the connection (the store's lock). */
  readonly exclusive: (fn: () => Promise<void>) => Promise<void>;
  /** Makes the truncation durable (fsyncs the -wal file), where the store syncs it itself. */
  readonly syncWal: () => Promise<void>;
}

export interface CredentialScrub {
  /**
   * After each durable COMMIT, holding the connection: if credentials were written since the last
   * complete truncation, checkpoints the WAL into the database file and truncates it. Never
   * throws: the commits are durable whatever happens here, so a failure is logged and retried.
   */
  afterCommit(): Promise<void>;
  /** No more retries (the store is closing; it calls afterCommit once more itself). */
  stop(): void;
}

/**
 * Watches the credential tables through temporary triggers: they live in this connection's temp
 * schema, so the stored schema and its migrations are unchanged, and every write to those tables
 * is seen, whichever query makes it.
 */
export function createCredentialScrub(o: CredentialScrubOptions): CredentialScrub {
  const { db, file, log } = o;
  let owed = false;
  let postponed = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  db.function("osc_credentials_written", { deterministic: false, directOnly: true }, () => {
    owed = true;
    return null;
  });
  for (const table of CREDENTIAL_TABLES) {
    for (const event of ["INSERT", "UPDATE", "DELETE"]) {
      db.exec(`CREATE TEMP TRIGGER osc_scrub_${table}_${event.toLowerCase()} AFTER ${event} ON main.${table} BEGIN SELECT osc_credentials_written(); END`);
    }
  }

  /** True when the WAL was checkpointed and truncated; false when a reader holds it. */
  function checkpoint(): boolean {
    // A TRUNCATE checkpoint calls the busy handler while a reader holds an old snapshot; with the
    // store's busy_timeout that would block the event loop for seconds.
    db.pragma("busy_timeout = 0");
    try {
      const [result] = db.pragma("wal_checkpoint(TRUNCATE)") as { busy: number | bigint }[];
      return Number(result?.busy ?? 1) === 0;
    } finally {
      db.pragma(`busy_timeout = ${o.busyTimeoutMs}`);
    }
  }

  async function afterCommit(): Promise<void> {
    if (!owed) return;
    let done = false;
    try {
      done = checkpoint();
      if (done) {
        owed = false;
        await o.syncWal();
        if (postponed) log?.info({ file }, "write-ahead log truncated after a credential change (it had been postponed)");
        postponed = false;
      } else if (!postponed) {
        postponed = true;
        log?.warn({ file }, "could not truncate the write-ahead log after a credential change: another connection is reading the database; replaced credentials stay in the -wal file until it can, retrying");
      }
    } catch (err) {
      log?.warn({ file, err }, "truncating the write-ahead log after a credential change failed; retrying");
    }
    if (owed && !stopped && !timer) {
      timer = setTimeout(() => {
        timer = undefined;
        if (!stopped) void o.exclusive(afterCommit).catch(() => undefined);
      }, o.retryMs).unref();
    }
  }

  return {
    afterCommit,
    stop() {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
