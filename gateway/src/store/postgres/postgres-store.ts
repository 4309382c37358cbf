// The PostgreSQL store: a pg.Pool; transactions run at READ COMMITTED on pooled clients, with row
// locks taken by reads through the transaction (see pg-queries.ts). Transactions that start in
// the same turn of the event loop share one PostgreSQL transaction and its COMMIT, each in its
// own savepoint (pg-group-commit.ts). BEGIN goes out with the first statement and queued writes
// with the next one or with COMMIT, as one group of named prepared statements (pg-batch.ts,
// pg-group.ts).
//
// Failures (pg-errors.ts): serialization failures and deadlocks (40001, 40P01) re-run the whole
// fn, up to five retries with a short jittered pause, then surface as StoreConflictError;
// duplicate keys are StoreConflictError; everything else from the database or the network is
// StoreUnavailableError. A statement failure inside fn aborts its transaction (back to its
// savepoint) even if fn catches it, so such a transaction is never reported as committed.
//
// Durability: COMMIT returns once the server reports the commit durable per its
// synchronous_commit; if the server runs with synchronous_commit=off (acknowledging commits it
// may still lose), every transaction of this store turns it back on locally.
//
// `schema` isolates all tables in one schema (created if missing) through the connection's
// startup search_path, so every pooled connection, including reconnects, resolves it.

import { AsyncLocalStorage } from "node:async_hooks";
import pg from "pg";
import { FINISHED_TRANSACTION_MESSAGE, NESTED_TRANSACTION_MESSAGE, STORE_CALL_IN_TRANSACTION_MESSAGE, guardedTx, transactionChecksByDefault, type TxContext } from "../codec.js";
import { MigrationError, migratePostgres } from "../migrations/migrate.js";
import type { RolloutListQuery, RolloutPatch, RolloutRow } from "../rollouts.js";
import {
  StoreConflictError,
  StoreUnavailableError,
  type Dimension,
  type SessionOwnerRecord,
  type Store,
  type StoreListenHandlers,
  type StoreTx,
  type SupervisorBindingRecord,
} from "../store.js";
import * as cluster from "./pg-cluster.js";
import * as instances from "./pg-instances.js";
import * as rollouts from "./pg-rollouts.js";
import { channelName, listenOn, notifyAll } from "./pg-notify.js";
import { postgresMigrations } from "./migrations.js";
import { PgQueries, type Run, type TxHooks } from "./pg-queries.js";
import { Coalescer, TxBatch, type Settled, type Stmt } from "./pg-batch.js";
import { rolledBack, runGroup } from "./pg-group.js";
import { runJobs, type FnOutcome, type GroupHost, type Job } from "./pg-group-commit.js";
import { PlanGenerations, isStalePlan } from "./pg-plans.js";
import { casMissed } from "./pg-tx-cache.js";
import { RETRIES, isLockTimeout, isRetryable, retryPauseMs, toStoreError } from "./pg-errors.js";

export interface PostgresStoreOptions {
  /** Pooled connections (default 10). */
  readonly poolSize?: number;
  /** Schema holding the tables (default: the server's search_path, normally `public`). */
  readonly schema?: string;
  /** Refuse store calls from inside a transaction's fn (default: transactionChecksByDefault()). */
  readonly checkTransactions?: boolean;
}

/**
 * Transactions in one group at most. A group runs its jobs one after another, so a longer one
 * makes its last job wait longer, and holds every job's locks until its COMMIT; more, shorter
 * groups run side by side on the pool's connections. Measured at 32 and 128 updates in flight
 * (bench/probe.ts, group-commit scenario): 8 to 16 did best, 32 was 10–15% slower.
 */
const MAX_GROUP = 16;

interface PgTxContext extends TxContext {
  /** The first failed statement; the server has aborted the transaction. */
  failure: unknown;
  /** A failure that re-running fn may cure. */
  retry: boolean;
}

