// Sandbox instances in the store, on SQLite and PostgreSQL alike: lifecycle records (who created
// and deleted each instance, kept after it is gone and written in the same transaction as the
// change) and supervisor bindings (first binding wins, a pin replaces, racing first bindings
// agree), kept across a reopen; and the upgrade from schema version 4, the schema before them,
// with its rows intact. PostgreSQL runs on its own database at OSC_TEST_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/postgres), dropped afterwards; skipped if unreachable
// unless OSC_REQUIRE_POSTGRES=1.

import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { migratePostgres, migrateSqlite } from "../../src/store/migrations/migrate.js";
import { postgresMigrations } from "../../src/store/postgres/migrations.js";
import { openPostgresStore } from "../../src/store/postgres/postgres-store.js";
import { sqliteMigrations } from "../../src/store/sqlite/migrations.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import { StoreConflictError, type SandboxLifecycleRecord, type Store, type SupervisorBindingRecord } from "../../src/store/store.js";
import { ADMIN_URL, pgTestDatabase, withClient } from "./pg-test-database.js";
import { at, sandbox } from "./store-fixtures.js";

/** Opens a fresh database; `reopen` opens the same one again; `v4` opens one migrated to version 4 only. */
interface Engine {
  open(): Promise<{ store: Store; reopen: () => Promise<Store> }>;
  /** A database at schema version 4 holding one sandbox row (`id`, "ws-a"/"old"), not yet opened by a store. */
  v4(id: string): Promise<{ open: () => Promise<Store>; versions: () => Promise<number[]> }>;
}

const event = (over: Partial<SandboxLifecycleRecord> & Pick<SandboxLifecycleRecord, "sandboxId" | "event">): SandboxLifecycleRecord => ({
  workspace: "ws-a",
  name: "b",
  principal: "mallory",
  at: at(1_000),
  ...over,
});

const binding = (over: Partial<SupervisorBindingRecord> = {}): SupervisorBindingRecord => ({
  credential: `token-sha256:${randomBytes(32).toString("hex")}`,
  workspace: "ws-a",
  sandboxName: "b",
  sandboxId: randomUUID(),
  principal: "supervisor:b",
  boundAt: at(2_000),
  ...over,
});

function defineInstanceTests(name: string, engine: () => Engine): void {
  describe(`sandbox instances in the store: ${name}`, () => {
    const opened: Store[] = [];
    const open = async () => {
      const h = await engine().open();
      opened.push(h.store);
      return {
        store: h.store,
        reopen: async () => {
          await h.store.close();
          const again = await h.reopen();
          opened.push(again);
          return again;
        },
      };
    };
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((s) => s.close()));
    });

    it("a deleted instance keeps who created and who deleted it, written with the change, created first", async () => {
      const { store, reopen } = await open();
      const s = sandbox({ name: "b" });
      const created = event({ sandboxId: s.id, event: "created", principal: "alice", at: at(10) });
      const deleted = event({ sandboxId: s.id, event: "deleted", principal: "mallory", at: at(20) });
      await store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        await tx.recordSandboxEvent(created);
      });
      await store.transaction(async (tx) => {
        await tx.deleteSandbox(s.id);
        await tx.recordSandboxEvent(deleted);
      });
      expect(await store.sandboxById(s.id)).toBeUndefined();
      expect(await store.sandboxEvents(s.id)).toEqual([created, deleted]);
      expect(await (await reopen()).sandboxEvents(s.id)).toEqual([created, deleted]);
    });

    it("an instance has one record per event, and a transaction that fails keeps neither its delete nor its record", async () => {
      const { store } = await open();
      const s = sandbox({ name: "b" });
      await store.transaction((tx) => tx.insertSandbox(s));
      const deleted = event({ sandboxId: s.id, event: "deleted" });
      await store.transaction((tx) => tx.recordSandboxEvent(deleted));
      await expect(store.transaction((tx) => tx.recordSandboxEvent({ ...deleted, principal: "other" }))).rejects.toBeInstanceOf(StoreConflictError);
      const other = sandbox({ name: "c" });
      await store.transaction((tx) => tx.insertSandbox(other));
      const failing = store.transaction(async (tx) => {
        await tx.deleteSandbox(other.id);
        await tx.recordSandboxEvent(event({ sandboxId: other.id, event: "deleted" }));
        throw new Error("boom");
      });
      await expect(failing).rejects.toThrow("boom");
      expect(await store.sandboxById(other.id)).toEqual(other);
      expect(await store.sandboxEvents(other.id)).toEqual([]);
      expect(await store.sandboxEvents(s.id)).toEqual([deleted]);
      expect(await store.sandboxEvents("unknown")).toEqual([]);
    });

    it("the first binding of a credential stays, a pin replaces it, and both survive a reopen", async () => {
      const { store, reopen } = await open();
      const first = binding();
      expect(await store.supervisorBinding(first.credential)).toBeUndefined();
      expect(await store.bindSupervisor(first)).toEqual(first);
      const later = { ...first, sandboxId: randomUUID(), boundAt: at(3_000) };
      expect(await store.bindSupervisor(later)).toEqual(first);
      expect(await store.supervisorBinding(first.credential)).toEqual(first);
      const other = binding();
      await store.bindSupervisor(other);
      expect(await store.bindSupervisor(later, true)).toEqual(later);
      const again = await reopen();
      expect(await again.supervisorBinding(first.credential)).toEqual(later);
      expect(await again.supervisorBinding(other.credential)).toEqual(other);
    });

    it("first bindings of one credential racing to different instances all get the same one", async () => {
      const { store } = await open();
      const credential = binding().credential;
      const tries = Array.from({ length: 12 }, () => binding({ credential }));
      const results = await Promise.all(tries.map((b) => store.bindSupervisor(b)));
      const stored = await store.supervisorBinding(credential);
      expect(tries).toContainEqual(stored);
      for (const r of results) expect(r).toEqual(stored);
    });

    it("a database at schema version 4 is upgraded with its rows intact, and the new records work on it", async () => {
      const id = randomUUID();
      const v4 = await engine().v4(id);
      expect(await v4.versions()).toEqual([1, 2, 3, 4]);
      const store = await v4.open();
      opened.push(store);
      expect(await v4.versions()).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(await store.sandboxById(id)).toMatchObject({ id, workspace: "ws-a", name: "old", policyVersion: 1, createdAt: at(0) });
      expect(await store.sandboxEvents(id)).toEqual([]);
      await store.transaction(async (tx) => {
        await tx.deleteSandbox(id);
        await tx.recordSandboxEvent(event({ sandboxId: id, event: "deleted", name: "old" }));
      });
      expect(await store.sandboxEvents(id)).toEqual([event({ sandboxId: id, event: "deleted", name: "old" })]);
      const b = binding({ sandboxId: id });
      expect(await store.bindSupervisor(b)).toEqual(b);
    });
  });
}

