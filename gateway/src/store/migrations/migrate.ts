// Versioned schema migrations for both store backends. Each database keeps
// `schema_migrations(version, applied_at)`; the runner applies the numbered migrations above the
// highest recorded version, in order, each in its own transaction together with its
// schema_migrations row, so a crash mid-migration leaves the previous version intact.
// The SQL itself lives with each backend (sqlite/migrations.ts, postgres/migrations.ts) because
// the dialects differ; both lists must describe the same logical schema.

import type BetterSqlite3 from "better-sqlite3";
import type pg from "pg";

export interface Migration {
  /** 1, 2, 3, … with no gaps. */
  readonly version: number;
  readonly name: string;
  /** One or more statements, run as a script. */
  readonly sql: string;
}

/** The migration list or the database's recorded version is not one this code can run against. */
export class MigrationError extends Error {
  override readonly name = "MigrationError";
}

/** Refuses lists with gaps or duplicates: a hole would silently skip a schema step. */
function checkList(migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new MigrationError(`migration list out of order: position ${i + 1} holds version ${m.version}`);
  });
}

/** The migrations still to apply after `applied`; refuses a database newer than this code. */
function pendingAfter(applied: number, migrations: readonly Migration[], where: string): readonly Migration[] {
  const known = migrations.length;
  if (applied > known) {
    throw new MigrationError(`${where} is at schema version ${applied}, newer than this gateway knows (${known}); upgrade the gateway`);
  }
  return migrations.slice(applied);
}

/** Applies pending migrations to a SQLite database (synchronous, like better-sqlite3). */
export function migrateSqlite(db: BetterSqlite3.Database, migrations: readonly Migration[]): number {
  checkList(migrations);
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    applied_at INTEGER NOT NULL
  ) STRICT`);
  const current = (): number => Number(db.prepare("SELECT coalesce(max(version), 0) AS v FROM schema_migrations").safeIntegers(true).pluck().get());
  for (;;) {
    // BEGIN IMMEDIATE takes the write lock before reading the version, so two processes opening
    // the same file cannot both apply the same migration.
    db.exec("BEGIN IMMEDIATE");
    try {
      const next = pendingAfter(current(), migrations, "the SQLite database")[0];
      if (!next) {
        db.exec("COMMIT");
        return migrations.length;
      }
      db.exec(next.sql);
      db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(next.version, Date.now());
      db.exec("COMMIT");
    } catch (err) {
      if (db.inTransaction) db.exec("ROLLBACK");
      throw err;
    }
  }
}

/**
 * Applies pending migrations to PostgreSQL on one client. A transaction-scoped advisory lock
 * serializes gateways starting at the same time; each re-reads the version under the lock.
 * `schema` (already validated as a plain identifier) is created first when given.
 */
export async function migratePostgres(client: pg.PoolClient, migrations: readonly Migration[], schema: string | undefined): Promise<number> {
  checkList(migrations);
  for (;;) {
    await client.query("BEGIN");
    try {
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended('openshell-gateway.migrations', 0))");
      if (schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version integer PRIMARY KEY,
        applied_at timestamptz NOT NULL DEFAULT now()
      )`);
      const { rows } = await client.query<{ v: number }>("SELECT coalesce(max(version), 0)::int AS v FROM schema_migrations");
      const next = pendingAfter(rows[0]?.v ?? 0, migrations, "the PostgreSQL schema")[0];
      if (!next) {
        await client.query("COMMIT");
        return migrations.length;
      }
      await client.query(next.sql);
      await client.query("INSERT INTO schema_migrations (version) VALUES ($1)", [next.version]);
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      throw err;
    }
  }
}
