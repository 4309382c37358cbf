// The embedded store: one better-sqlite3 connection to a file (or ":memory:").
//
// Durability: WAL journal with synchronous=FULL, so every COMMIT fsyncs the WAL before the
// transaction is acknowledged (NORMAL would only sync at checkpoints and can lose the last
// commits on power loss); fullfsync for macOS, where plain fsync does not reach the disk.
//
// Concurrency: better-sqlite3 is synchronous and the connection is shared, so one transaction
// at a time runs on it: `transaction` takes an in-process FIFO mutex, issues BEGIN IMMEDIATE
// (the write lock up front, so a second process on the same file waits in busy_timeout rather
// than failing at its first write), awaits fn, then COMMITs (ROLLBACK on throw). While a
// transaction's fn awaits, other work on the event loop would otherwise run statements inside
// that open transaction, so reads outside transactions also queue on the mutex unless it is idle
// (a synchronous read cannot interleave with anything then). Reads made from inside fn's own
// async context run directly in the open transaction instead of queueing behind it (which would
// deadlock). There are no serialization conflicts to retry: writers never overlap.

import { AsyncLocalStorage } from "node:async_hooks";
import Database from "better-sqlite3";
import { FINISHED_TRANSACTION_MESSAGE, Mutex, NESTED_TRANSACTION_MESSAGE, guardedTx, type TxContext } from "../codec.js";
import { migrateSqlite } from "../migrations/migrate.js";
import { StoreConflictError, StoreUnavailableError, type Store, type StoreTx } from "../store.js";
import { sqliteMigrations } from "./migrations.js";
import { SqliteQueries } from "./sqlite-queries.js";

/** SQLite failures become store errors; anything else (our own checks, caller errors) passes. */
function toStoreError(err: unknown): unknown {
  if (err instanceof Database.SqliteError) {
    if (err.code === "SQLITE_CONSTRAINT_UNIQUE" || err.code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
      return new StoreConflictError(`SQLite: ${err.message}`, { cause: err });
    }
    return new StoreUnavailableError(`SQLite: ${err.message}`, { cause: err });
  }
  return err;
}

function guarded<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    throw toStoreError(err);
  }
}

/** Opens (creating if needed) and migrates a SQLite store. Synchronous: there is no I/O to wait on. */
export function openSqliteStore(path: string | ":memory:"): Store {
  let db: Database.Database | undefined;
  try {
    db = new Database(path);
    db.pragma("journal_mode = WAL");
    db.pragma("synchronous = FULL");
    db.pragma("fullfsync = ON");
    db.pragma("checkpoint_fullfsync = ON");
    // Another process holding the write lock (a second gateway on the same file, a backup) is
    // waited for, not reported as an error.
    db.pragma("busy_timeout = 5000");
    db.pragma("foreign_keys = ON");
    // 64-bit columns come back as BigInt; sqlite-rows.ts narrows the `number` fields.
    db.defaultSafeIntegers(true);
    migrateSqlite(db, sqliteMigrations);
  } catch (err) {
    db?.close();
    throw toStoreError(err);
  }
  return new SqliteStore(db);
}

class SqliteStore implements Store {
  readonly kind = "sqlite" as const;
  private readonly q: SqliteQueries;
  private readonly mutex = new Mutex();
  private readonly context = new AsyncLocalStorage<TxContext>();
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  /** close() was called: refuse new work. */
  private closing: Promise<void> | undefined;
  /** The connection is closed: queued work that reaches it fails. */
  private closed = false;

  constructor(private readonly db: Database.Database) {
    this.q = new SqliteQueries(db);
    this.begin = db.prepare("BEGIN IMMEDIATE");
    this.commit = db.prepare("COMMIT");
    this.rollback = db.prepare("ROLLBACK");
  }

  private checkOpen(): void {
    if (this.closing || this.closed) throw new StoreUnavailableError("the store is closed");
  }

  async transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    if (this.context.getStore()?.active) throw new Error(NESTED_TRANSACTION_MESSAGE);
    this.checkOpen();
    const release = await this.mutex.lock();
    try {
      if (this.closed) throw new StoreUnavailableError("the store is closed");
      guarded(() => this.begin.run());
      const ctx: TxContext = { active: true };
      try {
        const result = await this.context.run(ctx, () => fn(sqliteTx(this.db, this.q, ctx)));
        ctx.active = false;
        guarded(() => this.commit.run());
        return result;
      } catch (err) {
        ctx.active = false;
        // Some errors (disk full, I/O) make SQLite roll back on its own; only roll back what is open.
        if (this.db.inTransaction) {
          try {
            this.rollback.run();
          } catch {
            // The original error is the one worth reporting.
          }
        }
        throw err;
      }
    } finally {
      release();
    }
  }

  /** A read outside any transaction: never observes another request's open transaction. */
  private async read<T>(f: (q: SqliteQueries) => T): Promise<T> {
    this.checkOpen();
    if (this.context.getStore()?.active || this.mutex.idle) return guarded(() => f(this.q));
    const release = await this.mutex.lock();
    try {
      if (this.closed) throw new StoreUnavailableError("the store is closed");
      return guarded(() => f(this.q));
    } finally {
      release();
    }
  }

  sandboxByName(workspace: string, name: string) {
    return this.read((q) => q.sandboxByName(workspace, name));
  }
  sandboxById(id: string) {
    return this.read((q) => q.sandboxById(id));
  }
  listSandboxes(query: Parameters<Store["listSandboxes"]>[0]) {
    return this.read((q) => q.listSandboxes(query));
  }
  operation(id: string) {
    return this.read((q) => q.operation(id));
  }
  operationsOfSandbox(sandboxId: string, limit: number) {
    return this.read((q) => q.operationsOfSandbox(sandboxId, limit));
  }
  dueOperations(now: Date, limit: number) {
    return this.read((q) => q.dueOperations(now, limit));
  }
  countPending() {
    return this.read((q) => q.countPending());
  }
  policyRevision(sandboxId: string, version: number) {
    return this.read((q) => q.policyRevision(sandboxId, version));
  }
  listPolicyRevisions(sandboxId: string, pageSize: number, pageToken: string) {
    return this.read((q) => q.listPolicyRevisions(sandboxId, pageSize, pageToken));
  }
  settings(sandboxId: string) {
    return this.read((q) => q.settings(sandboxId));
  }
  globalSettingsRevision() {
    return this.read((q) => q.globalSettingsRevision());
  }
  providerByName(workspace: string, name: string) {
    return this.read((q) => q.providerByName(workspace, name));
  }

  /** Waits for the running and already queued transactions, then closes the connection. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const release = await this.mutex.lock();
      try {
        this.closed = true;
        this.db.close();
      } finally {
        release();
      }
    })();
    return this.closing;
  }
}

/** The transaction view over the shared connection: refuses use after the end or after SQLite rolled back. */
function sqliteTx(db: Database.Database, q: SqliteQueries, ctx: TxContext): StoreTx {
  return guardedTx(q, (call) => {
    if (!ctx.active) return Promise.reject(new Error(FINISHED_TRANSACTION_MESSAGE));
    // After SQLite rolled back on its own, further statements would autocommit one by one.
    if (!db.inTransaction) return Promise.reject(new StoreUnavailableError("SQLite rolled this transaction back after an error"));
    try {
      return Promise.resolve(call());
    } catch (err) {
      return Promise.reject(toStoreError(err));
    }
  });
}
