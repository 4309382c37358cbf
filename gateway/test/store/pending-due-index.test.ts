// Migration 7 on SQLite and PostgreSQL alike: the index behind dueOperations and countPending
// holds PENDING operations only. A database at version 6, with finished and pending operations,
// is upgraded with every row intact; the due and pending queries answer as before; and each
// engine's planner reads the due operations, all of them and a replica's own, through an index
// of pending operations only. On PostgreSQL that holds only while the statements name the
// PENDING state as a literal (a generic plan cannot match a parameter to an index's predicate);
// on SQLite only while the replica's scan starts from the operations (without statistics it
// would start from the replica's owners and read every operation of their sandboxes).
// PostgreSQL runs on its own database at OSC_TEST_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/postgres), dropped afterwards; skipped if unreachable
// unless OSC_REQUIRE_POSTGRES=1.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import type pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { COUNT_PENDING as PG_COUNT_PENDING, DUE_OPERATIONS as PG_DUE } from "../../src/store/postgres/pg-queries.js";
import { DUE_OWNED_OPERATIONS as PG_DUE_OWNED } from "../../src/store/postgres/pg-cluster.js";
import { openPostgresStore } from "../../src/store/postgres/postgres-store.js";
import { COUNT_PENDING as SQLITE_COUNT_PENDING, DUE_OPERATIONS as SQLITE_DUE } from "../../src/store/sqlite/sqlite-queries.js";
import { DUE_OWNED_OPERATIONS as SQLITE_DUE_OWNED } from "../../src/store/sqlite/sqlite-cluster.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { OperationRecord, Store } from "../../src/store/store.js";
import { ADMIN_URL, pgTestDatabase, withClient } from "./pg-test-database.js";
import { APPLIED, at, operation, sandbox, SUPERSEDED } from "./store-fixtures.js";

/** The version-6 index, as migration 1 made it. */
const V6_INDEX = "CREATE INDEX operations_state_next_attempt ON operations (state, next_attempt_at)";

interface Engine {
  /** A store on a new database, its schema current. */
  open(): Promise<{ store: Store; reopen: () => Promise<Store> }>;
  /** Runs SQL statements on the store's database, outside any store. */
  exec(sql: string): Promise<void>;
  /** The names of the operations table's indexes. */
  indexes(): Promise<string[]>;
  versions(): Promise<number[]>;
  /** The plans of the due-operations statements (all of them, a replica's own), as text. */
  duePlans(): Promise<string[]>;
  /** The pending count, by the store's own statement text. */
  countPendingRaw(): Promise<number>;
}

function defineTests(name: string, engine: () => Engine): void {
  describe(`due operations indexed while pending only: ${name}`, () => {
    it("a version-6 database is upgraded with its operations intact, and the due and pending queries find exactly the pending ones", async () => {
      const e = engine();
      const { store: first, reopen } = await e.open();
      const s = sandbox();
      const finished = [operation(s.id, { state: APPLIED, outcome: 1, completedAt: at(5) }), operation(s.id, { state: SUPERSEDED, completedAt: at(6) })];
      const pendingNow = operation(s.id, { nextAttemptAt: at(100) });
      const pendingLater = operation(s.id, { nextAttemptAt: at(10_000) });
      await first.transaction(async (tx) => {
        await tx.insertSandbox(s);
        for (const op of [...finished, pendingNow, pendingLater]) await tx.insertOperation(op);
      });
      await first.close();
      // Back to version 6: its index instead of the partial one, and no record of version 7.
      await e.exec(`DROP INDEX operations_pending_due; ${V6_INDEX}; DELETE FROM schema_migrations WHERE version = 7`);
      expect(await e.versions()).toEqual([1, 2, 3, 4, 5, 6]);
      expect(await e.indexes()).toContain("operations_state_next_attempt");

      const store = await reopen();
      try {
        expect(await e.versions()).toEqual([1, 2, 3, 4, 5, 6, 7]);
        const indexes = await e.indexes();
        expect(indexes).toContain("operations_pending_due");
        expect(indexes).not.toContain("operations_state_next_attempt");
        const ids = (ops: OperationRecord[]) => ops.map((o) => o.id);
        expect(ids(await store.dueOperations(at(1_000), 10))).toEqual([pendingNow.id]);
        expect(ids(await store.dueOperations(at(20_000), 10))).toEqual([pendingNow.id, pendingLater.id]);
        expect(await store.countPending()).toBe(2);
        expect(await e.countPendingRaw()).toBe(2);
        const byId = (a: OperationRecord, b: OperationRecord) => a.id.localeCompare(b.id);
        expect((await store.operationsById(finished.map((o) => o.id))).sort(byId)).toEqual([...finished].sort(byId));
      } finally {
        await store.close();
      }
    });

    it("the planner reads due operations, all of them and a replica's own, through an index of pending operations only", async () => {
      const e = engine();
      const { store } = await e.open();
      await store.close();
      const plans = await e.duePlans();
      expect(plans).toHaveLength(2);
      for (const plan of plans) {
        // Either partial index holds the pending operations alone (operations_pending_by_sandbox
        // serves the per-sandbox reads); nothing reads operations by a full index or a scan.
        expect(plan).toMatch(/operations_pending_(due|by_sandbox)/);
        expect(plan).not.toMatch(/operations_sandbox_created|Seq Scan on operations|SCAN (o|operations)\b/);
      }
    });
  });
}

