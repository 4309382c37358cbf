// Fewer round trips per PostgreSQL transaction, and no statement parsed or planned twice on one
// connection. Statements go out in groups (pg-group.ts): each a named prepared statement per
// distinct text (so the server parses and plans each shape once per connection), the whole group
// one socket write and one answer cycle. A transaction's client sends:
//
// - BEGIN (and SET LOCAL) together with its first statement, and nothing at all when fn made no
//   store call (pg-group-commit.ts);
// - writes whose answer the caller does not need (inserts, status updates, upserts) not at once
//   but together with the next statement that needs an answer, or with what follows fn (the
//   next transaction of its group, or COMMIT);
// - every such group as one exchange: one round trip. The first error aborts the transaction and
//   the server skips the statements behind it, so the group's error is that statement's.
//
// Statements outside transactions issued in one turn of the event loop share one pooled
// connection and one round trip the same way (Coalescer). Such a group is one implicit
// transaction: if the server refuses any statement, all are rolled back and each runs again
// alone, so every caller gets its own answer or error; if the outcome is unknown (the connection
// went) or the server was cancelling (a timeout), nothing runs again and every caller gets the
// error.

import type pg from "pg";

export type QueryResult = pg.QueryResult<pg.QueryResultRow>;

/** One statement: its text with `$n` parameters, and their values. */
export interface Stmt {
  readonly text: string;
  readonly values?: readonly unknown[];
  /**
   * A compare-and-set whose miss must abort the transaction: its text divides by the number of
   * rows it changed, and the sender turns that division by zero into a serialization failure.
   */
  readonly cas?: boolean;
}

/** The name of the prepared statement for `text` (one per distinct text, process-wide). */
const names = new Map<string, string>();
const MAX_NAMES = 2000;

export function preparedName(text: string): string | undefined {
  let name = names.get(text);
  if (name === undefined) {
    // Texts are built from a bounded set of shapes; the bound only guards against a runaway.
    if (names.size >= MAX_NAMES) return undefined;
    name = `osc_${names.size}`;
    names.set(text, name);
  }
  return name;
}

/** Settled results of a group of statements, in order. */
export type Settled = PromiseSettledResult<QueryResult>[];

/** Runs statements as one group on the transaction's client (errors recorded by the caller's wrapper). */
export type RunGroup = (stmts: readonly Stmt[]) => Promise<Settled>;

/** The results of a group, or the first error in order. */
function resultsOf(settled: Settled): QueryResult[] {
  const results: QueryResult[] = [];
  for (const s of settled) {
    if (s.status === "rejected") throw s.reason;
    results.push(s.value);
  }
  return results;
}

/**
 * The statements of one transaction's fn and when they go out: a write whose answer nobody
 * waits for is queued and goes out in front of the fn's next statement, in the same round trip;
 * what is still queued when fn returns is its tail, which the group sends with what follows
 * (pg-group-commit.ts).
 */
export class TxBatch {
  private deferred: Stmt[] = [];

  constructor(private readonly runGroup: RunGroup) {}

  /** Queues a write whose answer nobody waits for; it goes out with the next statement. */
  defer(stmt: Stmt): void {
    this.deferred.push(stmt);
  }

  /** The queued writes, no longer queued here. */
  takeDeferred(): Stmt[] {
    const taken = this.deferred;
    this.deferred = [];
    return taken;
  }

  /**
   * Runs one statement and returns its result; whatever is queued goes first, in the same round
   * trip. `extra` statements (prefetches) follow it in that round trip; their results come back
   * after the statement's.
   */
  async query(text: string, values?: readonly unknown[], extra: readonly Stmt[] = []): Promise<QueryResult[]> {
    const head = this.takeDeferred();
    const all = [...head, { text, ...(values ? { values } : {}) }, ...extra];
    const results = resultsOf(await this.runGroup(all));
    return results.slice(head.length);
  }
}

interface Queued {
  readonly stmt: Stmt;
  resolve(r: QueryResult): void;
  reject(err: unknown): void;
}

/**
 * Statements outside transactions (reads, notifications) issued in the same turn of the event
 * loop go to the server together: one group on one pooled connection, instead of one checkout
 * and round trip each. If any of them fails, the group's implicit transaction did not commit:
 * when `rolledBack` says the failure proves that, each runs again alone, so that every caller
 * gets its own answer or error; otherwise every caller gets the failure.
 */
export class Coalescer {
  private queue: Queued[] = [];
  private scheduled = false;

  /** `runAll` sends the statements as one group on one pooled connection. */
  constructor(
    private readonly runAll: (stmts: readonly Stmt[]) => Promise<Settled>,
    private readonly rolledBack: (failure: unknown) => boolean,
  ) {}

  run(text: string, values: readonly unknown[] | undefined): Promise<QueryResult> {
    return new Promise<QueryResult>((resolve, reject) => {
      this.queue.push({ stmt: { text, ...(values ? { values } : {}) }, resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.queue;
    this.queue = [];
    const answer = (q: Queued, s: PromiseSettledResult<QueryResult>) => (s.status === "fulfilled" ? q.resolve(s.value) : q.reject(s.reason));
    const alone = (q: Queued) =>
      this.runAll([q.stmt]).then(
        (settled) => answer(q, settled[0]!),
        (err: unknown) => q.reject(err),
      );
    if (batch.length === 1) return void alone(batch[0]!);
    this.runAll(batch.map((q) => q.stmt)).then(
      (settled) => {
        const failures = settled.filter((s): s is PromiseRejectedResult => s.status === "rejected").map((s) => s.reason);
        if (failures.length === 0) batch.forEach((q, i) => answer(q, settled[i]!));
        else if (failures.every(this.rolledBack)) for (const q of batch) void alone(q);
        else for (const q of batch) q.reject(failures[0]);
      },
      (err: unknown) => {
        for (const q of batch) q.reject(err);
      },
    );
  }
}
