// A PostgreSQL database of one test file's own, on the server at OSC_TEST_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/postgres): created before the file's tests, dropped after
// them, no other database touched. When the server is unreachable the file skips its PostgreSQL
// tests with a notice, unless OSC_REQUIRE_POSTGRES=1 makes that a failure (CI sets it).

import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";

export const ADMIN_URL = process.env.OSC_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** Runs `f` on a new connection to `url`, closed afterwards. */
export async function withClient<T>(url: string, f: (c: pg.Client) => Promise<T>, options: pg.ClientConfig = {}): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000, ...options });
  await client.connect();
  try {
    return await f(client);
  } finally {
    await client.end();
  }
}

export interface PgTestDatabase {
  /** The database's URL, or undefined when the server is unreachable (skip the PostgreSQL tests). */
  readonly url: string | undefined;
}

/**
 * A database named `<prefix>_<random>`, created in this file's beforeAll and dropped (WITH FORCE)
 * in its afterAll. Call at the top level of a test file.
 */
export async function pgTestDatabase(prefix: string): Promise<PgTestDatabase> {
  const reachable = await withClient(ADMIN_URL, async () => true).catch(() => false);
  if (!reachable) {
    if (process.env.OSC_REQUIRE_POSTGRES === "1") throw new Error(`PostgreSQL unreachable at ${ADMIN_URL}`);
    return { url: undefined };
  }
  const database = `${prefix}_${randomBytes(6).toString("hex")}`;
  const u = new URL(ADMIN_URL);
  u.pathname = `/${database}`;
  beforeAll(async () => {
    await withClient(ADMIN_URL, (c) => c.query(`CREATE DATABASE ${database}`));
  });
  afterAll(async () => {
    await withClient(ADMIN_URL, (c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
  });
  return { url: u.toString() };
}
