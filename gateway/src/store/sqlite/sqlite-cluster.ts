// The SQLite statements of session ownership, the due operations of one replica's sandboxes and
// batched operation reads: the same logical behaviour as ../postgres/pg-cluster.ts, so the one
// behavioural suite holds for both. A SQLite gateway runs as one process and does not use them
// itself; they exist so that every store keeps the whole Store contract.

import type BetterSqlite3 from "better-sqlite3";
import { OPERATION_STATE_PENDING } from "../codec.js";
import type { OperationRecord, SessionOwnerRecord } from "../store.js";
import { ms, operationFromRow, type OperationRow } from "./sqlite-rows.js";

interface SessionOwnerRow {
  sandbox_id: string;
  replica_id: string;
  session_id: string;
  lease_until: bigint;
  acquired_at: bigint;
}

const ownerFromRow = (r: SessionOwnerRow): SessionOwnerRecord => ({
  sandboxId: r.sandbox_id,
  replicaId: r.replica_id,
  sessionId: r.session_id,
  leaseUntil: new Date(Number(r.lease_until)),
  acquiredAt: new Date(Number(r.acquired_at)),
});

/** Runs inside a transaction of the store (the caller's), so the read and the upsert are atomic. */
export function claimSession(db: BetterSqlite3.Database, o: SessionOwnerRecord): SessionOwnerRecord | undefined {
  const old = sessionOwner(db, o.sandboxId);
  db.prepare(
    `INSERT INTO session_owners (sandbox_id, replica_id, session_id, lease_until, acquired_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (sandbox_id) DO UPDATE SET replica_id = excluded.replica_id, session_id = excluded.session_id,
       lease_until = excluded.lease_until, acquired_at = excluded.acquired_at`,
  ).run(o.sandboxId, o.replicaId, o.sessionId, ms(o.leaseUntil), ms(o.acquiredAt));
  return old;
}

export function renewSessions(db: BetterSqlite3.Database, replicaId: string, sessionIds: readonly string[], leaseUntil: Date): string[] {
  if (sessionIds.length === 0) return [];
  return db
    .prepare("UPDATE session_owners SET lease_until = ? WHERE replica_id = ? AND session_id IN (SELECT value FROM json_each(?)) RETURNING session_id")
    .pluck()
    .all(ms(leaseUntil), replicaId, JSON.stringify(sessionIds)) as string[];
}

export function releaseSession(db: BetterSqlite3.Database, sandboxId: string, sessionId: string): boolean {
  return db.prepare("DELETE FROM session_owners WHERE sandbox_id = ? AND session_id = ?").run(sandboxId, sessionId).changes > 0;
}

export function sessionOwner(db: BetterSqlite3.Database, sandboxId: string): SessionOwnerRecord | undefined {
  const r = db.prepare("SELECT * FROM session_owners WHERE sandbox_id = ?").get(sandboxId) as SessionOwnerRow | undefined;
  return r && ownerFromRow(r);
}

/**
 * The due PENDING operations of sandboxes `replicaId` holds. Pending operations are few, so they
 * are read first, through the partial index operations_pending_due, and each one's owner looked
 * up: CROSS JOIN fixes that order. Without it SQLite, which has no statistics here, starts from
 * the replica's owners and reads every operation of each of their sandboxes.
 */
export const DUE_OWNED_OPERATIONS = `SELECT o.* FROM operations o CROSS JOIN session_owners s
  WHERE s.sandbox_id = o.sandbox_id AND o.state = ${OPERATION_STATE_PENDING} AND o.next_attempt_at <= ? AND s.replica_id = ? AND s.lease_until > ?
  ORDER BY o.created_at, o.id LIMIT ?`;

export function dueOwnedOperations(db: BetterSqlite3.Database, now: Date, limit: number, replicaId: string): OperationRecord[] {
  const rows = db.prepare(DUE_OWNED_OPERATIONS).all(ms(now), replicaId, ms(now), Math.max(0, Math.floor(limit))) as OperationRow[];
  return rows.map(operationFromRow);
}

export function operationsById(db: BetterSqlite3.Database, ids: readonly string[]): OperationRecord[] {
  if (ids.length === 0) return [];
  const rows = db.prepare("SELECT * FROM operations WHERE id IN (SELECT value FROM json_each(?))").all(JSON.stringify(ids)) as OperationRow[];
  return rows.map(operationFromRow);
}
