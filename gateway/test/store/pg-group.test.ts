// A group of statements as one extended-protocol exchange (pg-group.ts), on a real server:
// shapes parsed once per connection, results in order, and after a failure the statements
// behind it reported as not run, nothing of the group kept, and the connection still usable
// (including statements whose first Parse the failure skipped).

import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN_URL, postgresReachable } from "../cluster/cluster-harness.js";
import { Coalescer, type Settled, type Stmt } from "../../src/store/postgres/pg-batch.js";
import { SkippedStatementError, StatementGroup, StatementNotSentError, rolledBack } from "../../src/store/postgres/pg-group.js";

const url = ADMIN_URL;
const reachable = await postgresReachable();
if (!reachable && process.env.OSC_REQUIRE_POSTGRES === "1") throw new Error(`PostgreSQL unreachable at ${url}`);

// Texts unique to this file, so that their prepared names are this file's own.
const tag = `g${process.pid}`;
const INSERT = `INSERT INTO ${tag} (id, note, data, at) VALUES ($1, $2, $3, $4)`;
const BY_ID = `SELECT id, note, data, at FROM ${tag} WHERE id = $1`;
const COUNT = `SELECT count(*)::int AS n FROM ${tag} WHERE id >= $1`;
const NEVER_BEFORE = `SELECT $1::int + 1 AS next`;

function run(client: pg.Client, stmts: readonly Stmt[]): Promise<Settled> {
  const group = new StatementGroup(stmts);
  void client.query(group as never);
  return group.settled;
}

const prepared = async (c: pg.Client) => (await c.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements")).rows.map((r) => r.statement);

describe.skipIf(!reachable)("a statement group", () => {
  let client: pg.Client;
  beforeEach(async () => {
    client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`CREATE TEMP TABLE ${tag} (id int PRIMARY KEY, note text NOT NULL, data bytea, at timestamptz)`);
  });
  afterEach(async () => {
    await client.end();
  });

  it("answers every statement in order, and prepares each shape once on the connection however often it runs", async () => {
    const at = new Date("2026-12-04T10:11:12.345Z");
    const first = await run(client, [
      { text: INSERT, values: [1, "one", new Uint8Array([0, 1, 255]), at] },
      { text: INSERT, values: [2, "it's \\ two", null, null] },
      { text: BY_ID, values: [1] },
      { text: COUNT, values: [0] },
    ]);
    expect(first.map((s) => s.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "fulfilled"]);
    const [ins, , byId, count] = first.map((s) => (s as PromiseFulfilledResult<pg.QueryResult>).value);
    expect(ins).toMatchObject({ command: "INSERT", rowCount: 1 });
    expect(byId!.rows).toEqual([{ id: 1, note: "one", data: Buffer.from([0, 1, 255]), at }]);
    expect(count!.rows).toEqual([{ n: 2 }]);
    // Again on the same connection: a second Parse under a name would fail (42P05).
    const again = await run(client, [{ text: BY_ID, values: [2] }, { text: INSERT, values: [3, "three", null, null] }]);
    expect(again.map((s) => s.status)).toEqual(["fulfilled", "fulfilled"]);
    expect((again[0] as PromiseFulfilledResult<pg.QueryResult>).value.rows).toEqual([{ id: 2, note: "it's \\ two", data: null, at: null }]);
    const statements = await prepared(client);
    for (const text of [INSERT, BY_ID, COUNT]) expect(statements.filter((s) => s === text)).toHaveLength(1);
  });

  it("describes a prepared statement's columns only until they are known on the connection, and reads its rows the same after", async () => {
    const connection = (client as unknown as { connection: { on(e: string, f: () => void): void } }).connection;
    let descriptions = 0;
    connection.on("rowDescription", () => descriptions++);
    await run(client, [{ text: INSERT, values: [5, "five", new Uint8Array([5]), new Date(5)] }]);
    const first = await run(client, [{ text: BY_ID, values: [5] }, { text: COUNT, values: [0] }]);
    expect(descriptions).toBe(2);
    const later = await run(client, [{ text: BY_ID, values: [5] }, { text: COUNT, values: [0] }, { text: BY_ID, values: [404] }]);
    expect(descriptions).toBe(2);
    const rows = (settled: Settled) => settled.map((s) => (s as PromiseFulfilledResult<pg.QueryResult>).value.rows);
    expect(rows(later)).toEqual([...rows(first), []]);
    expect(rows(later)[0]).toEqual([{ id: 5, note: "five", data: Buffer.from([5]), at: new Date(5) }]);
    // Statements without parameters are not prepared, so always described.
    await run(client, [{ text: `SELECT count(*)::int AS n FROM ${tag}` }]);
    await run(client, [{ text: `SELECT count(*)::int AS n FROM ${tag}` }]);
    expect(descriptions).toBe(4);
  });

  it("reports a failed statement's error, the ones behind it as not run, keeps nothing of the group, and the connection serves the next", async () => {
    const settled = await run(client, [
      { text: INSERT, values: [10, "ten", null, null] },
      { text: INSERT, values: [10, "ten again", null, null] }, // duplicate key
      { text: NEVER_BEFORE, values: [41] }, // its Parse is skipped with it
    ]);
    expect(settled[0]!.status).toBe("fulfilled");
    expect(settled[1]).toMatchObject({ status: "rejected", reason: { code: "23505" } });
    expect(settled[2]).toMatchObject({ status: "rejected" });
    expect((settled[2] as PromiseRejectedResult).reason).toBeInstanceOf(SkippedStatementError);
    // One implicit transaction: the first insert was rolled back with the failure.
    const after = await run(client, [
      { text: COUNT, values: [10] },
      { text: NEVER_BEFORE, values: [41] }, // parsed now, not taken for prepared before
    ]);
    expect(after.map((s) => (s as PromiseFulfilledResult<pg.QueryResult>).value.rows)).toEqual([[{ n: 0 }], [{ next: 42 }]]);
  });

  it("a statement the server cannot parse fails alone in its group's place, and its text is never taken for prepared", async () => {
    const broken = `SELEC $1::int AS nope_${tag}`;
    const settled = await run(client, [
      { text: BY_ID, values: [1] },
      { text: broken, values: [1] },
    ]);
    expect(settled[0]!.status).toBe("fulfilled");
    expect(settled[1]).toMatchObject({ status: "rejected", reason: { code: "42601" } });
    const retried = await run(client, [{ text: broken, values: [1] }]);
    expect(retried[0]).toMatchObject({ status: "rejected", reason: { code: "42601" } });
    expect((await prepared(client)).some((s) => s.includes("SELEC "))).toBe(false);
    expect((await run(client, [{ text: COUNT, values: [0] }]))[0]).toMatchObject({ status: "fulfilled" });
  });

  it("a value that cannot be converted fails its group before anything is written, and the connection serves the next", async () => {
    const unconvertible = { toPostgres: () => { throw new Error("cannot convert this value"); } };
    const settled = await run(client, [
      { text: INSERT, values: [20, "twenty", null, null] },
      { text: BY_ID, values: [unconvertible] },
    ]);
    expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected"]);
    expect((settled[0] as PromiseRejectedResult).reason).toBeInstanceOf(SkippedStatementError);
    expect((settled[1] as PromiseRejectedResult).reason).toBeInstanceOf(StatementNotSentError);
    expect(String((settled[1] as PromiseRejectedResult).reason)).toMatch(/cannot convert this value/);
    // Nothing ran: statements coalesced with it may run again alone.
    expect(settled.every((s) => rolledBack((s as PromiseRejectedResult).reason))).toBe(true);
    // Nothing went out: not the insert, and no Parse the client did not see confirmed (a second
    // Parse of one name would fail 42P05).
    const after = await run(client, [
      { text: INSERT, values: [21, "twenty-one", null, null] },
      { text: COUNT, values: [20] },
    ]);
    expect(after.map((s) => s.status)).toEqual(["fulfilled", "fulfilled"]);
    expect((after[1] as PromiseFulfilledResult<pg.QueryResult>).value.rows).toEqual([{ n: 1 }]);
  });

  it("fails every statement when the group's implicit commit fails after each had answered", async () => {
    await client.query(`CREATE TEMP TABLE ${tag}_late (k int UNIQUE DEFERRABLE INITIALLY DEFERRED)`);
    const insert = `INSERT INTO ${tag}_late (k) VALUES ($1)`;
    const settled = await run(client, [
      { text: insert, values: [1] },
      { text: insert, values: [1] }, // checked only at the commit
    ]);
    expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected"]);
    for (const s of settled) expect((s as PromiseRejectedResult).reason).toMatchObject({ code: "23505" });
    expect((await client.query(`SELECT count(*)::int AS n FROM ${tag}_late`)).rows).toEqual([{ n: 0 }]);
  });

  it("a connection that dies mid-group fails every statement of it, and the group still ends", async () => {
    const killer = new pg.Client({ connectionString: url });
    await killer.connect();
    const pid = (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]!.pid;
    client.on("error", () => undefined);
    const pending = run(client, [
      { text: "SELECT pg_sleep(5)" },
      { text: BY_ID, values: [1] },
    ]);
    await new Promise((r) => setTimeout(r, 200));
    await killer.query("SELECT pg_terminate_backend($1)", [pid]);
    await killer.end();
    const settled = await pending;
    expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected"]);
  });
});

