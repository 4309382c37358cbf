// Opens the gateway's store from its configured URL and brings the schema up to date:
//   sqlite:PATH          a SQLite file (created if missing); sqlite:///abs/path also works
//   sqlite::memory:      a private in-memory SQLite database (tests, demos: nothing survives)
//   postgres://…         PostgreSQL (postgresql:// too), in the URL's database
// Migrations run as part of opening; a store that opened is ready to use.

import { openPostgresStore, type PostgresStoreOptions } from "./postgres/postgres-store.js";
import { openSqliteStore } from "./sqlite/sqlite-store.js";
import type { Store } from "./store.js";

export async function openStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  if (url === "sqlite::memory:") return openSqliteStore(":memory:");
  if (url.startsWith("sqlite:")) {
    let path = url.slice("sqlite:".length);
    if (path.startsWith("//")) path = path.slice(2);
    if (path === "") throw new Error('store URL "sqlite:" needs a file path, e.g. sqlite:/var/lib/openshell/gateway.db');
    return openSqliteStore(path);
  }
  if (url.startsWith("postgres://") || url.startsWith("postgresql://")) return openPostgresStore(url, options);
  // Only the scheme is echoed: the rest of a URL may hold credentials.
  const scheme = /^[A-Za-z][A-Za-z0-9+.-]*:/.exec(url)?.[0] ?? "(none)";
  throw new Error(`unsupported store URL scheme ${scheme}: use sqlite:PATH, sqlite::memory: or postgres://user@host/db`);
}
