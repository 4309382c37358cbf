// The SQLite store's files as a local attacker sees them (issue 29, finding 6): who may read them,
// and whether a credential that was replaced can still be read from their bytes. Runs in this
// forked test process under the umask each test sets (Vitest runs test files in child processes,
// where process.umask may be changed).

import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { openSqliteStore, type SqliteStoreLog } from "../../src/store/sqlite/sqlite-store.js";
import type { ProviderRecord, Store } from "../../src/store/store.js";
import { provider } from "./store-fixtures.js";
import { modesOf, secretsOnDisk } from "./sqlite-file-bytes.js";

const dir = mkdtempSync(join(tmpdir(), "osc-sqlite-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshPath = () => join(dir, `files-${++files}.db`);

const umaskBefore = process.umask();
afterEach(() => {
  process.umask(umaskBefore);
});

const opened: Store[] = [];
afterEach(async () => {
  for (const s of opened.splice(0)) await s.close();
});
function open(path: string, options: Parameters<typeof openSqliteStore>[1] = {}): Store {
  const store = openSqliteStore(path, options);
  opened.push(store);
  return store;
}

function captureLog() {
  const lines: { level: "warn" | "info"; fields: Record<string, unknown>; message: string }[] = [];
  const log: SqliteStoreLog = {
    warn: (fields, message) => lines.push({ level: "warn", fields: fields as Record<string, unknown>, message }),
    info: (fields, message) => lines.push({ level: "info", fields: fields as Record<string, unknown>, message }),
  };
  return { log, lines };
}

/** A credential no other test uses; its first and last 16 characters are random too. */
const secret = (bytes = 24) => `ghp_${randomBytes(bytes).toString("hex")}`;

const withSecret = (value: string, over: Partial<ProviderRecord> = {}) =>
  provider({ values: [{ name: "GITHUB_TOKEN", value, secret: true }, { name: "GITHUB_HOST", value: "github.example", secret: false }], ...over });

const rotate = (store: Store, p: ProviderRecord, value: string) =>
  store.transaction((tx) => tx.updateProvider(p.id, { values: [{ name: "GITHUB_TOKEN", value, secret: true }] }));

describe("SQLite file modes", () => {
  it("a new database, its -wal and its -shm are readable and writable by their owner only, even under umask 000", async () => {
    process.umask(0o000);
    const path = freshPath();
    const store = open(path);
    await store.transaction((tx) => tx.insertProvider(withSecret(secret())));
    expect(modesOf(path)).toEqual({ main: "0600", "-shm": "0600", "-wal": "0600" });
  });

  it("an existing database and its leftover -wal and -shm that others may read are tightened at open, and each change is logged", async () => {
    process.umask(0o022);
    const path = freshPath();
    // Another connection keeps the -wal and -shm in place, as a crashed gateway would leave them.
    const raw = new Database(path);
    try {
      raw.pragma("journal_mode = WAL");
      raw.exec("CREATE TABLE t (x)");
      chmodSync(path, 0o640);
      expect(modesOf(path)).toEqual({ main: "0640", "-shm": "0644", "-wal": "0644" });
      const { log, lines } = captureLog();
      open(path, { log });
      expect(modesOf(path)).toEqual({ main: "0600", "-shm": "0600", "-wal": "0600" });
      expect(lines.map((l) => [l.level, l.fields])).toEqual([
        ["warn", { file: path, mode: "0640", now: "0600" }],
        ["warn", { file: `${path}-wal`, mode: "0644", now: "0600" }],
        ["warn", { file: `${path}-shm`, mode: "0644", now: "0600" }],
      ]);
      expect(lines[0]!.message).toMatch(/readable by group or others: permissions tightened/);
    } finally {
      raw.close();
    }
  });

  it("tightening only removes bits: a read-only database stays read-only for its owner", async () => {
    const path = freshPath();
    await openSqliteStore(path).close();
    chmodSync(path, 0o444);
    const { log, lines } = captureLog();
    // Root writes it anyway; anyone else gets a read-only store. Either way the mode is what counts.
    try {
      open(path, { log });
    } catch {
      // a read-only store that cannot switch to WAL: not what this test is about
    }
    expect(statSync(path).mode & 0o777).toBe(0o400);
    expect(lines[0]?.fields).toEqual({ file: path, mode: "0444", now: "0400" });
  });

  it("a database that only its owner may read is opened without a word", async () => {
    const path = freshPath();
    await openSqliteStore(path).close();
    const { log, lines } = captureLog();
    open(path, { log });
    expect(lines).toEqual([]);
  });
});

describe("SQLite: replaced credentials on disk", () => {
  it("a rotated-away credential is in neither the database file nor the -wal once the rotation is acknowledged, with the store still open", async () => {
    const path = freshPath();
    const store = open(path);
    const [old, oldLarge] = [secret(), secret(6_000)];
    // The large value spills onto overflow pages, which are freed rather than rewritten.
    const p = withSecret(old);
    const large = withSecret(oldLarge);
    await store.transaction(async (tx) => {
      await tx.insertProvider(p);
      await tx.insertProvider(large);
    });
    expect(secretsOnDisk(path, [old, oldLarge]).length).toBeGreaterThan(0);
    const [fresh, freshLarge] = [secret(), secret(16)];
    await rotate(store, p, fresh);
    await rotate(store, large, freshLarge);
    expect(secretsOnDisk(path, [old, oldLarge])).toEqual([]);
    // The search finds what is there: the current values are in the database file.
    expect(secretsOnDisk(path, [fresh, freshLarge])).toEqual([`main: ${fresh.slice(0, 24)}…`, `main: ${freshLarge.slice(0, 24)}…`]);
    expect(statSync(`${path}-wal`).size).toBe(0);
    expect(await store.providerByName(p.workspace, p.name)).toMatchObject({ values: [{ name: "GITHUB_TOKEN", value: fresh, secret: true }] });
  });

  it("across 200 providers each rotated once, after the old values had reached the database file, no replaced credential remains, open or closed and reopened", async () => {
    const path = freshPath();
    const store = open(path);
    const providers = Array.from({ length: 200 }, (_, i) => withSecret(secret(i % 40 === 0 ? 5_000 : 24)));
    const olds = providers.map((p) => p.values[0]!.value);
    for (const p of providers) await store.transaction((tx) => tx.insertProvider(p));
    const checkpointer = new Database(path);
    checkpointer.pragma("wal_checkpoint(PASSIVE)");
    checkpointer.close();
    expect(secretsOnDisk(path, olds).filter((f) => f.startsWith("main:"))).toHaveLength(olds.length);
    // Rows move between pages as the tree grows; rewritten after that, each old copy must go.
    const fresh = providers.map(() => secret(8));
    for (const [i, p] of providers.entries()) await rotate(store, p, fresh[i]!);
    expect(secretsOnDisk(path, olds)).toEqual([]);
    await store.close();
    expect(secretsOnDisk(path, olds)).toEqual([]);
    const again = open(path);
    for (const [i, p] of providers.entries()) expect((await again.providerByName(p.workspace, p.name))?.values[0]?.value).toBe(fresh[i]);
  }, 60_000);

  it("while another connection reads an old snapshot the truncation waits, logged, without holding up the write, and happens unprompted once the reader lets go", async () => {
    const path = freshPath();
    const { log, lines } = captureLog();
    const store = open(path, { log, scrubRetryMs: 20 });
    const old = secret();
    const p = withSecret(old);
    await store.transaction((tx) => tx.insertProvider(p));
    const reader = new Database(path, { readonly: true });
    try {
      reader.exec("BEGIN");
      expect(reader.prepare("SELECT count(*) FROM providers").pluck().get()).toBe(1);
      await rotate(store, p, secret());
      // Acknowledged while the reader still holds its snapshot, which needs the old page.
      expect(reader.inTransaction).toBe(true);
      expect(secretsOnDisk(path, [old])).not.toEqual([]);
      expect(lines.filter((l) => l.level === "warn").map((l) => l.message)).toEqual([expect.stringMatching(/could not truncate the write-ahead log after a credential change: another connection is reading/)]);
      reader.exec("COMMIT");
      await vi.waitFor(() => expect(secretsOnDisk(path, [old])).toEqual([]), { timeout: 5_000 });
      expect(statSync(`${path}-wal`).size).toBe(0);
      expect(lines.at(-1)).toMatchObject({ level: "info", message: expect.stringMatching(/truncated after a credential change \(it had been postponed\)/) });
    } finally {
      reader.close();
    }
  });

  it("a deleted setting's value is zeroed in the database file, not left in the page's free space", async () => {
    const path = freshPath();
    const value = secret();
    const first = open(path);
    await first.transaction((tx) => tx.putSetting({ sandboxId: "s", key: "token", value: new TextEncoder().encode(value) }));
    await first.close();
    expect(secretsOnDisk(path, [value])).toEqual([`main: ${value.slice(0, 24)}…`]);
    const second = open(path);
    await second.transaction((tx) => tx.deleteSetting("s", "token"));
    await second.close();
    expect(secretsOnDisk(path, [value])).toEqual([]);
  });

  it("writes that touch no credential leave the WAL to SQLite's own checkpoints", async () => {
    const path = freshPath();
    const store = open(path);
    await store.transaction((tx) => tx.insertProvider(withSecret(secret())));
    const walAfterProvider = statSync(`${path}-wal`).size;
    expect(walAfterProvider).toBe(0);
    await store.transaction((tx) => tx.putSetting({ sandboxId: "s", key: "k", value: new Uint8Array([1]) }));
    expect(statSync(`${path}-wal`).size).toBeGreaterThan(0);
  });
});
