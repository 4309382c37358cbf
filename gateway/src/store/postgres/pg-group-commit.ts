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
// server breaks such a cycle only after deadlock_timeout (1 s). So only jobs that start before
// the group holds any lock wait as a transaction alone does; the others give up after
// LOCK_WAIT_MS, are rolled back to their savepoint and queued again to run first in a group of
// their own, where they wait as long as it takes. Giving up does not count as a re-run. A job
// whose fn takes long (SLOW_JOB_MS) sends the jobs behind it, which have not started, to other
// groups.

import pg from "pg";
import type { Settled, Stmt } from "./pg-batch.js";
import { StatementNotSentError, runGroup } from "./pg-group.js";
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
  /** `jobs` transactions are durable (`commitSent`: by a COMMIT; false: they wrote nothing). */
  committed(jobs: number, commitSent: boolean): void;
  /** The store is closing: jobs not yet started are not started. */
  closing(): boolean;
}

const SAVEPOINT: Stmt = { text: "SAVEPOINT osc_job" };
const RELEASE: Stmt = { text: "RELEASE SAVEPOINT osc_job" };
const ROLLBACK_TO: Stmt = { text: "ROLLBACK TO SAVEPOINT osc_job" };
const COMMIT: Stmt = { text: "COMMIT" };
/** How long a group's jobs after the first wait for a lock. */
export const LOCK_WAIT_MS = 20;
/**
 * A job whose fn runs longer than this (it waits for a lock, or for something else) sends the
 * jobs behind it to other groups: they have not started, and must not wait for it (a fn that
 * waits for a later transaction of its own group would otherwise never finish).
 */
export const SLOW_JOB_MS = 100;
const BRIEF_LOCK_WAITS: Stmt = { text: `SET LOCAL lock_timeout = '${LOCK_WAIT_MS}ms'` };

/** A job as its group runs it. */
interface Run {
  readonly job: Job;
  result?: unknown;
  /** It started after the group held locks: its lock waits were brief. */
  brief: boolean;
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

const firstRejected = (settled: Settled) => settled.findIndex((s) => s.status === "rejected");

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
  const own = (run: Run) => (stmt: Stmt): Item => ({ stmt, owner: run, control: false });
  /** What goes out in front of the next statement. */
  let pending: Item[] = host.begin.map((stmt) => control(stmt));
  let started = false;
  let committed = false;
  let briefWaits = false;
  /** Jobs whose SAVEPOINT the server has run (and not released). */
  const opened = new Set<Run>();
  /** Jobs whose fn succeeded, waiting for the COMMIT. */
  let finished: Run[] = [];
  /** What ends the group for every job still in it. */
  let fatal: unknown;

  /** One exchange; notes which jobs' savepoints the server ran. */
  const exchange = async (items: readonly Item[]): Promise<Settled> => {
    started = true;
    const settled = await runGroup(client, items.map((i) => i.stmt));
    const f = firstRejected(settled);
    const ran = f < 0 ? items.length : settled.some((s) => s.status === "rejected" && s.reason instanceof StatementNotSentError) ? 0 : f;
    for (const item of items.slice(0, ran)) if (item.stmt === SAVEPOINT && item.owner) opened.add(item.owner);
    return settled;
  };

  /** A finished job failed: it is told, and none of it is committed. */
  const failFinished = (owner: Run, reason: unknown, stmt: Stmt) => {
    finished = finished.filter((r) => r !== owner);
    if (isLockTimeout(reason) && owner.brief) return host.gaveUpWaiting(owner.job);
    const { error, retry } = host.writeFailed(reason, stmt);
    host.failed(owner.job, error, retry);
  };

  /**
   * A finished job's queued write failed at `f`: that job fails, and (with savepoints) its
   * writes are undone and what the server skipped behind it is sent again. False: the group
   * cannot go on.
   */
  const unwind = (items: readonly Item[], f: number, reason: unknown, skip: Run | undefined): boolean => {
    const item = items[f]!;
    const owner = item.owner;
    if (item.control || owner === undefined || !finished.includes(owner) || !refused(reason)) return false;
    failFinished(owner, reason, item.stmt);
    if (!savepoints) return false;
    opened.delete(owner);
    // Behind it, the server skipped the rest: other finished jobs' writes go again, and so does
    // the running job's SAVEPOINT (its statements are sent again by the caller).
    const rest = items.slice(f + 1).filter((i) => i.owner !== owner && !(i.owner === skip && !i.control) && i.stmt !== COMMIT);
    pending = [control(ROLLBACK_TO), control(RELEASE), ...rest];
    return true;
  };

  /**
   * Nothing went out: a value of the statement at `f` could not be converted. Its job fails
   * (its savepoint, if the server ran it, rolled back in place of its RELEASE) and the rest
   * waits as it was. The running job's statements are left out (the caller reports them).
   */
  const unsent = (items: readonly Item[], f: number, reason: unknown, skip: Run | undefined): boolean => {
    const owner = items[f]!.owner;
    if (owner === undefined || items[f]!.control) return false;
    const others = (i: Item) => !(i.owner === skip && !i.control);
    if (owner === skip) {
      pending = items.filter(others);
      return true;
    }
    if (!finished.includes(owner)) return false;
    failFinished(owner, reason, items[f]!.stmt);
    const undo = opened.delete(owner) ? [control(ROLLBACK_TO), control(RELEASE)] : [];
    pending = items.filter(others).flatMap((i) => (i.owner !== owner ? [i] : i.stmt === RELEASE ? undo : []));
    return true;
  };

