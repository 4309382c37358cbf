// Opens the store's one SQLite connection: the file (created its owner's only), the pragmas that
// make it durable and keep deleted content from lingering, and the schema brought up to date.
// Synchronous: better-sqlite3 has no I/O to wait on.

import Database from "better-sqlite3";
import { migrateSqlite } from "../migrations/migrate.js";
import { sqliteMigrations } from "./migrations.js";
import { toStoreError } from "./sqlite-errors.js";
import { createDatabaseFile, tightenDatabaseFiles, type SqliteStoreLog } from "./sqlite-file-modes.js";

/** How long a write waits for another process's lock before it fails with SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5000;

export interface SqliteConnection {
  readonly db: Database.Database;
  /** The database file; "" for an in-memory database. */
  readonly file: string;
  /** Whether the store fsyncs the WAL itself (see sqlite-store.ts's durability note). */
  readonly syncsWal: boolean;
  /** Whether the database journals in WAL mode (a file database does). */
  readonly wal: boolean;
}

export function openSqliteConnection(path: string, log: SqliteStoreLog | undefined): SqliteConnection {
  // better-sqlite3 opens without SQLITE_OPEN_URI: any other path, "file:…" included, is a file.
  const inMemory = path === ":memory:" || path === "";
  if (!inMemory) {
    createDatabaseFile(path);
    tightenDatabaseFiles(path, log);
  }
  const syncsWal = !inMemory && process.platform === "linux";
  let db: Database.Database | undefined;
  try {
    db = new Database(path);
    db.pragma("journal_mode = WAL");
    // Deleted and overwritten content is zeroed inside its page, not just marked free. FAST, not
    // ON: ON also rewrites every freed page with zeros, which made deleting a sandbox with 40 MB
    // of policy history 8x slower (330 ms instead of 40) while holding the connection. Provider
    // writes, which replace credentials, run with ON (sqlite-queries.ts); the WAL's copies are
    // sqlite-credential-scrub.ts's.
    db.pragma("secure_delete = FAST");
    db.pragma(syncsWal ? "synchronous = NORMAL" : "synchronous = FULL");
    db.pragma("fullfsync = ON");
    db.pragma("checkpoint_fullfsync = ON");
    // Another process holding the write lock (a second gateway on the same file, a backup) is
    // waited for, not reported as an error.
    db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.pragma("foreign_keys = ON");
    // 64-bit columns come back as BigInt; sqlite-rows.ts narrows the `number` fields.
    db.defaultSafeIntegers(true);
    migrateSqlite(db, sqliteMigrations);
    const file = (db.pragma("database_list") as { name: string; file: string }[]).find((d) => d.name === "main")?.file ?? "";
    return { db, file, syncsWal, wal: db.pragma("journal_mode", { simple: true }) === "wal" };
  } catch (err) {
    db?.close();
    throw toStoreError(err);
  }
}
