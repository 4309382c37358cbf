// Runs the store suite on SQLite (a fresh temporary file per test, reopened for the restart test,
// and ":memory:"), plus what only SQLite has: the journal mode on disk, the migration record,
// refusing a newer schema, and openStore's URL forms.

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it, vi } from "vitest";
import { MigrationError } from "../../src/store/migrations/migrate.js";
import { openStore } from "../../src/store/open-store.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { sandbox } from "./store-fixtures.js";
import { defineStoreSuite, insertSandboxes } from "./store-suite.js";

const dir = mkdtempSync(join(tmpdir(), "osc-sqlite-store-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let files = 0;
const freshPath = () => join(dir, `store-${++files}.db`);

defineStoreSuite("SQLite file", async () => {
  const path = freshPath();
  const opened: Store[] = [openSqliteStore(path)];
  return {
    store: opened[0]!,
    reopen: async () => {
      const again = openSqliteStore(path);
      opened.push(again);
      return again;
    },
    cleanup: async () => {
      for (const s of opened) await s.close();
      for (const suffix of ["", "-wal", "-shm"]) rmSync(path + suffix, { force: true });
    },
  };
});

defineStoreSuite("SQLite :memory:", async () => {
  const store = openSqliteStore(":memory:");
  return { store, cleanup: () => store.close() };
});

describe("SQLite store specifics", () => {
  it("a file store journals in WAL mode and records each migration exactly once across reopenings", async () => {
    const path = freshPath();
    await openSqliteStore(path).close();
    const store = openSqliteStore(path);
    await insertSandboxes(store, sandbox());
    await store.close();
    const raw = new Database(path, { readonly: true });
    try {
      expect(raw.pragma("journal_mode", { simple: true })).toBe("wal");
      expect(raw.prepare("SELECT version FROM schema_migrations").pluck().all()).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(raw.prepare("SELECT count(*) FROM sandboxes").pluck().get()).toBe(1);
    } finally {
      raw.close();
    }
  });

  it("a database migrated by a newer gateway is refused rather than used", () => {
    const path = freshPath();
    const raw = new Database(path);
    raw.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL) STRICT");
    raw.prepare("INSERT INTO schema_migrations VALUES (?, ?)").run(99, Date.now());
    raw.close();
    expect(() => openSqliteStore(path)).toThrow(MigrationError);
    expect(() => openSqliteStore(path)).toThrow(/schema version 99, newer/);
  });

  it("openStore opens sqlite:PATH, sqlite:///PATH and sqlite::memory: stores", async () => {
    const path = freshPath();
    const byPath = await openStore(`sqlite:${path}`);
    expect(byPath.kind).toBe("sqlite");
    const s = sandbox();
    await insertSandboxes(byPath, s);
    await byPath.close();
    expect(existsSync(path)).toBe(true);
    const bySlashes = await openStore(`sqlite://${path}`);
    expect(await bySlashes.sandboxById(s.id)).toEqual(s);
    await bySlashes.close();
    const memory = await openStore("sqlite::memory:");
    expect(memory.kind).toBe("sqlite");
    expect(await memory.sandboxById(s.id)).toBeUndefined();
    await memory.close();
  });

  it("openStore rejects other URLs with a clear error that does not echo credentials", async () => {
    await expect(openStore("mysql://user:hunter2@db/x")).rejects.toThrow(/unsupported store URL scheme mysql:/);
    await expect(openStore("mysql://user:hunter2@db/x")).rejects.not.toThrow(/hunter2/);
    await expect(openStore("sqlite:")).rejects.toThrow(/needs a file path/);
    await expect(openStore("/var/lib/gateway.db")).rejects.toThrow(/unsupported store URL/);
  });

  it("each :memory: store is a private database", async () => {
    const a = openSqliteStore(":memory:");
    const b = openSqliteStore(":memory:");
    const s = sandbox();
    await insertSandboxes(a, s);
    expect(await a.sandboxById(s.id)).toEqual(s);
    expect(await b.sandboxById(s.id)).toBeUndefined();
    await Promise.all([a.close(), b.close()]);
  });
});

describe("SQLite group commit", () => {
  it("concurrent transactions share one COMMIT, and one that throws rolls back alone", async () => {
    const store = openSqliteStore(freshPath());
    try {
      const before = store.writeStats();
      const records = Array.from({ length: 20 }, () => sandbox());
      const boom = new Error("boom");
      const results = await Promise.allSettled(
        records.map((r, i) =>
          store.transaction(async (tx) => {
            await tx.insertSandbox(r);
            if (i === 7) throw boom;
            return i;
          }),
        ),
      );
      expect(results.map((r) => (r.status === "fulfilled" ? r.value : r.reason))).toEqual(records.map((_, i) => (i === 7 ? boom : i)));
      for (const [i, r] of records.entries()) expect(await store.sandboxById(r.id)).toEqual(i === 7 ? undefined : r);
      const after = store.writeStats();
      expect(after.transactions - before.transactions).toBe(19);
      expect(after.commits - before.commits).toBe(1);
    } finally {
      await store.close();
    }
  });

  it("a read from outside waits for the open batch's COMMIT rather than seeing its uncommitted writes", async () => {
    const store = openSqliteStore(freshPath());
    try {
      const s = sandbox();
      let entered!: () => void;
      const inside = new Promise<void>((r) => (entered = r));
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      const writing = store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        entered();
        await gate;
      });
      await inside;
      let settled = false;
      const read = store.sandboxById(s.id).finally(() => (settled = true));
      await new Promise((r) => setTimeout(r, 20));
      expect(settled).toBe(false);
      open();
      await writing;
      expect(await read).toEqual(s);
    } finally {
      await store.close();
    }
  });

  it("transactions queued before close() still commit; later ones are refused", async () => {
    const path = freshPath();
    const store = openSqliteStore(path);
    const records = Array.from({ length: 5 }, () => sandbox());
    const writes = records.map((r) => store.transaction((tx) => tx.insertSandbox(r)));
    const closing = store.close();
    await expect(store.transaction(async () => 1)).rejects.toThrow(/closed/);
    await Promise.all(writes);
    await closing;
    const again = openSqliteStore(path);
    try {
      for (const r of records) expect(await again.sandboxById(r.id)).toEqual(r);
    } finally {
      await again.close();
    }
  });
});