export async function openPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const { schema, poolSize = 10 } = options;
  // Interpolated into the startup options and DDL: only plain identifiers.
  if (schema !== undefined && !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema)) {
    throw new Error(`invalid PostgreSQL schema name ${JSON.stringify(schema)}: use letters, digits and _`);
  }
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: 10_000,
    ...(schema !== undefined ? { options: `-c search_path=${schema}` } : {}),
  });
  // An idle client whose connection dies emits here; without a listener the process would crash.
  // The pool discards that client and the next checkout reconnects.
  pool.on("error", () => undefined);
  let forceSynchronousCommit = false;
  try {
    const client = await pool.connect();
    let lost: Error | undefined;
    const onConnectionLost = (err: Error) => (lost = err); // see transaction(): never unhandled
    client.on("error", onConnectionLost);
    try {
      await migratePostgres(client, postgresMigrations, schema);
      const { rows } = await client.query<{ synchronous_commit: string }>("SHOW synchronous_commit");
      forceSynchronousCommit = rows[0]?.synchronous_commit === "off";
    } finally {
      client.removeListener("error", onConnectionLost);
      client.release(lost);
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw err instanceof MigrationError ? err : toStoreError(err);
  }
  return new PostgresStore(pool, forceSynchronousCommit, url, schema, options.checkTransactions ?? transactionChecksByDefault());
}

class PostgresStore implements Store {
  readonly kind = "postgres" as const;
  private readonly context = new AsyncLocalStorage<PgTxContext>();
  private readonly queries: PgQueries;
  private closing: Promise<void> | undefined;
  private commits = 0;
  private transactions = 0;
  /** Transactions waiting for the next turn's group. */
  private queue: Job[] = [];
  private flushScheduled = false;
  private readonly host: GroupHost;
  /** Transactions whose fn is running (see inContext). */
  private runningFns = 0;
  /** Statements on the pool, outside any transaction. */
  private readonly run: Run;
  private readonly subscriptions = new Set<{ close(): Promise<void> }>();
  private readonly plans = new PlanGenerations();

  constructor(
    private readonly pool: pg.Pool,
    private readonly forceSynchronousCommit: boolean,
    /** For listening connections, which live outside the pool. */
    private readonly url: string,
    private readonly schema: string | undefined,
    /** See PostgresStoreOptions.checkTransactions: without it, no AsyncLocalStorage is used. */
    private readonly checks: boolean,
  ) {
    const coalescer = new Coalescer(async (stmts) => {
      for (let attempt = 0; ; attempt++) {
        const client = await this.checkout();
        let lost: Error | undefined;
        const onConnectionLost = (err: Error) => (lost = err);
        client.on("error", onConnectionLost);
        let settled: Settled;
        try {
          settled = await runGroup(client, stmts);
        } catch (err) {
          lost ??= err instanceof Error ? err : new Error(String(err));
          throw err;
        } finally {
          client.removeListener("error", onConnectionLost);
          client.release(lost);
        }
        if (!settled.some((s) => s.status === "rejected" && isStalePlan(s.reason))) return settled;
        this.plans.invalidate();
        if (attempt > 0) return settled;
      }
    }, rolledBack);
    const begin: Stmt[] = [{ text: "BEGIN ISOLATION LEVEL READ COMMITTED" }, ...(forceSynchronousCommit ? [{ text: "SET LOCAL synchronous_commit TO on" }] : [])];
    this.host = {
      checkout: () => this.checkout(),
      begin,
      runFn: (job, send) => this.runFn(job, send),
      writeFailed: (err, stmt) => {
        const error = stmt.cas ? casMissed(err) : err;
        if (isStalePlan(error)) {
          this.plans.invalidate();
          return { error: toStoreError(error), retry: true };
        }
        return { error: toStoreError(error), retry: isRetryable(error) };
      },
      failed: (job, error, retry) => {
        if (!retry) return job.reject(error);
        if (job.attempt >= RETRIES) return job.reject(new StoreConflictError(`transaction still conflicted after ${RETRIES} retries`, { cause: error }));
        job.attempt++;
        setTimeout(() => this.enqueue(job), retryPauseMs(job.attempt - 1));
      },
      gaveUpWaiting: (job) => {
        job.first = true;
        this.enqueue(job);
      },
      requeue: (job) => this.enqueue(job),
      toStoreError,
      committed: (jobs, commitSent) => {
        if (commitSent) this.commits++;
        this.transactions += jobs;
      },
      closing: () => this.closing !== undefined,
    };
    this.run = async (text, values) => {
      this.checkOpen();
      try {
        return (await coalescer.run(text, values)) as never;
      } catch (err) {
        throw toStoreError(err);
      }
    };
    this.queries = new PgQueries(this.run, false);
  }

