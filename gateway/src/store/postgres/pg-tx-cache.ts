// What a transaction of the PostgreSQL store reads together with a sandbox's lock and keeps for
// its rest (see pg-queries.ts), and the statements that read it. Every answer here was read after
// the lock was held, or is a plain read whose moment inside the transaction does not matter (the
// global settings, which nothing here locks).

import pg from "pg";
import { OPERATION_STATE_PENDING } from "../codec.js";
import type { IdempotencyRecord, OperationRecord, PolicyRevisionRecord, SandboxRecord, SettingRecord } from "../store.js";

/** What one transaction has read under its locks, kept up to date by its own writes. */
export class TxCache {
  /** Sandbox rows this transaction holds locked, as they stand in it. */
  readonly sandboxes = new Map<string, SandboxRecord>();
  /** Latest policy revision per scope, read under the scope's advisory lock. */
  readonly latest = new Map<string, PolicyRevisionRecord | undefined>();
  /** Scopes of `latest` whose lock this transaction holds only shared. */
  readonly sharedOnly = new Set<string>();
  /** PENDING operations per sandbox (locked), oldest first. */
  readonly pending = new Map<string, OperationRecord[]>();
  /** (sandbox id, key) idempotency keys read as absent while holding the sandbox's lock. */
  readonly absentKeys = new Set<string>();
  /** (sandbox id, key) idempotency records read with the sandbox's lock, not yet asked for. */
  readonly keys = new Map<string, IdempotencyRecord | undefined>();
  /** Settings per scope (a locked sandbox's, and the global ones), ordered by key. */
  readonly settings = new Map<string, SettingRecord[]>();
}

// `scope` is a parameter or an expression of parameters naming the sandbox id ('' is global).
export const POLICY_LOCK = (scope: string) => `SELECT pg_advisory_xact_lock(hashtextextended('openshell-gateway.policy:' || ${scope}, 0))`;
/** The same lock, shared: readers of a scope's latest revision that will not insert one. */
export const POLICY_LOCK_SHARED = (scope: string) => `SELECT pg_advisory_xact_lock_shared(hashtextextended('openshell-gateway.policy:' || ${scope}, 0))`;
export const LATEST_POLICY = (scope: string) => `SELECT * FROM policy_revisions WHERE sandbox_id = ${scope} ORDER BY version DESC LIMIT 1`;
export const PENDING_OPERATIONS = (sandbox: string) => `SELECT * FROM operations WHERE sandbox_id = ${sandbox} AND state = ${OPERATION_STATE_PENDING} ORDER BY created_at, id`;
/** A sandbox's settings and the global ones ('' sorts first), each ordered by key. */
export const BOTH_SETTINGS = (sandbox: string) => `SELECT * FROM settings WHERE sandbox_id IN (${sandbox}, '') ORDER BY sandbox_id, key`;

/**
 * A compare-and-set of an operation sent without waiting for its answer: when the row is no
 * longer at the expected version (a writer that does not lock the sandbox, such as the
 * reconciler, changed it since this transaction read it), the statement divides by zero, which
 * aborts the transaction before its COMMIT; the sender reports that as a serialization failure
 * (the statement is marked `cas`), so the transaction re-runs and reads the row anew, as it
 * would have after a lost CAS. A plain statement, unlike a DO block, is prepared once per
 * connection.
 */
export const checkedCas = (update: string) => `WITH changed AS (${update} RETURNING 1) SELECT 1 / count(*) FROM changed`;
/** A missed checkedCas (division_by_zero) as the serialization failure it stands for; other errors unchanged. */
export function casMissed(err: unknown): unknown {
  if (!(err instanceof pg.DatabaseError) || err.code !== "22012") return err;
  const conflict = new pg.DatabaseError("the operation changed concurrently", err.length, "error");
  conflict.code = "40001";
  return conflict;
}
