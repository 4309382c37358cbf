// Group commit on PostgreSQL. Transactions that start in the same turn of the event loop run one
// after another in one PostgreSQL transaction on one pooled connection and share its COMMIT, as
// SQLite's do (sqlite-store.ts): each runs inside its own SAVEPOINT, so one that fails (its fn
// throws, a statement of its own is refused, a write of its own fails when it reaches the
// server) is rolled back to that savepoint alone and the others go on. None is acknowledged
// before the COMMIT that made it durable returns; a failed one is told at once (nothing of it
// can commit). A re-runnable failure (a serialization failure, a deadlock, a stale plan) queues
// the transaction again, as a transaction alone would have re-run its fn.
//
// What it saves: a transaction alone costs a pooled connection, two round trips (its lock reads,
// then its writes with COMMIT) and a COMMIT. In a group each job costs one round trip: its
// queued writes and RELEASE go out in front of the next job's first statement, and the last
// job's with the one COMMIT.
//
// Serial, not interleaved: a job starts after the one before it has finished, so it sees that
// job's writes (their transaction is the same) and jobs of one group never need each other's
// row locks. Locks taken by a group are held until its COMMIT, as a single transaction's are.
// A group of one sends no SAVEPOINT: it is exactly a transaction alone.
//
// Deadlocks: a job waiting for a lock holds its group's earlier locks, so two groups can wait
// for each other where two transactions alone would not (each locks one sandbox), and the
// server breaks such a cycle only after deadlock_timeout (1 s). So only a group's first job
// waits for locks as a transaction alone does; the others give up after LOCK_WAIT_MS, are rolled
// back to their savepoint and queued again to run first in a group of their own making, where
// they wait as long as it takes. Giving up does not count as a re-run.

import pg from "pg";
import type { Settled, Stmt } from "./pg-batch.js";
import { runGroup } from "./pg-group.js";
import { isLockTimeout } from "./pg-errors.js";

/** A transaction waiting to run. */
export interface Job {
  readonly fn: (tx: never) => Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  /** Runs so far that ended in a re-runnable failure. */
  attempt: number;
  /** It gave up waiting for a lock in a group: it runs first in its next one. */
  first?: boolean;
}

/** What became of one job's fn. */
export type FnOutcome =
  | { readonly ok: true; readonly result: unknown; /** Queued writes not yet sent. */ readonly tail: readonly Stmt[] }
  | { readonly ok: false; readonly error: unknown; readonly retry: boolean; /** A statement of its own gave up waiting for a lock. */ readonly lockTimedOut: boolean };

/** What a group needs of the store. */
export interface GroupHost {
  /** A pooled client, ready for statements (the caller releases it through `release`). */
  checkout(): Promise<pg.PoolClient>;
  /** Sent before the group's first statement. */
  readonly begin: readonly Stmt[];
  /** Runs a job's fn with its statements going through `send`. */
  runFn(job: Job, send: (stmts: readonly Stmt[]) => Promise<Settled>): Promise<FnOutcome>;
  /** A job's queued write refused by the server, as that job's failure. */
  writeFailed(err: unknown, stmt: Stmt): { readonly error: unknown; readonly retry: boolean };
  /** A failed job: re-queued if `retry` allows, rejected otherwise. */
  failed(job: Job, error: unknown, retry: boolean): void;
  /** A job that gave up waiting for a lock: queued again, to run first in its group. */
  gaveUpWaiting(job: Job): void;
  /** A job that never ran (its group could not go on): queued again as it was. */
  requeue(job: Job): void;
  /** Errors of the group itself (connection, COMMIT) as the store reports them. */
  toStoreError(err: unknown): unknown;
  /** A COMMIT returned, making `jobs` transactions durable. */
  committed(jobs: number): void;
}

const SAVEPOINT: Stmt = { text: "SAVEPOINT osc_job" };
const RELEASE: Stmt = { text: "RELEASE SAVEPOINT osc_job" };
const ROLLBACK_TO: Stmt = { text: "ROLLBACK TO SAVEPOINT osc_job" };
const COMMIT: Stmt = { text: "COMMIT" };
/** How long a group's jobs after the first wait for a lock. */
export const LOCK_WAIT_MS = 20;
const BRIEF_LOCK_WAITS: Stmt = { text: `SET LOCAL lock_timeout = '${LOCK_WAIT_MS}ms'` };

/** A job as its group runs it. */
interface Run {
  readonly job: Job;
  result?: unknown;
}

/** A statement waiting to go out, and the job it belongs to (none: the group's own). */
interface Item {
  readonly stmt: Stmt;
  readonly owner: Run | undefined;
  /** BEGIN, SAVEPOINT, RELEASE, ROLLBACK TO, COMMIT: a failure of one ends the group. */
  readonly control: boolean;
}

/** Whether the server refused the statement (rather than the connection failing). */
const refused = (err: unknown) => err instanceof pg.DatabaseError;

