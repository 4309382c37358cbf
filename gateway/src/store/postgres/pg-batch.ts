// Fewer round trips per PostgreSQL transaction, and no statement parsed or planned twice on one
// connection. Every pooled connection runs in node-postgres's pipeline mode: statements are
// written one after another without waiting for answers, each as its own Parse/Bind/Execute/Sync
// (a named prepared statement per distinct text, so the server parses and plans each shape once
// per connection), and answered in order. A transaction's client sends:
//
// - BEGIN (and SET LOCAL) together with its first statement, and nothing at all when fn made no
//   store call;
// - writes whose answer the caller does not need (inserts, status updates, upserts) not at once
//   but together with the next statement that needs an answer, or with COMMIT;
// - every such group in one write to the socket: one round trip. Inside BEGIN … COMMIT the first
//   error aborts the transaction; the statements behind it fail as aborted (and a COMMIT behind
//   it answers ROLLBACK), so the group's error is its first statement's.
//
// Statements outside transactions issued in one turn of the event loop share one pooled
// connection and one round trip the same way (Coalescer); each is its own implicit transaction
// there, so one failing never touches the others.

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

/**
 * The query config of `stmt` for node-postgres: a named prepared statement when it has
 * parameters, else a plain query (BEGIN, COMMIT).
 */
export function queryConfig(stmt: Stmt): pg.QueryConfig {
  const { text, values } = stmt;
  if (!values || values.length === 0) return { text };
  const name = preparedName(text);
  return name ? { name, text, values: values as unknown[] } : { text, values: values as unknown[] };
}

/**
 * Sends statements on the transaction's pipelined client, in order and in one write to the
 * socket; one promise each (errors recorded by the caller's wrapper).
 */
export type SendAll = (stmts: readonly Stmt[]) => Promise<QueryResult>[];

/**
 * Runs `submit` (which writes statements to `client`) with the client's socket corked, so that
 * what node-postgres writes per statement leaves in one write: one system call and one wake-up
 * of the server instead of one per statement.
 */
export function inOneWrite<T>(client: pg.ClientBase, submit: () => T): T {
  const stream = (client as unknown as { connection?: { stream?: { cork?(): void; uncork?(): void } } }).connection?.stream;
  stream?.cork?.();
  try {
    return submit();
  } finally {
    stream?.uncork?.();
  }
}

/** Waits for every statement of a group, then returns their results or the first error in order. */
async function settleInOrder(sent: readonly Promise<QueryResult>[]): Promise<QueryResult[]> {
  const settled = await Promise.allSettled(sent);
  const results: QueryResult[] = [];
  for (const s of settled) {
    if (s.status === "rejected") throw s.reason;
    results.push(s.value);
  }
  return results;
}

/** The statements of one transaction and when they go out. */
export class TxBatch {
  private begun = false;
  private deferred: Stmt[] = [];

  constructor(
    private readonly sendAll: SendAll,
    /** Sent before the first statement. */
    private readonly begin: readonly string[],
  ) {}

  /** Whether anything reached the server (so there is a transaction to end). */
  get started(): boolean {
    return this.begun;
  }

  /** Queues a write whose answer nobody waits for; it goes out with the next statement. */
  defer(stmt: Stmt): void {
    this.deferred.push(stmt);
  }

  /** What goes out in front of the next statement: BEGIN the first time, then queued writes. */
  private takeHead(): Stmt[] {
    const head = this.begun ? this.deferred : [...this.begin.map((text) => ({ text })), ...this.deferred];
    this.begun = true;
    this.deferred = [];
    return head;
  }

  /**
   * Runs one statement and returns its result; whatever is queued goes first, in the same round
   * trip. `extra` statements (prefetches) follow it in that round trip; their results come back
   * after the statement's.
   */
  async query(text: string, values?: readonly unknown[], extra: readonly Stmt[] = []): Promise<QueryResult[]> {
    const head = this.takeHead();
    const all = [...head, { text, ...(values ? { values } : {}) }, ...extra];
    const results = await settleInOrder(this.sendAll(all));
    return results.slice(head.length);
  }

  /** Sends what is queued with COMMIT; returns COMMIT's result (undefined: nothing was ever sent). */
  async commit(): Promise<QueryResult | undefined> {
    if (!this.begun && this.deferred.length === 0) return undefined;
    const all = [...this.takeHead(), { text: "COMMIT" }];
    const results = await settleInOrder(this.sendAll(all));
    return results[results.length - 1];
  }
}

interface Queued {
  readonly stmt: Stmt;
  resolve(r: QueryResult): void;
  reject(err: unknown): void;
}

/**
 * Statements outside transactions (reads, notifications) issued in the same turn of the event
 * loop go to the server together: pipelined on one pooled connection, instead of one checkout
 * and round trip each. Each statement has its own implicit transaction and snapshot, and each
 * caller gets its own answer or error.
 */
export class Coalescer {
  private queue: Queued[] = [];
  private scheduled = false;

  /** `runAll` sends the statements on one connection, in order, and answers each. */
  constructor(private readonly runAll: (stmts: readonly Stmt[]) => Promise<readonly PromiseSettledResult<QueryResult>[]>) {}

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
    this.runAll(batch.map((q) => q.stmt)).then(
      (settled) =>
        batch.forEach((q, i) => {
          const s = settled[i]!;
          if (s.status === "fulfilled") q.resolve(s.value);
          else q.reject(s.reason);
        }),
      (err: unknown) => {
        for (const q of batch) q.reject(err);
      },
    );
  }
}
