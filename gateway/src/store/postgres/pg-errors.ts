// How the PostgreSQL store reports what went wrong: serialization failures and deadlocks
// (40001, 40P01) are re-runnable; duplicate keys and conflicts that outlast the re-runs are
// StoreConflictError; everything else from the database or the network is StoreUnavailableError.

import pg from "pg";
import { StoreConflictError, StoreUnavailableError } from "../store.js";
import { StatementNotSentError } from "./pg-group.js";

/** How many times a transaction whose fn hit a re-runnable failure runs again. */
export const RETRIES = 5;
const RETRYABLE = new Set(["40001", "40P01"]);

export const isRetryable = (err: unknown) => err instanceof pg.DatabaseError && err.code !== undefined && RETRYABLE.has(err.code);

/** Errors from pg calls become store errors; ours and the caller's pass unchanged. */
export function toStoreError(err: unknown): unknown {
  if (err instanceof StoreConflictError || err instanceof StoreUnavailableError) return err;
  if (err instanceof pg.DatabaseError) {
    if (err.code === "23505" || isRetryable(err)) return new StoreConflictError(`PostgreSQL: ${err.message}`, { cause: err });
    return new StoreUnavailableError(`PostgreSQL: ${err.message}`, { cause: err });
  }
  if (err instanceof StatementNotSentError) return new StoreUnavailableError(`PostgreSQL: ${err.message}`, { cause: err });
  // Anything else a pg call throws is the connection: refused, reset, timed out, pool ended.
  const message = err instanceof Error ? err.message : String(err);
  return new StoreUnavailableError(`PostgreSQL unreachable: ${message}`, { cause: err });
}

/**
 * A lock wait that outlasted lock_timeout (55P03). Jobs after the first of a group wait for a
 * lock only briefly (pg-group-commit.ts): a group holds its earlier jobs' locks while one waits,
 * and two groups waiting for each other would otherwise stall until the server's deadlock check.
 */
export const isLockTimeout = (err: unknown) => err instanceof pg.DatabaseError && err.code === "55P03";

/** The pause before a re-run: short, growing, jittered so that conflicting writers part. */
export const retryPauseMs = (attempt: number) => 5 + attempt * 10 + Math.random() * 20;
