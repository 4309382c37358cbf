// The SQLite statements of shared rollout records (../rollouts.ts). The same logical behaviour as
// ../postgres/pg-rollouts.ts, so the one behavioural suite holds for both. sqlite-store.ts runs
// writes as transactions of its group commit and reads through its read path; this file only
// knows the SQL.

import type BetterSqlite3 from "better-sqlite3";
import { clampPageSize, decodeRolloutPageToken, rolloutPageToken } from "../codec.js";
import { ROLLOUT_COLUMNS, ROLLOUT_HEAD_COLUMNS, rolloutFromRow, rolloutPatchColumns, rolloutValues } from "../rollout-rows.js";
import type { RolloutListQuery, RolloutPatch, RolloutRow } from "../rollouts.js";
import { StoreConflictError } from "../store.js";
import { rolloutColumns, type RolloutTableRow } from "./sqlite-rows.js";

/** Prepared statements per connection, by text (list filters make a bounded set of shapes). */
const prepared = new WeakMap<BetterSqlite3.Database, Map<string, BetterSqlite3.Statement>>();

function stmt(db: BetterSqlite3.Database, sql: string): BetterSqlite3.Statement {
  let cache = prepared.get(db);
  if (!cache) prepared.set(db, (cache = new Map()));
  let s = cache.get(sql);
  if (!s) cache.set(sql, (s = db.prepare(sql)));
  return s;
}

const INSERT = `INSERT INTO rollouts (${ROLLOUT_COLUMNS}) VALUES (${ROLLOUT_COLUMNS.split(",")
  .map(() => "?")
  .join(", ")}) ON CONFLICT DO NOTHING`;

/** Runs inside a store transaction; ON CONFLICT DO NOTHING keeps that transaction usable. */
export function insertRollout(db: BetterSqlite3.Database, r: RolloutRow): void {
  if (stmt(db, INSERT).run(...rolloutValues(r, rolloutColumns)).changes === 0) {
    throw new StoreConflictError(`rollout ${r.workspace}/${r.id} already exists`);
  }
}

export function rollout(db: BetterSqlite3.Database, workspace: string, id: string, withBody: boolean): RolloutRow | undefined {
  const columns = withBody ? ROLLOUT_COLUMNS : ROLLOUT_HEAD_COLUMNS;
  const r = stmt(db, `SELECT ${columns} FROM rollouts WHERE workspace = ? AND id = ?`).get(workspace, id) as RolloutTableRow | undefined;
  return r && rolloutFromRow(r, rolloutColumns, withBody);
}

export function listRollouts(db: BetterSqlite3.Database, q: RolloutListQuery): { items: RolloutRow[]; nextPageToken: string } {
  const size = clampPageSize(q.pageSize);
  // Decoded first: a bad token is refused whatever the filters.
  const after = decodeRolloutPageToken(q.pageToken);
  if (q.workspaces !== undefined && q.workspaces.length === 0) return { items: [], nextPageToken: "" };
  const where: string[] = [];
  const params: unknown[] = [];
  if (q.workspaces !== undefined) {
    where.push("workspace IN (SELECT value FROM json_each(?))");
    params.push(JSON.stringify(q.workspaces));
  }
  if (q.phases.length > 0) {
    where.push("phase IN (SELECT value FROM json_each(?))");
    params.push(JSON.stringify(q.phases));
  }
  if (q.labelSelector !== undefined) {
    where.push("label_selector = ?");
    params.push(q.labelSelector);
  }
  if (after) {
    where.push("(created_at, workspace, id) < (?, ?, ?)");
    params.push(after.createdAtMs, after.workspace, after.id);
  }
  const sql = `SELECT ${ROLLOUT_HEAD_COLUMNS} FROM rollouts ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
    ORDER BY created_at DESC, workspace DESC, id DESC LIMIT ?`;
  const rows = stmt(db, sql).all(...params, size + 1) as RolloutTableRow[];
  const items = rows.slice(0, size).map((r) => rolloutFromRow(r, rolloutColumns, false));
  const last = items[items.length - 1];
  return { items, nextPageToken: rows.length > size && last ? rolloutPageToken(last.createdAt.getTime(), last.workspace, last.id) : "" };
}

/** Compare-and-set on resource_version; undefined when it lost or the row is missing. */
export function updateRollout(db: BetterSqlite3.Database, workspace: string, id: string, expectedVersion: bigint, patch: RolloutPatch): RolloutRow | undefined {
  const assignments = rolloutPatchColumns(patch, rolloutColumns);
  const sets = [...assignments.map(([c]) => `${c} = ?`), "resource_version = resource_version + 1"];
  const r = stmt(db, `UPDATE rollouts SET ${sets.join(", ")} WHERE workspace = ? AND id = ? AND resource_version = ? RETURNING ${ROLLOUT_HEAD_COLUMNS}`).get(
    ...assignments.map(([, v]) => v),
    workspace,
    id,
    expectedVersion,
  ) as RolloutTableRow | undefined;
  return r && rolloutFromRow(r, rolloutColumns, false);
}