describe("statements coalesced outside transactions", () => {
  const serverError = (code: string) => Object.assign(new pg.DatabaseError("refused", 0, "error"), { code });
  const answered = (n: number): PromiseFulfilledResult<pg.QueryResult> => ({ status: "fulfilled", value: { rows: [{ n }] } as unknown as pg.QueryResult });

  async function coalesce(first: Settled, alone: (stmt: Stmt) => PromiseSettledResult<pg.QueryResult>) {
    const groups: number[] = [];
    const c = new Coalescer(async (stmts) => {
      groups.push(stmts.length);
      return groups.length === 1 ? first : stmts.map(alone);
    }, rolledBack);
    const results = await Promise.allSettled([c.run("a", [1]), c.run("b", [2]), c.run("c", [3])]);
    return { groups, results };
  }

  it("run again one by one when the server refused one of them (the group rolled back), each caller getting its own answer", async () => {
    const refused = serverError("23514");
    const { groups, results } = await coalesce(
      [answered(1), { status: "rejected", reason: refused }, { status: "rejected", reason: new SkippedStatementError(refused) }],
      (stmt) => (stmt.text === "b" ? { status: "rejected", reason: refused } : answered(Number(stmt.values![0]))),
    );
    expect(groups).toEqual([3, 1, 1, 1]);
    expect(results).toEqual([answered(1), { status: "rejected", reason: refused }, answered(3)]);
  });

  it("are not run again when the outcome is unknown (the connection went) or the server was cancelling", async () => {
    for (const failure of [new Error("Connection terminated unexpectedly"), serverError("57014")]) {
      const { groups, results } = await coalesce(
        [answered(1), answered(2), { status: "rejected", reason: failure }],
        () => answered(0),
      );
      expect(groups).toEqual([3]);
      expect(results).toEqual([0, 1, 2].map(() => ({ status: "rejected", reason: failure })));
    }
  });
});
