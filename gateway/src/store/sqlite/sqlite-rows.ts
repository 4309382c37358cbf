// Row shapes of the SQLite tables and their conversion to and from store records (the mapping
// itself is shared with PostgreSQL: ../rows.ts). The connection reads every INTEGER as BigInt
// (defaultSafeIntegers), so 64-bit counters survive exactly; fields the records type as `number`
// are narrowed. Times are epoch milliseconds, JSON columns text.

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

export const ms = (d: Date): number => d.getTime();

const columns: rows.Columns<bigint, bigint, string> = {
  int: (v) => Number(v),
  big: (v) => BigInt(v),
  date: (v) => new Date(Number(v)),
  json: (v) => JSON.parse(v) as unknown,
  time: ms,
};

export type SandboxRow = rows.SandboxRowOf<bigint, bigint, string>;
export type PolicyRevisionRow = rows.PolicyRevisionRowOf<bigint, bigint, string>;
export type SettingRow = rows.SettingRow;
export type IdempotencyRow = rows.IdempotencyRowOf<bigint>;
export type OperationRow = rows.OperationRowOf<bigint, bigint>;
export type ProviderRow = rows.ProviderRowOf<bigint, bigint, string>;
export type EnforcementRow = rows.EnforcementRowOf<bigint, bigint>;

/** `col = ?` assignments and their values. */
function assignments(columnsAndValues: [string, unknown][]): { sets: string[]; values: unknown[] } {
  return { sets: columnsAndValues.map(([c]) => `${c} = ?`), values: columnsAndValues.map(([, v]) => v) };
}

export const sandboxFromRow = (r: SandboxRow): SandboxRecord => rows.sandboxFromRow(r, columns);
export const sandboxParams = (s: SandboxRecord): unknown[] => rows.sandboxValues(s, columns);
/** `col = ?` assignments and their values for the fields a patch sets (undefined = keep). */
export const sandboxPatchSql = (p: SandboxPatch) => assignments(rows.sandboxPatchColumns(p, columns));
export const policyRevisionFromRow = (r: PolicyRevisionRow): PolicyRevisionRecord => rows.policyRevisionFromRow(r, columns);
export const policyRevisionParams = (p: PolicyRevisionRecord): unknown[] => rows.policyRevisionValues(p, columns);
export const settingFromRow = rows.settingFromRow;
export const idempotencyFromRow = (r: IdempotencyRow): IdempotencyRecord => rows.idempotencyFromRow(r, columns);
export const idempotencyParams = (i: IdempotencyRecord): unknown[] => rows.idempotencyValues(i, columns);
export const operationFromRow = (r: OperationRow): OperationRecord => rows.operationFromRow(r, columns);
export const operationParams = (o: OperationRecord): unknown[] => rows.operationValues(o, columns);
export const patchedSandbox = rows.patchedSandbox;
export const patchedOperation = rows.patchedOperation;
export const operationPatchSql = (p: OperationPatch) => assignments(rows.operationPatchColumns(p, columns));
export const providerFromRow = (r: ProviderRow): ProviderRecord => rows.providerFromRow(r, columns);
export const enforcementFromRow = (r: EnforcementRow): EnforcementRecord => rows.enforcementFromRow(r, columns);

/** The rollouts table (../rollout-rows.ts): STRICT INTEGER 0/1 for its one boolean. */
export const rolloutColumns: RolloutColumns<bigint, bigint, string> = { ...columns, flag: (b) => (b ? 1 : 0) };
export type RolloutTableRow = RolloutRowOf<bigint, bigint, string>;