  /** Sends of the running job, one at a time (a fn may issue statements side by side). */
  let chain: Promise<unknown> = Promise.resolve();
  const send = (run: Run, stmts: readonly Stmt[]): Promise<Settled> => {
    const turn = chain.then(() => sendNow(run, stmts));
    chain = turn.catch(() => undefined);
    return turn;
  };
  const sendNow = async (run: Run, stmts: readonly Stmt[]): Promise<Settled> => {
    for (;;) {
      if (fatal !== undefined) throw fatal;
      const items = [...pending, ...stmts.map(own(run))];
      pending = [];
      const settled = await exchange(items);
      const f = firstRejected(settled);
      const mine = settled.slice(items.length - stmts.length);
      if (f < 0) return mine;
      const notSent = settled.findIndex((s) => s.status === "rejected" && s.reason instanceof StatementNotSentError);
      if (notSent >= 0) {
        const reason = (settled[notSent] as PromiseRejectedResult).reason;
        if (!unsent(items, notSent, reason, run)) throw (fatal ??= reason);
        if (items[notSent]!.owner === run) return mine.map(() => ({ status: "rejected", reason }));
        continue;
      }
      if (items[f]!.owner === run && !items[f]!.control) return mine;
      const reason = (settled[f] as PromiseRejectedResult).reason;
      if (!unwind(items, f, reason, run)) throw (fatal ??= reason);
    }
  };

  /** Jobs from here on are not this group's (see SLOW_JOB_MS). */
  let limit = jobs.length;
  let next = 0;
  try {
    for (; next < limit && fatal === undefined && broken === undefined && !host.closing(); next++) {
      // Once the group holds locks, a job waits for one only briefly.
      if (savepoints && !briefWaits && (started || pending.some((i) => !i.control))) {
        pending.push(control(BRIEF_LOCK_WAITS));
        briefWaits = true;
      }
      const run: Run = { job: jobs[next]!, brief: briefWaits };
      run.job.first = false;
      if (savepoints) pending.push(control(SAVEPOINT, run));
      let sent = false;
      // No timer where no job waits behind this one (a group of one, or its last job).
      const slow =
        next + 1 < limit
          ? setTimeout(() => {
              const behind = jobs.slice(next + 1, limit);
              limit = Math.min(limit, next + 1);
              for (const job of behind) host.requeue(job);
            }, SLOW_JOB_MS)
          : undefined;
      const outcome = await host.runFn(run.job, (stmts) => {
        sent = true;
        return send(run, stmts);
      }).finally(() => clearTimeout(slow));
      await chain; // a send the fn did not wait for
      if (outcome.ok && fatal === undefined) {
        const tail = outcome.tail.map(own(run));
        if (!sent && tail.length === 0) pending = pending.filter((i) => i.owner !== run); // nothing of it to send
        else pending.push(...tail, ...(savepoints ? [control(RELEASE, run)] : []));
        run.result = outcome.result;
        finished.push(run);
        continue;
      }
      // What reached the server of it is undone; nothing queued of it goes out.
      pending = pending.filter((i) => i.owner !== run);
      if (opened.delete(run) && fatal === undefined) pending.push(control(ROLLBACK_TO), control(RELEASE));
      if (outcome.ok) host.failed(run.job, host.toStoreError(fatal), false);
      else if (outcome.lockTimedOut && run.brief && fatal === undefined) host.gaveUpWaiting(run.job);
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
      const settled = await exchange(items);
      const f = firstRejected(settled);
      if (f < 0) {
        const done = settled[settled.length - 1] as PromiseFulfilledResult<{ command: string }>;
        // Defensive: the server answers ROLLBACK to COMMIT of an aborted transaction.
        if (done.value.command === "ROLLBACK") fatal = new Error("PostgreSQL rolled the transaction back");
        else committed = true;
        break;
      }
      const notSent = settled.findIndex((s) => s.status === "rejected" && s.reason instanceof StatementNotSentError);
      const at = notSent >= 0 ? notSent : f;
      const reason = (settled[at] as PromiseRejectedResult).reason;
      if (!(notSent >= 0 ? unsent(items, at, reason, undefined) : unwind(items, at, reason, undefined))) {
        // Without savepoints the one job has already been told (its write failed).
        if (savepoints || finished.length > 0) fatal = reason;
        break;
      }
      pending = pending.filter((i) => i.stmt !== COMMIT);
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
    host.committed(finished.length, started);
    for (const run of finished) run.job.resolve(run.result);
  } else {
    const err = host.toStoreError(fatal ?? broken ?? new Error("the transaction did not commit"));
    for (const run of finished) run.job.reject(err);
  }
  // Jobs the group never reached ran nothing: they go again.
  for (const job of jobs.slice(next, limit)) host.requeue(job);
}
