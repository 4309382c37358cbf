// The PostgreSQL store: a pg.Pool; each transaction runs BEGIN … COMMIT on one pooled client at
// READ COMMITTED, with row locks taken by reads through the transaction (see pg-queries.ts).
// BEGIN goes out with the transaction's first statement and queued writes with the next one or
// with COMMIT, as one group of named prepared statements (pg-batch.ts, pg-group.ts).
//
// Failures: serialization failures and deadlocks (40001, 40P01) re-run the whole fn, up to
// five retries with a short jittered pause, then surface as StoreConflictError; duplicate keys
// are StoreConflictError; everything else from the database or the network is
// StoreUnavailableError. A statement failure inside fn aborts the PostgreSQL transaction even if
// fn catches it, so such a transaction is never reported as committed.
//
// Durability: COMMIT returns once the server reports the commit durable per its
// synchronous_commit; if the server runs with synchronous_commit=off (acknowledging commits it
// may still lose), every transaction of this store turns it back on locally.
//
// `schema` isolates all tables in one schema (created if missing) through the connection's
// startup search_path, so every pooled connection, including reconnects, resolves it.

import { AsyncLocalStorage } from "node:async_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { FINISHED_TRANSACTION_MESSAGE, NESTED_TRANSACTION_MESSAGE, guardedTx, type TxContext } from "../codec.js";
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
import { StatementNotSentError, rolledBack, runGroup } from "./pg-group.js";
import { PlanGenerations, isStalePlan } from "./pg-plans.js";
import { casMissed } from "./pg-tx-cache.js";

export interface PostgresStoreOptions {
  /** Pooled connections (default 10). */
  readonly poolSize?: number;
  /** Schema holding the tables (default: the server's search_path, normally `public`). */
  readonly schema?: string;
}

const RETRIES = 5;
const RETRYABLE = new Set(["40001", "40P01"]);

const isRetryable = (err: unknown) => err instanceof pg.DatabaseError && err.code !== undefined && RETRYABLE.has(err.code);

/** Errors from pg calls become store errors; ours and the caller's pass unchanged. */
function toStoreError(err: unknown): unknown {
  if (err instanceof StoreConflictError || err instanceof StoreUnavailableError) return err;
  if (err instanceof pg.DatabaseError) {
    if (err.code === "23505" || isRetryable(err)) return new StoreConflictError(`PostgreSQL: ${err.message}`, { cause: err });
    return new StoreUnavailableError(`PostgreSQL: ${err.message}`, { cause: err });
  }
  if (err instanceof StatementNotSentError) return new StoreUnavailableError(`PostgreSQL: ${err.message}`, { cause: err });
  // Anything else a pg call throws is the connection: refused, reset, timed out, pool ended.
  const message = err instanceof Error ? err.message : String(err);
  return new StoreUnavailableError(`PostgreSQL unreachable: ${message}`, { cause: err });
}

interface PgTxContext extends TxContext {
  /** The first failed statement; the server has aborted the transaction. */
  failure: unknown;
  /** A failure that re-running fn may cure. */
  retry: boolean;
  /** Lock-free reads on this transaction's client, for store reads made from inside fn. */
  plain: PgQueries | undefined;
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
  return new PostgresStore(pool, forceSynchronousCommit, url, schema);
}

