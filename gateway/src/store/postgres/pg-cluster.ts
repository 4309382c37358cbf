// The PostgreSQL statements that let several gateway replicas share one database: supervisor
// session ownership with leases, the due operations of the sandboxes one replica owns, and a
// batched read of operations by id (for waiters whose notification may have been lost).

import { OPERATION_STATE_PENDING } from "../codec.js";
import type { OperationRecord, SessionOwnerRecord } from "../store.js";
import { operationFromRow, type OperationRow } from "./pg-rows.js";
import type { Run } from "./pg-queries.js";

interface SessionOwnerRow {
  sandbox_id: string;
  replica_id: string;
  session_id: string;
  lease_until: Date;
  acquired_at: Date;
}

const ownerFromRow = (r: SessionOwnerRow): SessionOwnerRecord => ({
  sandboxId: r.sandbox_id,
  replicaId: r.replica_id,
  sessionId: r.session_id,
  leaseUntil: r.lease_until,
  acquiredAt: r.acquired_at,
});

export async function claimSession(run: Run, o: SessionOwnerRecord): Promise<SessionOwnerRecord | undefined> {
  // One statement: the CTE locks and returns the previous row while the upsert replaces it
  // (data-modifying CTEs run to completion whether or not the outer query reads them).
  const { rows } = await run<SessionOwnerRow>(
    `WITH old AS (SELECT * FROM session_owners WHERE sandbox_id = $1 FOR UPDATE),
          claimed AS (
            INSERT INTO session_owners (sandbox_id, replica_id, session_id, lease_until, acquired_at)
            VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (sandbox_id) DO UPDATE SET replica_id = excluded.replica_id, session_id = excluded.session_id,
              lease_until = excluded.lease_until, acquired_at = excluded.acquired_at
            RETURNING sandbox_id)
     SELECT * FROM old`,
    [o.sandboxId, o.replicaId, o.sessionId, o.leaseUntil, o.acquiredAt],
  );
  return rows[0] && ownerFromRow(rows[0]);
}

export async function renewSessions(run: Run, replicaId: string, sessionIds: readonly string[], leaseUntil: Date): Promise<string[]> {
  if (sessionIds.length === 0) return [];
  const { rows } = await run<{ session_id: string }>(
    "UPDATE session_owners SET lease_until = $3 WHERE replica_id = $1 AND session_id = ANY($2::text[]) RETURNING session_id",
    [replicaId, [...sessionIds], leaseUntil],
  );
  return rows.map((r) => r.session_id);
}

export async function releaseSession(run: Run, sandboxId: string, sessionId: string): Promise<boolean> {
  const r = await run("DELETE FROM session_owners WHERE sandbox_id = $1 AND session_id = $2", [sandboxId, sessionId]);
  return (r.rowCount ?? 0) > 0;
}

export async function sessionOwner(run: Run, sandboxId: string): Promise<SessionOwnerRecord | undefined> {
  const { rows } = await run<SessionOwnerRow>("SELECT * FROM session_owners WHERE sandbox_id = $1", [sandboxId]);
  return rows[0] && ownerFromRow(rows[0]);
}

/** The due PENDING operations of sandboxes `replicaId` holds (the reconciler's scan on PostgreSQL). */
export const DUE_OWNED_OPERATIONS = `SELECT o.* FROM operations o JOIN session_owners s ON s.sandbox_id = o.sandbox_id
  WHERE o.state = ${OPERATION_STATE_PENDING} AND o.next_attempt_at <= $1 AND s.replica_id = $2 AND s.lease_until > $1
  ORDER BY o.created_at, o.id LIMIT $3`;

export async function dueOwnedOperations(run: Run, now: Date, limit: number, replicaId: string): Promise<OperationRecord[]> {
  const { rows } = await run<OperationRow>(DUE_OWNED_OPERATIONS, [now, replicaId, Math.max(0, Math.floor(limit))]);
  return rows.map(operationFromRow);
}

export async function operationsById(run: Run, ids: readonly string[]): Promise<OperationRecord[]> {
  if (ids.length === 0) return [];
  const { rows } = await run<OperationRow>("SELECT * FROM operations WHERE id = ANY($1::text[])", [[...ids]]);
  return rows.map(operationFromRow);
}