// --- SQLite ---

const dir = mkdtempSync(join(tmpdir(), "osc-pending-due-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

defineTests("SQLite", () => {
  const path = join(dir, `store-${++files}.db`);
  const withDb = <T>(f: (db: Database.Database) => T): T => {
    const db = new Database(path);
    try {
      return f(db);
    } finally {
      db.close();
    }
  };
  return {
    open: async () => ({ store: openSqliteStore(path), reopen: async () => openSqliteStore(path) }),
    exec: async (sql) => withDb((db) => void db.exec(sql)),
    indexes: async () => withDb((db) => db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'operations'").pluck().all() as string[]),
    versions: async () => withDb((db) => db.prepare("SELECT version FROM schema_migrations ORDER BY version").pluck().all() as number[]),
    duePlans: async () =>
      withDb((db) => {
        const plan = (sql: string, ...values: unknown[]) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...values) as { detail: string }[]).map((r) => r.detail).join("\n");
        return [plan(SQLITE_DUE, 0, 10), plan(SQLITE_DUE_OWNED, 0, "replica-a", 0, 10)];
      }),
    countPendingRaw: async () => withDb((db) => Number(db.prepare(SQLITE_COUNT_PENDING).pluck().get())),
  };
});

// --- PostgreSQL ---

const { url: pgUrl } = await pgTestDatabase("osc_pending_due");
let schemas = 0;

if (pgUrl === undefined) {
  describe.skip(`due operations indexed while pending only: PostgreSQL (no server at ${ADMIN_URL})`, () => {
    it("runs the migration 7 tests", () => undefined);
  });
} else {
  const testUrl = pgUrl;
  defineTests("PostgreSQL", () => {
    const schema = `s_${++schemas}`;
    const inSchema = <T>(f: (c: pg.Client) => Promise<T>) => withClient(testUrl, f, { options: `-c search_path=${schema}` });
    const open = () => openPostgresStore(testUrl, { schema, poolSize: 2 });
    return {
      open: async () => ({ store: await open(), reopen: open }),
      exec: (sql) => inSchema(async (c) => void (await c.query(sql))),
      indexes: () => inSchema(async (c) => (await c.query<{ indexname: string }>("SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'operations'", [schema])).rows.map((r) => r.indexname)),
      versions: () => inSchema(async (c) => (await c.query<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version")).rows.map((r) => r.version)),
      // A prepared statement's generic plan (what a statement prepared once and run many times
      // gets), with sequential scans priced out so that an empty table does not hide the choice.
      duePlans: () =>
        inSchema(async (c) => {
          await c.query("SET enable_seqscan = off");
          await c.query("SET plan_cache_mode = force_generic_plan");
          await c.query(`PREPARE due AS ${PG_DUE}`);
          await c.query(`PREPARE due_owned AS ${PG_DUE_OWNED}`);
          const plan = async (execute: string) => (await c.query<{ "QUERY PLAN": string }>(`EXPLAIN ${execute}`)).rows.map((r) => r["QUERY PLAN"]).join("\n");
          return [await plan("EXECUTE due(now(), 10)"), await plan("EXECUTE due_owned(now(), 'replica-a', 10)")];
        }),
      countPendingRaw: () => inSchema(async (c) => Number((await c.query<{ n: string }>(PG_COUNT_PENDING)).rows[0]?.n ?? 0)),
    };
  });
}
