// The embedded store: one better-sqlite3 connection to a file (or ":memory:").
//
// Durability: WAL journal, and no transaction is acknowledged before the WAL holding it is on
// disk. On Linux the store runs SQLite with synchronous=NORMAL (COMMIT writes the WAL but does
// not fsync it) and fsyncs the WAL file itself before it settles the batch: the guarantee of
// synchronous=FULL, without blocking the event loop for the disk while other store work waits (the
// fsync runs on libuv's thread pool, or inline for a lone, fast one: wal-sync.ts). Reads
// wait for that fsync too, so nothing not yet durable is ever read (or pushed to a
// supervisor). Elsewhere (macOS, where plain fsync does not reach the disk and fullfsync is
// needed) and for ":memory:", SQLite's own synchronous=FULL does it inside COMMIT.
//
// Concurrency: better-sqlite3 is synchronous and the connection is shared, so one transaction
// at a time runs on it, in arrival order. Reads made from inside a transaction's own async
// context run directly in it; reads from elsewhere wait until no transaction is open, so they
// never observe uncommitted (or not yet durable) writes. There are no serialization conflicts
// to retry: writers never overlap.
//
// Group commit: the fsync of a COMMIT is the largest single cost of a write (and it blocks the
// event loop), so transactions that queue up while one batch runs share the next COMMIT. Each
// runs inside its own SAVEPOINT, so one that throws rolls back alone; none is acknowledged
// (its promise settled with a result) before the COMMIT that made it durable. A batch starts in
// the check phase of the event loop (setImmediate), after the loop has read every request that
// was ready, so concurrent requests share a COMMIT while a lone one waits for nothing but that
// turn of the loop.
//
// Secrets on disk: the files are their owner's only (sqlite-file-modes.ts), deleted content is
// zeroed (secure_delete), and a commit that wrote credentials truncates the WAL before it is
// acknowledged (sqlite-credential-scrub.ts).

import { AsyncLocalStorage } from "node:async_hooks";
import { closeSync, openSync } from "node:fs";
import type Database from "better-sqlite3";
import { FINISHED_TRANSACTION_MESSAGE, Mutex, NESTED_TRANSACTION_MESSAGE, STORE_CALL_IN_TRANSACTION_MESSAGE, guardedTx, transactionChecksByDefault, type TxContext } from "../codec.js";
import type { RolloutListQuery, RolloutPatch, RolloutRow } from "../rollouts.js";
import { StoreUnavailableError, type Dimension, type SessionOwnerRecord, type Store, type StoreListenHandlers, type StoreTx, type SupervisorBindingRecord } from "../store.js";
import { createInProcessChannels } from "../in-process-channels.js";
import * as cluster from "./sqlite-cluster.js";
import * as instances from "./sqlite-instances.js";
import * as rollouts from "./sqlite-rollouts.js";
import { BUSY_TIMEOUT_MS, openSqliteConnection } from "./sqlite-connection.js";
import { createCredentialScrub, type CredentialScrub } from "./sqlite-credential-scrub.js";
import { guarded, toStoreError } from "./sqlite-errors.js";
import type { SqliteStoreLog } from "./sqlite-file-modes.js";
import { SqliteQueries } from "./sqlite-queries.js";
import { createWalSync, type WalSync } from "./wal-sync.js";

export type { SqliteStoreLog } from "./sqlite-file-modes.js";

export interface SqliteStoreOptions {
  /** Replaces the WAL fsync (tests inject slow or failing syncs). */
  readonly walSync?: WalSync;
  /** Where the store reports file modes it tightened and postponed WAL truncations. */
  readonly log?: SqliteStoreLog;
  /** How long a postponed WAL truncation waits before it is tried again (default 1 s). */
  readonly scrubRetryMs?: number;
  /**
   * Refuse store reads from inside a transaction's fn (default: transactionChecksByDefault()),
   * as PostgreSQL's store does; without the check they run in that transaction.
   */
  readonly checkTransactions?: boolean;
}

