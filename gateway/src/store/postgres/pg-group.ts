// A group of statements sent to PostgreSQL as one extended-protocol exchange: for each statement
// Parse (only the first time its text is used on the connection), Bind, Describe and Execute,
// then one Sync, all in one socket write; the server answers every statement in order and one
// ReadyForQuery. To node-postgres the group is a single query (a "submittable"), so the client
// handles one answer cycle per group rather than one per statement, and the server flushes its
// output once.
//
// Errors follow the protocol: the first failing statement's error ends the group, the server
// skips everything behind it up to the Sync, and those statements are reported as not run
// (SkippedStatementError). Without an explicit transaction the whole group is one implicit
// transaction, so an error rolls back the statements before it too.

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

/** node-postgres's result, with the methods its own queries fill it through. */
interface PgResult extends QueryResult {
  addFields(fields: unknown[]): void;
  parseRow(fields: unknown[]): pg.QueryResultRow;
  addRow(row: pg.QueryResultRow): void;
  addCommandComplete(msg: { text: string }): void;
}
const Result = (pg as unknown as { Result: new (rowMode: string | undefined, types: unknown) => PgResult }).Result;

interface Connection {
  parsedStatements: Record<string, string>;
  stream: { cork?(): void; uncork?(): void };
  parse(q: { text: string; name: string; types?: unknown[] }): void;
  bind(c: { portal: string; statement: string; values: readonly unknown[]; valueMapper: (v: unknown) => unknown }): void;
  describe(m: { type: "P"; name: string }): void;
  execute(c: { portal: string; rows: number }): void;
  sync(): void;
  on(event: "parseComplete", fn: () => void): void;
  removeListener(event: "parseComplete", fn: () => void): void;
}

interface FieldMessage {
  readonly fields: unknown[];
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
  private current: PgResult | undefined;
  /** Names whose Parse this group sent, in order, and how many the server has confirmed. */
  private readonly parsing: string[] = [];
  private parsed = 0;
  private connection: Connection | undefined;
  private readonly onParsed = () => {
    const name = this.parsing[this.parsed++];
    if (name !== undefined && this.connection) this.connection.parsedStatements[name] = this.textOf.get(name)!;
  };
  private readonly textOf = new Map<string, string>();
  private ended = false;

  constructor(
    private readonly stmts: readonly Stmt[],
    private readonly types?: unknown,
  ) {
    this.settled = new Promise((resolve) => (this.done = resolve));
  }

  /** Called by node-postgres when the group's turn on the connection comes. */
  submit(connection: Connection): Error | null {
    this.connection = connection;
    connection.on("parseComplete", this.onParsed);
    connection.stream.cork?.();
    try {
      for (const stmt of this.stmts) {
        const values = stmt.values ?? [];
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
        connection.bind({ portal: "", statement: name, values, valueMapper: prepareValue });
        connection.describe({ type: "P", name: "" });
        connection.execute({ portal: "", rows: 0 });
      }
      connection.sync();
    } catch (err) {
      // A value node-postgres cannot convert: nothing has been written yet that the Sync would
      // not close; the group fails as a whole.
      connection.sync();
      this.fail(err);
    } finally {
      connection.stream.uncork?.();
    }
    return null;
  }

  private result(): PgResult {
    return (this.current ??= new Result(undefined, this.types));
  }

  handleRowDescription(msg: FieldMessage): void {
    this.result().addFields(msg.fields);
  }

  handleDataRow(msg: FieldMessage): void {
    const r = this.result();
    r.addRow(r.parseRow(msg.fields));
  }

  handleCommandComplete(msg: { text: string }): void {
    const r = this.result();
    r.addCommandComplete(msg);
    this.results.push({ status: "fulfilled", value: r });
    this.current = undefined;
  }

  handleEmptyQuery(): void {
    this.results.push({ status: "fulfilled", value: this.result() });
    this.current = undefined;
  }

  /** The server's error for the running statement, or the connection's for all of them. */
  handleError(err: unknown): void {
    this.fail(err);
  }

  handleReadyForQuery(): void {
    this.finish();
  }

  handlePortalSuspended(): void {
    this.fail(new Error("unexpected PortalSuspended in a statement group"));
  }

  handleCopyInResponse(): void {
    this.fail(new Error("COPY is not supported in a statement group"));
  }

  handleCopyData(): void {}

  private fail(err: unknown): void {
    if (this.ended) return;
    if (this.results.length < this.stmts.length) this.results.push({ status: "rejected", reason: err });
    while (this.results.length < this.stmts.length) this.results.push({ status: "rejected", reason: new SkippedStatementError(err) });
    // node-postgres drops the group as its active query on an error; the ReadyForQuery that
    // follows goes to no one, so the group ends here.
    this.finish();
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.connection?.removeListener("parseComplete", this.onParsed);
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
