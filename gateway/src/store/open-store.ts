// Opens the gateway's store from its configured URL and brings the schema up to date:
//   sqlite:PATH          a SQLite file (created if missing, its owner's only); sqlite:///abs/path also works
//   sqlite::memory:      a private in-memory SQLite database (tests, demos: nothing survives)
//   postgres://…         PostgreSQL (postgresql:// too), in the URL's database
// Migrations run as part of opening; a store that opened is ready to use.

import { openPostgresStore, type PostgresStoreOptions } from "./postgres/postgres-store.js";
import { openSqliteStore, type SqliteStoreLog } from "./sqlite/sqlite-store.js";
import type { Store } from "./store.js";

export interface OpenStoreOptions extends PostgresStoreOptions {
  /** Where a SQLite store reports the file modes it tightened (a pino logger fits). */
  readonly log?: SqliteStoreLog;
}

export async function openStore(url: string, options: OpenStoreOptions = {}): Promise<Store> {
  if (url === "sqlite::memory:") return openSqliteStore(":memory:");
  if (url.startsWith("sqlite:")) {
    let path = url.slice("sqlite:".length);
    if (path.startsWith("//")) path = path.slice(2);
    if (path === "") throw new Error('store URL "sqlite:" needs a file path, e.g. sqlite:/var/lib/openshell/gateway.db');
    return openSqliteStore(path, options.log ? { log: options.log } : {});
  }
  if (url.startsWith("postgres://") || url.startsWith("postgresql://")) return openPostgresStore(url, options);
  // Only the scheme is echoed: the rest of a URL may hold credentials.
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(url)?.[0] ?? "(none)";
  throw new Error(`unsupported store URL scheme ${scheme}: use sqlite:PATH, sqlite::memory: or postgres://user@host/db`);
}
