// SQLite's errors as store errors, so that callers tell a conflict from an outage whatever the
// engine.

import Database from "better-sqlite3";
import { StoreConflictError, StoreUnavailableError } from "../store.js";

/** SQLite failures become store errors; anything else (our own checks, caller errors) passes. */
export function toStoreError(err: unknown): unknown {
  if (err instanceof Database.SqliteError) {
    if (err.code === "SQLITE_CONSTRAINT_UNIQUE" || err.code === "SQLITE_CONSTRAINT_PRIMARYKEY") {
      return new StoreConflictError(`SQLite: ${err.message}`, { cause: err });
    }
    // The extended code (SQLITE_FULL, SQLITE_IOERR_WRITE, SQLITE_READONLY…) is what tells an
    // operator a full disk from a lost file.
    return new StoreUnavailableError(`SQLite ${err.code}: ${err.message}`, { cause: err });
  }
  return err;
}

export function guarded<T>(f: () => T): T {
  try {
    return f();
  } catch (err) {
    throw toStoreError(err);
  }
}