  private checkOpen(): void {
    if (this.closing) throw new StoreUnavailableError("the store is closed");
  }

  /**
   * A pooled client with this process's prepared statements still valid on it. Checked out, a
   * client has no pool listener: one of its own is attached before the first await, and the
   * caller attaches its own before it lets go of this one.
   */
  private async checkout(): Promise<pg.PoolClient> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw toStoreError(err);
    }
    let lost: Error | undefined;
    const onLost = (err: Error) => (lost = err);
    client.on("error", onLost);
    try {
      await this.plans.refresh(client);
      if (lost) throw lost;
    } catch (err) {
      client.release(err instanceof Error ? err : new Error(String(err)));
      throw toStoreError(err);
    } finally {
      client.removeListener("error", onLost);
    }
    return client;
  }

  transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    if (this.checks && this.context.getStore()?.active) return Promise.reject(new Error(NESTED_TRANSACTION_MESSAGE));
    return new Promise<T>((resolve, reject) => {
      this.enqueue({ fn: fn as Job["fn"], resolve: resolve as (v: unknown) => void, reject, attempt: 0 });
    });
  }

  /** Queues a transaction; those queued in one turn of the event loop run as one group. */
  private enqueue(job: Job): void {
    this.queue.push(job);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      const queued = this.queue;
      this.queue = [];
      if (this.closing) {
        for (const job of queued) job.reject(new StoreUnavailableError("the store is closed"));
        return;
      }
      // A job that gave up waiting for a lock in a group starts a group of its own, as its first.
      let group: Job[] = [];
      for (const job of queued) {
        if (group.length > 0 && (job.first || group.length >= MAX_GROUP)) {
          void runJobs(this.host, group);
          group = [];
        }
        group.push(job);
      }
      if (group.length > 0) void runJobs(this.host, group);
    });
  }

  /** Runs one transaction's fn, its statements going out through `send` (see pg-group-commit.ts). */
  private async runFn(job: Job, send: (stmts: readonly Stmt[]) => Promise<Settled>): Promise<FnOutcome> {
    const ctx: PgTxContext = { active: true, failure: undefined, retry: false };
    const batch = new TxBatch(async (stmts) => {
      if (!ctx.active) throw new Error(FINISHED_TRANSACTION_MESSAGE);
      let settled: Settled;
      try {
        settled = await send(stmts);
      } catch (err) {
        // The group could not go on (the connection, a failed savepoint): nothing of fn commits.
        ctx.failure ??= err;
        throw toStoreError(err);
      }
      return settled.map((s, i) => {
        if (s.status === "fulfilled") return s;
        const err = stmts[i]!.cas ? casMissed(s.reason) : s.reason;
        ctx.failure ??= err;
        if (isRetryable(err)) ctx.retry = true;
        if (isStalePlan(err)) {
          this.plans.invalidate();
          ctx.retry = true;
        }
        return { status: "rejected", reason: toStoreError(err) };
      });
    });
    const run: Run = async (text, values) => (await batch.query(text, values))[0] as never;
    const hooks: TxHooks = {
      defer: (stmt) => {
        if (!ctx.active) throw new Error(FINISHED_TRANSACTION_MESSAGE);
        batch.defer(stmt);
      },
      queryWith: (text, values, extra) => batch.query(text, values, extra),
    };
    try {
      const fn = job.fn as (tx: StoreTx) => Promise<unknown>;
      const result = await this.inContext(ctx, () => fn(pgTx(new PgQueries(run, true, hooks), ctx)));
      if (ctx.failure !== undefined) throw toStoreError(ctx.failure);
      ctx.active = false;
      return { ok: true, result, tail: batch.takeDeferred() };
    } catch (caught) {
      ctx.active = false;
      // A statement that failed behind a queued write reports the abort; the write's own
      // failure (say, a duplicate key) is what the transaction failed of.
      const error = ctx.failure !== undefined && (caught instanceof StoreConflictError || caught instanceof StoreUnavailableError) ? toStoreError(ctx.failure) : caught;
      return { ok: false, error, retry: ctx.retry, lockTimedOut: isLockTimeout(ctx.failure) };
    }
  }

  /**
   * Runs a transaction's fn, in `ctx` when checking (see checkTransactions). While the context is
   * enabled, Node tracks it through every promise the process creates, whatever creates it (about
   * 0.6 µs more per awaited call on Node 20), so it is disabled whenever no fn is running:
   * `getStore()` is then undefined, which is what every caller outside a transaction sees anyway,
   * and the next `run` enables it again. Under load some fn is nearly always running, hence no
   * context at all unless checking.
   */
  private async inContext<T>(ctx: PgTxContext, fn: () => Promise<T>): Promise<T> {
    if (!this.checks) return fn();
    this.runningFns++;
    try {
      return await this.context.run(ctx, fn);
    } finally {
      if (--this.runningFns === 0) this.context.disable();
    }
  }

  writeStats() {
    return { transactions: this.transactions, commits: this.commits };
  }

  /** Reads use the pool; one from inside a transaction's fn is refused when checking. */
  private read<T>(f: (q: PgQueries) => Promise<T>): Promise<T> {
    if (this.checks && this.context.getStore()?.active) return Promise.reject(new Error(STORE_CALL_IN_TRANSACTION_MESSAGE));
    return f(this.queries);
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
    if (ownedBy !== undefined) return cluster.dueOwnedOperations(this.run, now, limit, ownedBy);
    return this.read((q) => q.dueOperations(now, limit));
  }
  operationsById(ids: readonly string[]) {
    return cluster.operationsById(this.run, ids);
  }
  claimSession(owner: SessionOwnerRecord) {
    return cluster.claimSession(this.run, owner);
  }
  renewSessions(replicaId: string, sessionIds: readonly string[], leaseUntil: Date) {
    return cluster.renewSessions(this.run, replicaId, sessionIds, leaseUntil);
  }
  releaseSession(sandboxId: string, sessionId: string) {
    return cluster.releaseSession(this.run, sandboxId, sessionId);
  }
  sessionOwner(sandboxId: string) {
    return cluster.sessionOwner(this.run, sandboxId);
  }
  notify(channel: string, messages: readonly string[]) {
    return notifyAll(this.run, channelName(channel, this.schema), messages);
  }
  async listen(channel: string, handlers: StoreListenHandlers) {
    this.checkOpen();
    const name = channelName(channel, this.schema);
    let sub: { close(): Promise<void> };
    try {
      sub = await listenOn(this.url, name, handlers);
    } catch (err) {
      throw toStoreError(err);
    }
    this.subscriptions.add(sub);
    return {
      close: async () => {
        this.subscriptions.delete(sub);
        await sub.close();
      },
    };
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
    return instances.sandboxEvents(this.run, sandboxId);
  }
  supervisorBinding(credential: string) {
    return instances.supervisorBinding(this.run, credential);
  }
  bindSupervisor(record: SupervisorBindingRecord, replace = false) {
    return instances.bindSupervisor(this.run, record, replace);
  }

  // Each rollout call is one statement on the pool (pg-rollouts.ts), atomic on its own.
  insertRollout(row: RolloutRow) {
    return rollouts.insertRollout(this.run, row);
  }
  rollout(workspace: string, id: string, withBody: boolean) {
    return rollouts.rollout(this.run, workspace, id, withBody);
  }
  listRollouts(query: RolloutListQuery) {
    return rollouts.listRollouts(this.run, query);
  }
  updateRollout(workspace: string, id: string, expectedVersion: bigint, patch: RolloutPatch) {
    return rollouts.updateRollout(this.run, workspace, id, expectedVersion, patch);
  }

  /** Ends the pool once checked-out clients are released. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await Promise.all([...this.subscriptions].map((s) => s.close()));
      this.subscriptions.clear();
      await this.pool.end().catch(() => undefined);
    })();
    return this.closing;
  }
}

/** Every method delegates to the locking queries of one transaction. */
function pgTx(q: PgQueries, ctx: TxContext): StoreTx {
  return guardedTx(q, async (call) => {
    if (!ctx.active) throw new Error(FINISHED_TRANSACTION_MESSAGE);
    return call();
  });
}
