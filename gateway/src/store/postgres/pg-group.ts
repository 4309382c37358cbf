// A group of statements sent to PostgreSQL as one extended-protocol exchange: for each statement
// Parse (only the first time its text is used on the connection), Bind, Describe (only until the
// prepared statement's result columns are known: the server never runs a prepared statement
// with other columns than it was planned with, it refuses instead; see pg-plans.ts) and Execute, then one
// Sync, all in one socket write; the server answers every statement in order and one
// ReadyForQuery. To node-postgres the group is a single query (a "submittable"), so the client
// handles one answer cycle per group rather than one per statement, and the server flushes its
// output once. Rows are parsed here with node-postgres's type parsers (text format).
//
// Errors follow the protocol: the first failing statement's error ends the group, the server
// skips everything behind it up to the Sync, and those statements are reported as not run
// (SkippedStatementError). Without an explicit transaction the whole group is one implicit
// transaction, committed at the Sync, so an error rolls back the statements before it too, and
// an error after every statement has answered (the implicit commit failed, or the connection
// went before it was confirmed) fails all of them. Anything that could leave the client and the
// server disagreeing about the conversation (a row that does not fit its columns, a COPY) ends
// the connection (see `desynced`).

import { createRequire } from "node:module";
import pg from "pg";
import { preparedName, type QueryResult, type Stmt } from "./pg-batch.js";

// node-postgres's own conversion of parameter values (dates, buffers, arrays, bigints), exactly
// as its queries convert them.
const { prepareValue } = createRequire(import.meta.url)("pg/lib/utils") as { prepareValue(v: unknown): unknown };

/** A statement behind a failed one in its group: the server never ran it. */
export class SkippedStatementError extends Error {
  constructor(cause: unknown) {
    super("statement not run: an earlier statement of its group failed", { cause });
  }
}