/** Opens (creating if needed) and migrates a SQLite store. Synchronous: there is no I/O to wait on. */
export function openSqliteStore(path: string | ":memory:", options: SqliteStoreOptions = {}): Store {
  const { db, file, syncsWal, wal } = openSqliteConnection(path, options.log);
  try {
    return new SqliteStore(db, syncsWal ? `${db.name}-wal` : undefined, options.walSync ?? createWalSync(), wal && file !== "" ? file : undefined, options);
  } catch (err) {
    db.close();
    throw toStoreError(err);
  }
}

/** Most transactions sharing one COMMIT; bounds how long the batch holds reads off. */
const MAX_BATCH = 256;

interface Job {
  readonly fn: (tx: StoreTx) => Promise<unknown>;
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

class SqliteStore implements Store {
  readonly kind = "sqlite" as const;
  private readonly q: SqliteQueries;
  private readonly mutex = new Mutex();
  private readonly context = new AsyncLocalStorage<TxContext>();
  private readonly begin: Database.Statement;
  private readonly commit: Database.Statement;
  private readonly rollback: Database.Statement;
  private readonly savepoint: Database.Statement;
  private readonly releaseSavepoint: Database.Statement;
  private readonly rollbackToSavepoint: Database.Statement;
  private readonly totalChanges: Database.Statement;
  private readonly channels = createInProcessChannels();
  /** Transactions waiting for the next batch. */
  private queue: Job[] = [];
  /** A batch holds (or waits for) the mutex and will take the queue. */
  private batchPending = false;
  private transactions = 0;
  private commits = 0;
  /** close() was called: refuse new work. */
  private closing: Promise<void> | undefined;
  /** The connection is closed: queued work that reaches it fails. */
  private closed = false;

  /** The WAL file's descriptor, opened at the first commit (only with `walPath`). */
  private walFd: number | undefined;
  private readonly scrub: CredentialScrub | undefined;
  private readonly checks: boolean;

  /** `walPath`: fsync this file after each COMMIT, before acknowledging (synchronous=NORMAL). */
  constructor(
    private readonly db: Database.Database,
    private readonly walPath: string | undefined,
    private readonly walSync: WalSync,
    scrubFile: string | undefined,
    options: SqliteStoreOptions,
  ) {
    this.q = new SqliteQueries(db);
    this.checks = options.checkTransactions ?? transactionChecksByDefault();
    this.scrub =
      scrubFile === undefined
        ? undefined
        : createCredentialScrub({
            db,
            file: scrubFile,
            busyTimeoutMs: BUSY_TIMEOUT_MS,
            log: options.log,
            retryMs: options.scrubRetryMs ?? 1000,
            exclusive: (fn) => this.exclusive(fn),
            syncWal: async () => (this.walFd === undefined ? undefined : this.walSync.sync(this.walFd, false)),
          });
    this.begin = db.prepare("BEGIN IMMEDIATE");
    this.commit = db.prepare("COMMIT");
    this.rollback = db.prepare("ROLLBACK");
    this.savepoint = db.prepare("SAVEPOINT tx");
    this.releaseSavepoint = db.prepare("RELEASE tx");
    this.rollbackToSavepoint = db.prepare("ROLLBACK TO tx");
    this.totalChanges = db.prepare("SELECT total_changes()").pluck();
  }