class PostgresStore implements Store {
  readonly kind = "postgres" as const;
  private readonly context = new AsyncLocalStorage<PgTxContext>();
  private readonly queries: PgQueries;
  private closing: Promise<void> | undefined;
  private commits = 0;
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
  ) {
    const coalescer = new Coalescer(async (stmts) => {
      for (let attempt = 0; ; attempt++) {
        const client = await pool.connect();
        let lost: Error | undefined;
        const onConnectionLost = (err: Error) => (lost = err);
        client.on("error", onConnectionLost);
        let settled: Settled;
        try {
          await this.plans.refresh(client);
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

  async transaction<T>(fn: (tx: StoreTx) => Promise<T>): Promise<T> {
    if (this.context.getStore()?.active) throw new Error(NESTED_TRANSACTION_MESSAGE);
    for (let attempt = 0; ; attempt++) {
      this.checkOpen();
      let client: pg.PoolClient;
      try {
        client = await this.pool.connect();
      } catch (err) {
        throw toStoreError(err);
      }
      // Checked out, the client has no pool listener: one of its own before the first await.
      let lostEarly: Error | undefined;
      const onLostEarly = (err: Error) => (lostEarly = err);
      client.on("error", onLostEarly);
      try {
        await this.plans.refresh(client);
        if (lostEarly) throw lostEarly;
      } catch (err) {
        client.release(err instanceof Error ? err : new Error(String(err)));
        throw toStoreError(err);
      } finally {
        client.removeListener("error", onLostEarly);
      }
      const ctx: PgTxContext = { active: true, failure: undefined, retry: false, plain: undefined };
      const send = async (stmts: readonly Stmt[]): Promise<Settled> => {
        if (!ctx.active) throw new Error(FINISHED_TRANSACTION_MESSAGE);
        const settled = await runGroup(client, stmts);
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
      };
      const begin = ["BEGIN ISOLATION LEVEL READ COMMITTED", ...(this.forceSynchronousCommit ? ["SET LOCAL synchronous_commit TO on"] : [])];
      const batch = new TxBatch(send, begin);
      const run: Run = async (text, values) => (await batch.query(text, values))[0] as never;
      const hooks: TxHooks = {
        defer: (stmt) => {
          if (!ctx.active) throw new Error(FINISHED_TRANSACTION_MESSAGE);
          batch.defer(stmt);
        },
        queryWith: (text, values, extra) => batch.query(text, values, extra),
      };
      ctx.plain = new PgQueries(run, false);
      let broken: Error | undefined;
      // A checked-out client has no pool listener: a connection lost while fn awaits something
      // else would be an unhandled 'error' event and crash the process. Record it instead; the
      // next statement fails, and the client is destroyed on release.
      const onConnectionLost = (err: Error) => {
        ctx.failure ??= err;
        broken = err;
      };
      client.on("error", onConnectionLost);
      try {
        const result = await this.inContext(ctx, () => fn(pgTx(new PgQueries(run, true, hooks), ctx)));
        if (ctx.failure !== undefined) throw toStoreError(ctx.failure);
        const done = await batch.commit();
        if (ctx.failure !== undefined) throw toStoreError(ctx.failure);
        // Defensive: the server answers ROLLBACK to COMMIT of an aborted transaction.
        if (done?.command === "ROLLBACK") throw new StoreUnavailableError("PostgreSQL rolled the transaction back");
        this.commits++;
        return result;
      } catch (caught) {
        ctx.active = false;
        // A statement that failed behind a queued write reports the abort; the write's own
        // failure (say, a duplicate key) is what the transaction failed of.
        const err = ctx.failure !== undefined && (caught instanceof StoreConflictError || caught instanceof StoreUnavailableError) ? toStoreError(ctx.failure) : caught;
        if (batch.started) {
          await client.query("ROLLBACK").catch((e: unknown) => {
            broken = e instanceof Error ? e : new Error(String(e));
          });
        }
        if (ctx.retry && attempt < RETRIES) {
          await sleep(5 + attempt * 10 + Math.random() * 20);
          continue;
        }
        if (ctx.retry) throw new StoreConflictError(`transaction still conflicted after ${RETRIES} retries`, { cause: err });
        throw err;
      } finally {
        ctx.active = false;
        client.removeListener("error", onConnectionLost);
        // A client whose connection failed or whose ROLLBACK failed is in an unknown state:
        // destroy it rather than return it to the pool.
        client.release(broken);
      }
    }
  }

  /**
   * Runs a transaction's fn in `ctx`. While the context is enabled, Node tracks it through every
   * promise the process creates, whatever creates it (about 0.6 µs more per awaited call on
   * Node 20), so it is disabled whenever no fn is running: `getStore()` is then undefined, which
   * is what every caller outside a transaction sees anyway, and the next `run` enables it again.
   */
  private async inContext<T>(ctx: PgTxContext, fn: () => Promise<T>): Promise<T> {
    this.runningFns++;
    try {
      return await this.context.run(ctx, fn);
    } finally {
      if (--this.runningFns === 0) this.context.disable();
    }
  }

  writeStats() {
    return { transactions: this.commits, commits: this.commits };
  }

  /** Reads outside a transaction use the pool; from inside fn they run on fn's own client. */
  private read<T>(f: (q: PgQueries) => Promise<T>): Promise<T> {
    const ctx = this.context.getStore();
    if (ctx?.active && ctx.plain) return f(ctx.plain);
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