describe("SQLite WAL sync", () => {
  it("a transaction is acknowledged only after its WAL sync, and reads wait for the sync too", async () => {
    let release!: () => void;
    const syncs: number[] = [];
    const store = openSqliteStore(freshPath(), {
      walSync: {
        sync: (fd) => {
          syncs.push(fd);
          return new Promise<void>((r) => (release = r));
        },
      },
    });
    try {
      const s = sandbox();
      let acknowledged = false;
      const write = store.transaction((tx) => tx.insertSandbox(s)).then(() => (acknowledged = true));
      await vi.waitFor(() => expect(syncs).toHaveLength(1));
      let read: unknown = "pending";
      const reading = store.sandboxById(s.id).then((r) => (read = r));
      await new Promise((r) => setTimeout(r, 20));
      expect(acknowledged).toBe(false);
      expect(read).toBe("pending");
      release();
      await Promise.all([write, reading]);
      expect(acknowledged).toBe(true);
      expect(read).toEqual(s);
    } finally {
      release?.();
      await store.close();
    }
  });

  it("a lone transaction's sync is told it is alone; transactions sharing a COMMIT are not", async () => {
    const calls: boolean[] = [];
    const store = openSqliteStore(freshPath(), { walSync: { sync: async (_fd, alone) => void calls.push(alone) } });
    try {
      await store.transaction((tx) => tx.insertSandbox(sandbox()));
      expect(calls).toEqual([true]);
      await Promise.all([1, 2, 3].map(() => store.transaction((tx) => tx.insertSandbox(sandbox()))));
      expect(calls).toEqual([true, false]);
      // A batch of one with another transaction queued behind it is not alone either.
      let inside!: () => void;
      const started = new Promise<void>((r) => (inside = r));
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      const first = store.transaction(async (tx) => {
        await tx.insertSandbox(sandbox());
        inside();
        await held;
      });
      await started;
      const second = store.transaction((tx) => tx.insertSandbox(sandbox()));
      release();
      await Promise.all([first, second]);
      expect(calls).toEqual([true, false, false, true]);
    } finally {
      await store.close();
    }
  });

  it("a transaction whose WAL sync fails is not acknowledged, and a read-only one needs no sync", async () => {
    let fail = true;
    let syncs = 0;
    const store = openSqliteStore(freshPath(), {
      walSync: {
        sync: async () => {
          syncs++;
          if (fail) throw new Error("EIO: i/o error");
        },
      },
    });
    try {
      await expect(store.transaction((tx) => tx.insertSandbox(sandbox()))).rejects.toThrow(/syncing the write-ahead log failed: EIO/);
      fail = false;
      const before = syncs;
      await store.transaction((tx) => tx.sandboxById("nobody"));
      expect(syncs).toBe(before);
      await store.transaction((tx) => tx.insertSandbox(sandbox()));
      expect(syncs).toBe(before + 1);
    } finally {
      await store.close();
    }
  });
});