  private checkOpen(): void {
    if (this.closing || this.closed) throw new StoreUnavailableError("the store is closed");
  }

  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    if (this.context.getStore()?.active) return Promise.reject(new Error(NESTED_TRANSACTION_MESSAGE));
    try {
      this.checkOpen();
    } catch (err) {
      return Promise.reject(err);
    }
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      if (!this.batchPending) {
        this.batchPending = true;
        void this.runBatch();
      }
    });
  }

  /**
   * Takes the mutex (a FIFO place, so reads and close() queued earlier go first), then runs what
   * has queued by then as one physical transaction. More work queued meanwhile gets a new batch.
   */
  private async runBatch(): Promise<void> {
    const release = await this.mutex.lock();
    await new Promise<void>((resolve) => setImmediate(resolve));
    const batch = this.queue.splice(0, MAX_BATCH);
    // Work queued from here on needs a batch of its own (this one's list is fixed).
    this.batchPending = false;
    try {
      if (this.closed) throw new StoreUnavailableError("the store is closed");
      await this.runJobs(batch);
    } catch (err) {
      this.rollbackQuietly();
      for (const job of batch) job.reject(err);
    } finally {
      this.idleContext();
      release();
      if (this.queue.length > 0 && !this.batchPending) {
        this.batchPending = true;
        void this.runBatch();
      }
    }
  }

  /** Runs `jobs` each in a savepoint of one transaction; settles each job once its fate is known. */
  private async runJobs(jobs: Job[]): Promise<void> {
    let done: { job: Job; result: unknown }[] = [];
    const changesBefore = this.changes();
    guarded(() => this.begin.run());
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i]!;
      if (!this.db.inTransaction) guarded(() => this.begin.run());
      guarded(() => this.savepoint.run());
      const ctx: TxContext = { active: true };
      this.q.beginTx();
      try {
        const result = await this.context.run(ctx, () => job.fn(sqliteTx(this.db, this.q, ctx)));
        ctx.active = false;
        this.q.endTx();
        guarded(() => this.releaseSavepoint.run());
        done.push({ job, result });
      } catch (err) {
        ctx.active = false;
        this.q.endTx();
        // Its writes (and, if SQLite rolled everything back, the batch's) are undone.
        this.q.discardCachedRows();
        if (this.db.inTransaction) {
          // Undo this job's writes only; the batch goes on.
          try {
            this.rollbackToSavepoint.run();
            this.releaseSavepoint.run();
          } catch {
            this.rollbackQuietly();
          }
        }
        if (!this.db.inTransaction) {
          // SQLite rolled the whole transaction back (disk full, I/O error): the earlier jobs of
          // this batch are gone too. None was acknowledged yet, so each learns it failed.
          const lost = new StoreUnavailableError("SQLite rolled the transaction back after an error in another write of its batch", { cause: err });
          for (const d of done) d.job.reject(lost);
          done = [];
        }
        job.reject(err);
      }
    }
    this.idleContext();
    if (!this.db.inTransaction) return;
    try {
      guarded(() => this.commit.run());
    } catch (err) {
      this.rollbackQuietly();
      for (const d of done) d.job.reject(err);
      return;
    }
    // A batch that wrote nothing (reads in a transaction) added nothing to the WAL to sync.
    if (this.walPath !== undefined && this.changes() !== changesBefore) {
      try {
        this.walFd ??= openSync(this.walPath, "r");
        await this.walSync.sync(this.walFd, jobs.length === 1 && this.queue.length === 0);
      } catch (err) {
        // Committed, but not known to be on disk: not acknowledged. A retry by idempotency key
        // finds the commit if it survived.
        const unavailable = new StoreUnavailableError(`SQLite: syncing the write-ahead log failed: ${(err as Error).message}`, { cause: err });
        for (const d of done) d.job.reject(unavailable);
        return;
      }
    }
    await this.scrub?.afterCommit();
    this.commits++;
    this.transactions += done.length;
    for (const d of done) d.job.resolve(d.result);
  }

  /** Runs `fn` between transactions, unless the store has closed meanwhile. */
  private async exclusive(fn: () => Promise<void>): Promise<void> {
    const release = await this.mutex.lock();
    try {
      if (!this.closed) await fn();
    } finally {
      release();
    }
  }

  /**
   * No job runs until the next batch (whose `context.run` enables the context again): while the
   * context is enabled, Node tracks it through every promise the process creates, whatever
   * creates it, so it is disabled whenever no transaction's fn can be running. `getStore()` is
   * then undefined, which is what every caller outside a transaction sees anyway.
   */
  private idleContext(): void {
    this.context.disable();
  }

  private changes(): bigint {
    return guarded(() => this.totalChanges.get() as bigint);
  }

  private rollbackQuietly(): void {
    this.q.discardCachedRows();
    if (!this.db.inTransaction) return;
    try {
      this.rollback.run();
    } catch {
      // The original error is the one worth reporting.
    }
  }

  writeStats() {
    return { transactions: this.transactions, commits: this.commits };
  }

  /**
   * A read outside any transaction: never observes another request's open transaction. One
   * from inside a transaction's fn is refused when checking, and runs in it otherwise (waiting
   * for the transaction to end would never end).
   */
  private async read<T>(f: (q: SqliteQueries) => T): Promise<T> {
    this.checkOpen();
    const inFn = this.context.getStore()?.active === true;
    if (inFn && this.checks) throw new Error(STORE_CALL_IN_TRANSACTION_MESSAGE);
    if (inFn || this.mutex.idle) return guarded(() => f(this.q));
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
  pendingOperations(sandboxId: string, dimension?: Dimension) {
    return this.read((q) => q.pendingOperations(sandboxId, dimension));
  }
  operationsOfSandbox(sandboxId: string, limit: number) {
    return this.read((q) => q.operationsOfSandbox(sandboxId, limit));
  }
  listOperationsOfSandbox(sandboxId: string, pageSize: number, pageToken: string) {
    return this.read((q) => q.listOperationsOfSandbox(sandboxId, pageSize, pageToken));
  }
  dueOperations(now: Date, limit: number, ownedBy?: string) {
    if (ownedBy !== undefined) return this.read(() => cluster.dueOwnedOperations(this.db, now, limit, ownedBy));
    return this.read((q) => q.dueOperations(now, limit));
  }
  operationsById(ids: readonly string[]) {
    return this.read(() => cluster.operationsById(this.db, ids));
  }
  // Ownership writes ride the group commit like any transaction (fn uses the shared connection).
  claimSession(owner: SessionOwnerRecord) {
    return this.transaction(async () => guarded(() => cluster.claimSession(this.db, owner)));
  }
  renewSessions(replicaId: string, sessionIds: readonly string[], leaseUntil: Date) {
    return this.transaction(async () => guarded(() => cluster.renewSessions(this.db, replicaId, sessionIds, leaseUntil)));
  }
  releaseSession(sandboxId: string, sessionId: string) {
    return this.transaction(async () => guarded(() => cluster.releaseSession(this.db, sandboxId, sessionId)));
  }
  sessionOwner(sandboxId: string) {
    return this.read(() => cluster.sessionOwner(this.db, sandboxId));
  }
  notify(channel: string, messages: readonly string[]) {
    return this.channels.notify(channel, messages);
  }
  listen(channel: string, handlers: StoreListenHandlers) {
    return this.channels.listen(channel, handlers);
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
  globalVersions() {
    return this.read((q) => q.globalVersions());
  }
  globalSettingsRevision() {
    return this.read((q) => q.globalSettingsRevision());
  }
  providerByName(workspace: string, name: string) {
    return this.read((q) => q.providerByName(workspace, name));
  }
  enforcements(sandboxIds: readonly string[]) {
    return this.read((q) => q.enforcements(sandboxIds));
  }
  sandboxEvents(sandboxId: string) {
    return this.read(() => instances.sandboxEvents(this.db, sandboxId));
  }
  supervisorBinding(credential: string) {
    return this.read(() => instances.supervisorBinding(this.db, credential));
  }
  bindSupervisor(record: SupervisorBindingRecord, replace = false) {
    return this.transaction(async () => guarded(() => instances.bindSupervisor(this.db, record, replace)));
  }

  // Rollout writes ride the group commit; reads take the read path like every other read.
  insertRollout(row: RolloutRow) {
    return this.transaction(async () => guarded(() => rollouts.insertRollout(this.db, row)));
  }
  rollout(workspace: string, id: string, withBody: boolean) {
    return this.read(() => rollouts.rollout(this.db, workspace, id, withBody));
  }
  listRollouts(query: RolloutListQuery) {
    return this.read(() => rollouts.listRollouts(this.db, query));
  }
  updateRollout(workspace: string, id: string, expectedVersion: bigint, patch: RolloutPatch) {
    return this.transaction(async () => guarded(() => rollouts.updateRollout(this.db, workspace, id, expectedVersion, patch)));
  }

  /** Waits for the running and already queued transactions, then closes the connection. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const release = await this.mutex.lock();
      try {
        // Closing the last connection checkpoints and deletes the WAL anyway; not so while
        // another connection (a backup) is open.
        this.scrub?.stop();
        if (!this.closed) await this.scrub?.afterCommit();
        this.closed = true;
        if (this.walFd !== undefined) closeSync(this.walFd);
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