/** A statement whose values node-postgres cannot convert: its group was never sent. */
export class StatementNotSentError extends Error {
  constructor(cause: unknown) {
    super(`cannot send a statement: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/**
 * Whether a statement's failure in a group without BEGIN proves that the group's implicit
 * transaction rolled back and that running its statements again is what the server expects: the
 * server refused one (or one before it), other than by cancelling it (57014, a timeout, which
 * running again would repeat). A lost connection proves nothing: the commit may have happened.
 */
export function rolledBack(failure: unknown): boolean {
  const err = failure instanceof SkippedStatementError ? failure.cause : failure;
  return err instanceof StatementNotSentError || (err instanceof pg.DatabaseError && err.code !== "57014");
}

/** A statement text's result columns, and how to read a row of them. */
interface Shape {
  readonly fields: pg.FieldDef[];
  readonly parsers: ((text: string) => unknown)[];
  /** Every column null: the start of each row (in column order). */
  readonly empty: Record<string, null>;
}
/**
 * Result shapes of each connection's prepared statements, by name: they live exactly as long as
 * the statements (bounded like them, see preparedName).
 */
const shapesOf = new WeakMap<object, Map<string, Shape>>();
const NO_ROWS: Shape = { fields: [], parsers: [], empty: {} };

/** Forgets a connection's result shapes, with its prepared statements (pg-plans.ts). */
export function forgetShapes(connection: object | undefined): void {
  if (connection) shapesOf.delete(connection);
}

function shapeOf(fields: pg.FieldDef[]): Shape {
  const empty: Record<string, null> = {};
  for (const f of fields) empty[f.name] = null;
  return { fields, parsers: fields.map((f) => pg.types.getTypeParser(f.dataTypeID, "text") as (text: string) => unknown), empty };
}


/** CommandComplete's tag: `INSERT 0 1`, `UPDATE 3`, `SELECT 2`, `BEGIN`. */
const TAG = /^([A-Za-z]+)(?: (\d+))?(?: (\d+))?/;

interface Connection {
  parsedStatements: Record<string, string>;
  stream: { cork?(): void; uncork?(): void; destroy?(err?: Error): void };
  parse(q: { text: string; name: string; types?: unknown[] }): void;
  bind(c: { portal: string; statement: string; values: readonly unknown[] }): void;
  describe(m: { type: "P"; name: string }): void;
  execute(c: { portal: string; rows: number }): void;
  sync(): void;
  on(event: "parseComplete", fn: () => void): void;
  removeListener(event: "parseComplete", fn: () => void): void;
}

/**
 * The statements' results, in order, once the group ends; a failed statement's error and
 * SkippedStatementError for those behind it. Pass the group to `client.query(group)` (on a client
 * without node-postgres's pipeline mode) and await `group.settled`.
 */
export class StatementGroup {
  readonly settled: Promise<PromiseSettledResult<QueryResult>[]>;
  private done!: (results: PromiseSettledResult<QueryResult>[]) => void;
  private readonly results: PromiseSettledResult<QueryResult>[] = [];
  /** The shape of each statement's rows, once known (from the cache or its RowDescription). */
  private readonly shapes: (Shape | undefined)[] = [];
  private rows: pg.QueryResultRow[] = [];
  /** Names whose Parse this group sent, in order, and how many the server has confirmed. */
  private readonly parsing: string[] = [];
  private parsed = 0;
  private connection: Connection | undefined;
  private readonly onParsed = () => {
    const name = this.parsing[this.parsed++];
    if (name !== undefined && this.connection) this.connection.parsedStatements[name] = this.textOf.get(name)!;
  };
  private readonly textOf = new Map<string, string>();
  /** Each statement's prepared name ("" unnamed), and this connection's known shapes. */
  private readonly names: string[] = [];
  private known = new Map<string, Shape>();
  private ended = false;

  constructor(private readonly stmts: readonly Stmt[]) {
    this.settled = new Promise((resolve) => (this.done = resolve));
  }

  /**
   * Called by node-postgres when the group's turn on the connection comes. Every value is
   * converted first: one that cannot be fails the group before anything is written (node-postgres
   * then reports the returned error and goes on with the next query).
   */
  submit(connection: Connection): Error | null {
    const converted: unknown[][] = [];
    for (const stmt of this.stmts) {
      try {
        converted.push((stmt.values ?? []).map((v) => prepareValue(v)));
      } catch (err) {
        const notSent = new StatementNotSentError(err);
        this.results.push(...this.stmts.map((_, i) => ({ status: "rejected" as const, reason: i === converted.length ? notSent : new SkippedStatementError(notSent) })));
        this.finish();
        return notSent; // node-postgres hands it to handleError (the group has ended) and goes on
      }
    }
    this.connection = connection;
    let known = shapesOf.get(connection);
    if (!known) shapesOf.set(connection, (known = new Map()));
    this.known = known;
    connection.on("parseComplete", this.onParsed);
    connection.stream.cork?.();
    try {
      for (const [i, stmt] of this.stmts.entries()) {
        const values = converted[i]!;
        const name = values.length > 0 ? (preparedName(stmt.text) ?? "") : "";
        if (name === "" || (connection.parsedStatements[name] === undefined && !this.textOf.has(name))) {
          connection.parse({ text: stmt.text, name });
          if (name !== "") {
            this.parsing.push(name);
            this.textOf.set(name, stmt.text);
          } else {
            this.parsing.push("");
          }
        }
        connection.bind({ portal: "", statement: name, values });
        const shape = name === "" ? undefined : known.get(name);
        this.names.push(name);
        this.shapes.push(shape);
        if (!shape) connection.describe({ type: "P", name: "" });
        connection.execute({ portal: "", rows: 0 });
      }
      connection.sync();
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  /** The statement answering now: every statement before it has completed. */
  private get at(): number {
    return this.results.length;
  }

  handleRowDescription(msg: { fields: pg.FieldDef[] }): void {
    if (this.ended) return;
    const shape = shapeOf(msg.fields);
    this.shapes[this.at] = shape;
    this.remember(shape);
  }

  handleDataRow(msg: { fields: (string | null)[] }): void {
    if (this.ended) return;
    const shape = this.shapes[this.at];
    if (!shape || shape.fields.length !== msg.fields.length) return this.desynced("a row arrived that does not match its statement's columns");
    const row: pg.QueryResultRow = { ...shape.empty };
    const { fields, parsers } = shape;
    for (let i = 0; i < msg.fields.length; i++) {
      const raw = msg.fields[i];
      if (raw !== null && raw !== undefined) row[fields[i]!.name] = parsers[i]!(raw);
    }
    this.rows.push(row);
  }

  handleCommandComplete(msg: { text: string }): void {
    if (this.ended) return;
    let shape = this.shapes[this.at];
    if (!shape) {
      // Described, and no RowDescription came: the statement returns no rows (NoData).
      shape = NO_ROWS;
      this.remember(shape);
    }
    const tag = TAG.exec(msg.text);
    const value = {
      command: tag?.[1] ?? "",
      rowCount: tag?.[3] !== undefined ? Number(tag[3]) : tag?.[2] !== undefined ? Number(tag[2]) : null,
      oid: 0,
      fields: shape.fields,
      rows: this.rows,
    } as QueryResult;
    this.results.push({ status: "fulfilled", value });
    this.rows = [];
  }

  handleEmptyQuery(): void {
    if (this.ended) return;
    this.results.push({ status: "fulfilled", value: { command: "", rowCount: null, oid: 0, fields: [], rows: [] } as unknown as QueryResult });
    this.rows = [];
  }

  /** Keeps the answering statement's shape for its later runs on this connection, if it is prepared. */
  private remember(shape: Shape): void {
    const name = this.names[this.at];
    if (name) this.known.set(name, shape);
  }

  /**
   * The server's error (an ErrorResponse: node-postgres drops the group as its active query, the
   * server skips to the Sync, and the ReadyForQuery that follows goes to no one), or the
   * connection's, or a client-side timeout's.
   */
  handleError(err: unknown): void {
    // After an ErrorResponse no ParseComplete can follow; after anything else the connection is
    // gone, or still answering this group (a timeout), and its ReadyForQuery still comes here.
    if (err instanceof pg.DatabaseError) this.stopTracking();
    this.fail(err);
  }

  handleReadyForQuery(): void {
    this.stopTracking();
    this.finish();
  }

  handlePortalSuspended(): void {
    this.desynced("unexpected PortalSuspended in a statement group");
  }

  handleCopyInResponse(): void {
    this.desynced("COPY is not supported in a statement group");
  }

  handleCopyData(): void {}

  /** The conversation can no longer be followed: the group fails and the connection ends. */
  private desynced(message: string): void {
    const err = new Error(message);
    this.fail(err);
    this.connection?.stream.destroy?.(err);
  }

  private fail(err: unknown): void {
    if (this.ended) return;
    if (this.results.length === this.stmts.length) {
      // Every statement answered, then an error: the commit of the group's implicit transaction
      // failed or was never confirmed, so none of it stands. (A transaction's own COMMIT commits
      // in its Execute, before its answer; a group that ends with one stands once answered.)
      if (this.stmts[this.stmts.length - 1]?.text === "COMMIT") return this.finish();
      this.results.splice(0, this.results.length, ...this.stmts.map(() => ({ status: "rejected" as const, reason: err })));
      return this.finish();
    }
    this.results.push({ status: "rejected", reason: err });
    while (this.results.length < this.stmts.length) this.results.push({ status: "rejected", reason: new SkippedStatementError(err) });
    this.finish();
  }

  private stopTracking(): void {
    this.connection?.removeListener("parseComplete", this.onParsed);
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    while (this.results.length < this.stmts.length) {
      this.results.push({ status: "rejected", reason: new Error("the server ended the group before answering every statement") });
    }
    this.done(this.results);
  }
}

/** Runs `stmts` as one group on `client` (a client without node-postgres's pipeline mode). */
export function runGroup(client: pg.ClientBase, stmts: readonly Stmt[]): Promise<PromiseSettledResult<QueryResult>[]> {
  const group = new StatementGroup(stmts);
  void client.query(group as never);
  return group.settled;
}