/** Runs `jobs` as one PostgreSQL transaction; settles each job once its fate is known. */
export async function runJobs(host: GroupHost, jobs: readonly Job[]): Promise<void> {
  let client: pg.PoolClient;
  try {
    client = await host.checkout();
  } catch (err) {
    for (const job of jobs) job.reject(err);
    return;
  }
  // A checked-out client has no pool listener: a lost connection would crash the process.
  let broken: Error | undefined;
  const onLost = (err: Error) => (broken ??= err);
  client.on("error", onLost);
  const savepoints = jobs.length > 1;
  const control = (stmt: Stmt, owner?: Run): Item => ({ stmt, owner, control: true });
  /** What goes out in front of the next statement. */
  let pending: Item[] = host.begin.map((stmt) => control(stmt));
  let started = false;
  let committed = false;
  /** Jobs whose fn succeeded, waiting for the COMMIT. */
  let finished: Run[] = [];
  /** What ends the group for every job still in it. */
  let fatal: unknown;

  /**
   * A finished job's queued write failed at `f`: that job fails, and (with savepoints) its
   * writes are undone and what the server skipped behind it is sent again. False: the group
   * cannot go on.
   */
  const unwind = (items: readonly Item[], f: number, reason: unknown, skip: Run | undefined): boolean => {
    const item = items[f]!;
    const owner = item.owner;
    if (item.control || owner === undefined || !finished.includes(owner) || !refused(reason)) return false;
    finished = finished.filter((r) => r !== owner);
    if (isLockTimeout(reason) && owner.job !== jobs[0]) host.gaveUpWaiting(owner.job);
    else {
      const { error, retry } = host.writeFailed(reason, item.stmt);
      host.failed(owner.job, error, retry);
    }
    if (!savepoints) return false;
    // Behind it, the server skipped the rest: other finished jobs' writes go again, and so does
    // the running job's SAVEPOINT (its statements are sent again by the caller).
    const rest = items.slice(f + 1).filter((i) => i.owner !== owner && !(i.owner === skip && !i.control) && i.stmt !== COMMIT);
    pending = [control(ROLLBACK_TO), control(RELEASE), ...rest];
    return true;
  };

  /** Sends `stmts` of `run` with what is pending; answers `stmts`' results. */
  const send = async (run: Run, stmts: readonly Stmt[]): Promise<Settled> => {
    for (;;) {
      if (fatal !== undefined) throw fatal;
      const items = [...pending, ...stmts.map((stmt): Item => ({ stmt, owner: run, control: false }))];
      pending = [];
      started = true;
      const settled = await runGroup(client, items.map((i) => i.stmt));
      const f = settled.findIndex((s) => s.status === "rejected");
      if (f < 0 || (items[f]!.owner === run && !items[f]!.control)) return settled.slice(items.length - stmts.length);
      const reason = (settled[f] as PromiseRejectedResult).reason;
      if (!unwind(items, f, reason, run)) {
        fatal ??= reason;
        throw reason;
      }
    }
  };

  let next = 0;
  try {
    for (; next < jobs.length && fatal === undefined && broken === undefined; next++) {
      const run: Run = { job: jobs[next]! };
      if (savepoints && next === 1) pending.push(control(BRIEF_LOCK_WAITS));
      const mark = pending.length;
      if (savepoints) pending.push(control(SAVEPOINT, run));
      let sent = false;
      const outcome = await host.runFn(run.job, (stmts) => {
        sent = true;
        return send(run, stmts);
      });
      if (outcome.ok) {
        if (!sent && outcome.tail.length === 0) pending.length = mark; // nothing of it to send
        else pending.push(...outcome.tail.map((stmt): Item => ({ stmt, owner: run, control: false })), ...(savepoints ? [control(RELEASE, run)] : []));
        run.result = outcome.result;
        finished.push(run);
        continue;
      }
      // Its statements, if any reached the server, are undone; nothing queued of it goes out.
      if (!sent) pending.length = mark;
      else if (savepoints && fatal === undefined) pending.push(control(ROLLBACK_TO), control(RELEASE));
      if (outcome.lockTimedOut && next > 0 && fatal === undefined) host.gaveUpWaiting(run.job);
      else host.failed(run.job, outcome.error, outcome.retry);
    }
    while (fatal === undefined && broken === undefined && finished.length > 0) {
      if (!started && pending.every((i) => i.owner === undefined)) {
        // Nothing was read or written: there is nothing to commit.
        committed = true;
        break;
      }
      const items = [...pending, control(COMMIT)];
      pending = [];
      started = true;
      const settled = await runGroup(client, items.map((i) => i.stmt));
      const f = settled.findIndex((s) => s.status === "rejected");
      if (f < 0) {
        const done = settled[settled.length - 1] as PromiseFulfilledResult<{ command: string }>;
        // Defensive: the server answers ROLLBACK to COMMIT of an aborted transaction.
        if (done.value.command === "ROLLBACK") fatal = new Error("PostgreSQL rolled the transaction back");
        else committed = true;
        break;
      }
      const reason = (settled[f] as PromiseRejectedResult).reason;
      if (!unwind(items, f, reason, undefined)) {
        // Without savepoints the one job has already been told (its write failed).
        if (savepoints || finished.length > 0) fatal = reason;
        break;
      }
    }
  } catch (err) {
    fatal ??= err;
  } finally {
    client.removeListener("error", onLost);
    if (started && !committed) {
      await client.query("ROLLBACK").catch((e: unknown) => {
        broken ??= e instanceof Error ? e : new Error(String(e));
      });
    }
    client.release(broken);
  }
  if (committed) {
    host.committed(finished.length);
    for (const run of finished) run.job.resolve(run.result);
  } else {
    const err = host.toStoreError(fatal ?? broken ?? new Error("the transaction did not commit"));
    for (const run of finished) run.job.reject(err);
  }
  // Jobs the group never reached ran nothing: they go again.
  for (const job of jobs.slice(next)) host.requeue(job);
}
