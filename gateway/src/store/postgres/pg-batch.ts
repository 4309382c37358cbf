// Fewer round trips per PostgreSQL transaction. A transaction's client sends:
//
// - BEGIN (and SET LOCAL) together with its first statement, and nothing at all when fn made no
//   store call;
// - writes whose answer the caller does not need (inserts, status updates, upserts) not at once
//   but together with the next statement that needs an answer, or with COMMIT;
// - every such group as one simple-protocol query (several statements, values inlined as
//   literals): one message, one round trip. Statements of one simple query run in order, each
//   with its own READ COMMITTED snapshot; the first error skips the rest and aborts the
//   transaction (a COMMIT behind it never runs).
//
// Statements sent on their own use the extended protocol with a named prepared statement per
// distinct text, so the server parses and plans each only once per connection.

import type pg from "pg";

export type QueryResult = pg.QueryResult<pg.QueryResultRow>;

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

/** A value as an SQL literal, for statements sent with the simple protocol. */
export function literal(v: unknown): string {
  if (v === null || v === undefined) return "NULL";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) throw new TypeError(`cannot store ${v}`);
    return v < 0 ? `(${v})` : String(v);
  }
  if (typeof v === "bigint") return v < 0n ? `(${v})` : v.toString();
  if (typeof v === "boolean") return v ? "TRUE" : "FALSE";
  if (typeof v === "string") return quote(v);
  if (v instanceof Date) {
    if (Number.isNaN(v.getTime())) throw new TypeError("cannot store an invalid date");
    return `'${v.toISOString()}'::timestamptz`;
  }
  if (v instanceof Uint8Array) return `'\\x${Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("hex")}'::bytea`;
  if (Array.isArray(v)) return v.length === 0 ? "'{}'" : `ARRAY[${v.map(literal).join(", ")}]`;
  throw new TypeError(`cannot inline a value of type ${typeof v}`);
}

/** A string constant: quotes doubled; with backslashes, an escape string with those doubled. */
function quote(s: string): string {
  const q = s.includes("'") ? s.replace(/'/g, "''") : s;
  return s.includes("\\") ? ` E'${q.replace(/\\/g, "\\\\")}'` : `'${q}'`;
}

/**
 * A statement text cut at its `$n` parameters: `parts[0]`, then for each i the literal of
 * `values[params[i]]` and `parts[i + 1]`. Texts come from a bounded set of shapes, so each is cut
 * once (the map is emptied, never grown without bound, if that ever stops being true).
 */
interface Template {
  readonly parts: readonly string[];
  readonly params: readonly number[];
}
const templates = new Map<string, Template>();
const MAX_TEMPLATES = 2000;

function templateOf(text: string): Template {
  let t = templates.get(text);
  if (t !== undefined) return t;
  const parts: string[] = [];
  const params: number[] = [];
  const re = /\$(\d+)/g;
  let at = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    parts.push(text.slice(at, m.index));
    params.push(Number(m[1]) - 1);
    at = m.index + m[0].length;
  }
  parts.push(text.slice(at));
  if (templates.size >= MAX_TEMPLATES) templates.clear();
  templates.set(text, (t = { parts, params }));
  return t;
}

/** `text` with its `$n` parameters replaced by the literals of `values`. */
export function inline(text: string, values: readonly unknown[] | undefined): string {
  if (!values || values.length === 0) return text;
  const { parts, params } = templateOf(text);
  let out = parts[0]!;
  for (let k = 0; k < params.length; k++) {
    const i = params[k]!;
    if (i < 0 || i >= values.length) throw new RangeError(`no value for $${i + 1}`);
    out += literal(values[i]) + parts[k + 1]!;
  }
  return out;
}

/** Runs a query on the transaction's client (errors recorded by the caller's wrapper). */
export type Send = (query: string | pg.QueryConfig) => Promise<QueryResult | QueryResult[]>;

/** The statements of one transaction and when they go out. */
export class TxBatch {
  private begun = false;
  private deferred: string[] = [];

  constructor(
    private readonly send: Send,
    /** Sent before the first statement. */
    private readonly begin: readonly string[],
  ) {}

  /** Whether anything reached the server (so there is a transaction to end). */
  get started(): boolean {
    return this.begun;
  }

  /** Queues a write whose answer nobody waits for; it goes out with the next statement. */
  defer(text: string, values?: readonly unknown[]): void {
    this.deferred.push(inline(text, values));
  }

  /**
   * Runs one statement and returns its result; whatever is queued goes first, in the same round
   * trip. `extra` statements (prefetches) follow it in that round trip; their results come back
   * after the statement's.
   */
  async query(text: string, values?: readonly unknown[], extra: readonly string[] = []): Promise<QueryResult[]> {
    if (this.begun && this.deferred.length === 0 && extra.length === 0) {
      const name = preparedName(text);
      const r = (await this.send(name ? { name, text, values: values as unknown[] } : { text, values: values as unknown[] })) as QueryResult;
      return [r];
    }
    const head = [...(this.begun ? [] : this.begin), ...this.deferred];
    this.begun = true;
    this.deferred = [];
    const all = await this.send([...head, inline(text, values), ...extra].join(";\n"));
    const results = Array.isArray(all) ? all : [all];
    return results.slice(head.length);
  }

  /** Sends what is queued with COMMIT; returns COMMIT's result (undefined: nothing was ever sent). */
  async commit(): Promise<QueryResult | undefined> {
    if (!this.begun && this.deferred.length === 0) return undefined;
    const head = [...(this.begun ? [] : this.begin), ...this.deferred];
    this.begun = true;
    this.deferred = [];
    const all = await this.send([...head, "COMMIT"].join(";\n"));
    const results = Array.isArray(all) ? all : [all];
    return results[results.length - 1];
  }
}

interface Queued {
  readonly text: string;
  readonly values: readonly unknown[] | undefined;
  resolve(r: QueryResult): void;
  reject(err: unknown): void;
}

/**
 * Statements outside transactions (reads, notifications) issued in the same turn of the event
 * loop go to the server together: one simple-protocol query of all of them on one pooled
 * connection, instead of one checkout and round trip each. Each statement still has its own
 * READ COMMITTED snapshot. A lone statement runs as a named prepared statement; if a combined
 * query fails, its statements run again one by one, so each caller gets its own answer or error.
 */
export class Coalescer {
  private queue: Queued[] = [];
  private scheduled = false;

  constructor(private readonly runOne: (text: string, values: readonly unknown[] | undefined) => Promise<QueryResult>, private readonly runMany: (text: string) => Promise<QueryResult | QueryResult[]>) {}

  run(text: string, values: readonly unknown[] | undefined): Promise<QueryResult> {
    return new Promise<QueryResult>((resolve, reject) => {
      this.queue.push({ text, values, resolve, reject });
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
    if (batch.length === 1) {
      const q = batch[0]!;
      this.runOne(q.text, q.values).then(q.resolve, q.reject);
      return;
    }
    let text: string;
    try {
      text = batch.map((q) => inline(q.text, q.values)).join(";\n");
    } catch {
      for (const q of batch) this.runOne(q.text, q.values).then(q.resolve, q.reject);
      return;
    }
    this.runMany(text).then(
      (all) => {
        const results = Array.isArray(all) ? all : [all];
        batch.forEach((q, i) => q.resolve(results[i]!));
      },
      () => {
        for (const q of batch) this.runOne(q.text, q.values).then(q.resolve, q.reject);
      },
    );
  }
}
