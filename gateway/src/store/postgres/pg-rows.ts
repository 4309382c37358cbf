// Row shapes of the PostgreSQL tables as node-postgres returns them, and their conversion to and
// from store records (the mapping itself is shared with SQLite: ../rows.ts). pg returns int8 as a
// string (it may exceed Number.MAX_SAFE_INTEGER): 64-bit counters become BigInt, `number` fields
// are narrowed; timestamptz arrives as Date, bytea as Buffer and jsonb already parsed.

import * as rows from "../rows.js";
import type { RolloutColumns, RolloutRowOf } from "../rollout-rows.js";
import type {
  EnforcementRecord,
  IdempotencyRecord,
  OperationPatch,
  OperationRecord,
  PolicyRevisionRecord,
  ProviderRecord,
  SandboxPatch,
  SandboxRecord,
} from "../store.js";

/** int4 columns arrive as numbers, int8 ones as strings. */
type Int = number | string;

const columns: rows.Columns<Int, Date, unknown> = {
  int: (v) => Number(v),
  big: (v) => BigInt(v),
  date: (v) => v,
  json: (v) => v,
  time: (d) => d,
};

export type SandboxRow = rows.SandboxRowOf<Int, Date, unknown>;
export type PolicyRevisionRow = rows.PolicyRevisionRowOf<Int, Date, unknown>;
export type SettingRow = rows.SettingRow;
export type IdempotencyRow = rows.IdempotencyRowOf<Date>;
export type OperationRow = rows.OperationRowOf<Int, Date>;
export type ProviderRow = rows.ProviderRowOf<Int, Date, unknown>;
export type EnforcementRow = rows.EnforcementRowOf<Int, Date>;

/** `col = $n` assignments, numbering from `values.length + 1`; appends to `values`. */
function assignments(columnsAndValues: [string, unknown][], values: unknown[]): string[] {
  return columnsAndValues.map(([c, v]) => {
    values.push(v);
    return `${c} = $${values.length}`;
  });
}

export const sandboxFromRow = (r: SandboxRow): SandboxRecord => rows.sandboxFromRow(r, columns);
export const sandboxValues = (s: SandboxRecord): unknown[] => rows.sandboxValues(s, columns);
export const patchedSandbox = rows.patchedSandbox;
export const sandboxPatchSets = (p: SandboxPatch, values: unknown[]): string[] => assignments(rows.sandboxPatchColumns(p, columns), values);
export const policyRevisionFromRow = (r: PolicyRevisionRow): PolicyRevisionRecord => rows.policyRevisionFromRow(r, columns);
export const policyRevisionValues = (p: PolicyRevisionRecord): unknown[] => rows.policyRevisionValues(p, columns);
export const settingFromRow = rows.settingFromRow;
export const idempotencyFromRow = (r: IdempotencyRow): IdempotencyRecord => rows.idempotencyFromRow(r, columns);
export const idempotencyValues = (i: IdempotencyRecord): unknown[] => rows.idempotencyValues(i, columns);
export const operationFromRow = (r: OperationRow): OperationRecord => rows.operationFromRow(r, columns);
export const operationValues = (o: OperationRecord): unknown[] => rows.operationValues(o, columns);
export const patchedOperation = rows.patchedOperation;
export const operationPatchSets = (p: OperationPatch, values: unknown[]): string[] => assignments(rows.operationPatchColumns(p, columns), values);
export const providerFromRow = (r: ProviderRow): ProviderRecord => rows.providerFromRow(r, columns);
export const enforcementFromRow = (r: EnforcementRow): EnforcementRecord => rows.enforcementFromRow(r, columns);

/** The rollouts table (../rollout-rows.ts): its boolean is a PostgreSQL boolean. */
export const rolloutColumns: RolloutColumns<Int, Date, unknown> = { ...columns, flag: (b) => b };
export type RolloutTableRow = RolloutRowOf<Int, Date, unknown>;