// --- SQLite ---

const dir = mkdtempSync(join(tmpdir(), "osc-instance-store-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** A version-4 sandbox row, as the schema before version 5 stores it. */
const V4_ROW = (id: string) => [id, "ws-a", "old", "{}", "{}", "spec", 2, 1, 1, "sha256:old", 0, 1, "[]"] as const;

defineInstanceTests("SQLite", () => ({
  async open() {
    const path = join(dir, `store-${++files}.db`);
    return { store: openSqliteStore(path), reopen: async () => openSqliteStore(path) };
  },
  async v4(id) {
    const path = join(dir, `v4-${++files}.db`);
    const raw = new Database(path);
    migrateSqlite(raw, sqliteMigrations.slice(0, 4));
    const row = V4_ROW(id);
    raw.prepare("INSERT INTO sandboxes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)").run(...row.slice(0, 5), Buffer.from(row[5]), ...row.slice(6), at(0).getTime());
    raw.close();
    const versions = async () => {
      const db = new Database(path, { readonly: true });
      try {
        return db.prepare("SELECT version FROM schema_migrations ORDER BY version").pluck().all() as number[];
      } finally {
        db.close();
      }
    };
    return { open: async () => openSqliteStore(path), versions };
  },
}));

// --- PostgreSQL ---

const { url: pgUrl } = await pgTestDatabase("osc_instance");
let schemas = 0;

if (pgUrl === undefined) {
  describe.skip(`sandbox instances in the store: PostgreSQL (no server at ${ADMIN_URL})`, () => {
    it("runs the instance tests", () => undefined);
  });
} else {
  const testUrl = pgUrl;
  defineInstanceTests("PostgreSQL", () => ({
    async open() {
      const schema = `s_${++schemas}`;
      return { store: await openPostgresStore(testUrl, { schema, poolSize: 4 }), reopen: () => openPostgresStore(testUrl, { schema, poolSize: 4 }) };
    },
    async v4(id) {
      const schema = `v4_${++schemas}`;
      await withClient(
        testUrl,
        async (c) => {
          await migratePostgres(c as pg.PoolClient, postgresMigrations.slice(0, 4), schema);
          await c.query("INSERT INTO sandboxes VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, NULL)", [...V4_ROW(id).slice(0, 5), Buffer.from("spec"), ...V4_ROW(id).slice(6), at(0)]);
        },
        { options: `-c search_path=${schema}` },
      );
      const versions = () => withClient(testUrl, async (c) => (await c.query<{ version: number }>(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`)).rows.map((r) => r.version));
      return { open: () => openPostgresStore(testUrl, { schema, poolSize: 4 }), versions };
    },
  }));
}
