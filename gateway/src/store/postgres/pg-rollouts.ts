// The PostgreSQL statements of shared rollout records (../rollouts.ts). The same logical
// behaviour as ../sqlite/sqlite-rollouts.ts, so the one behavioural suite holds for both. Each
// call is one statement on the pool, hence atomic on its own: the compare-and-set is the UPDATE's
// WHERE, which under READ COMMITTED a concurrent update of the same row re-checks after waiting
// for that row, so of two updates expecting the same version exactly one wins.

import { clampPageSize, decodeRolloutPageToken, rolloutPageToken } from "../codec.js";
import { ROLLOUT_COLUMNS, ROLLOUT_HEAD_COLUMNS, rolloutFromRow, rolloutPatchColumns, rolloutValues } from "../rollout-rows.js";
import type { RolloutListQuery, RolloutPatch, RolloutRow } from "../rollouts.js";
import { StoreConflictError } from "../store.js";
import type { Run } from "./pg-queries.js";
import { rolloutColumns, type RolloutTableRow } from "./pg-rows.js";

const INSERT = `INSERT INTO rollouts (${ROLLOUT_COLUMNS}) VALUES (${ROLLOUT_COLUMNS.split(",")
  .map((_, i) => `$${i + 1}`)
  .join(", ")}) ON CONFLICT DO NOTHING`;

export async function insertRollout(run: Run, r: RolloutRow): Promise<void> {
  const { rowCount } = await run(INSERT, rolloutValues(r, rolloutColumns));
  if (rowCount === 0) throw new StoreConflictError(`rollout ${r.workspace}/${r.id} already exists`);
}

export async function rollout(run: Run, workspace: string, id: string, withBody: boolean): Promise<RolloutRow | undefined> {
  const columns = withBody ? ROLLOUT_COLUMNS : ROLLOUT_HEAD_COLUMNS;
  const { rows } = await run<RolloutTableRow>(`SELECT ${columns} FROM rollouts WHERE workspace = $1 AND id = $2`, [workspace, id]);
  return rows[0] && rolloutFromRow(rows[0], rolloutColumns, withBody);
}

export async function listRollouts(run: Run, q: RolloutListQuery): Promise<{ items: RolloutRow[]; nextPageToken: string }> {
  const size = clampPageSize(q.pageSize);
  // Decoded first: a bad token is refused whatever the filters.
  const after = decodeRolloutPageToken(q.pageToken);
  if (q.workspaces !== undefined && q.workspaces.length === 0) return { items: [], nextPageToken: "" };
  const where: string[] = [];
  const values: unknown[] = [];
  const param = (v: unknown) => `$${values.push(v)}`;
  if (q.workspaces !== undefined) where.push(`workspace = ANY(${param([...q.workspaces])}::text[])`);
  if (q.phases.length > 0) where.push(`phase = ANY(${param([...q.phases])}::integer[])`);
  if (q.labelSelector !== undefined) where.push(`label_selector = ${param(q.labelSelector)}`);
  if (after) where.push(`(created_at, workspace, id) < (${param(new Date(after.createdAtMs))}, ${param(after.workspace)}, ${param(after.id)})`);
  const sql = `SELECT ${ROLLOUT_HEAD_COLUMNS} FROM rollouts ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
    ORDER BY created_at DESC, workspace DESC, id DESC LIMIT ${param(size + 1)}`;
  const { rows } = await run<RolloutTableRow>(sql, values);
  const items = rows.slice(0, size).map((r) => rolloutFromRow(r, rolloutColumns, false));
  const last = items[items.length - 1];
  return { items, nextPageToken: rows.length > size && last ? rolloutPageToken(last.createdAt.getTime(), last.workspace, last.id) : "" };
}

/** Compare-and-set on resource_version; undefined when it lost or the row is missing. */
export async function updateRollout(run: Run, workspace: string, id: string, expectedVersion: bigint, patch: RolloutPatch): Promise<RolloutRow | undefined> {
  const values: unknown[] = [];
  const sets = rolloutPatchColumns(patch, rolloutColumns).map(([c, v]) => `${c} = $${values.push(v)}`);
  sets.push("resource_version = resource_version + 1");
  values.push(workspace, id, expectedVersion);
  const n = values.length;
  const { rows } = await run<RolloutTableRow>(
    `UPDATE rollouts SET ${sets.join(", ")} WHERE workspace = $${n - 2} AND id = $${n - 1} AND resource_version = $${n} RETURNING ${ROLLOUT_HEAD_COLUMNS}`,
    values,
  );
  return rows[0] && rolloutFromRow(rows[0], rolloutColumns, false);
}
