// Row shapes of the SQLite tables and their conversion to and from store records. The
// connection reads every INTEGER as BigInt (defaultSafeIntegers), so 64-bit counters survive
// exactly; fields the records type as `number` are narrowed here.

import { copyBytes, providerValues, stringList, stringMap } from "../codec.js";
import type {
  Dimension,
  EnforcementRecord,
  IdempotencyRecord,
  OperationPatch,
  OperationRecord,
  PolicyRevisionRecord,
  ProviderRecord,
  SandboxPatch,
  SandboxRecord,
  SettingRecord,
} from "../store.js";

export interface SandboxRow {
  id: string;
  workspace: string;
  name: string;
  labels: string;
  annotations: string;
  spec: Uint8Array;
  phase: bigint;
  resource_version: bigint;
  policy_version: bigint;
  policy_hash: string;
  settings_revision: bigint;
  provider_env_revision: bigint;
  providers: string;
  created_at: bigint;
  deletion_at: bigint | null;
}

export interface PolicyRevisionRow {
  sandbox_id: string;
  version: bigint;
  policy: Uint8Array;
  hash: string;
  status: bigint;
  load_error: string;
  created_at: bigint;
  loaded_at: bigint | null;
  provenance: string;
}

export interface SettingRow {
  sandbox_id: string;
  key: string;
  value: Uint8Array;
}

export interface IdempotencyRow {
  sandbox_id: string;
  key: string;
  fingerprint: string;
  dimension: string;
  operation_id: string;
  response: Uint8Array;
  created_at: bigint;
}

export interface OperationRow {
  id: string;
  sandbox_id: string;
  workspace: string;
  dimension: string;
  component: bigint;
  desired_revision: bigint;
  target: Uint8Array | null;
  state: bigint;
  outcome: bigint;
  sanitized_error: string;
  created_at: bigint;
  updated_at: bigint;
  completed_at: bigint | null;
  attempt_count: bigint;
  next_attempt_at: bigint;
  row_version: bigint;
}

export interface ProviderRow {
  id: string;
  workspace: string;
  name: string;
  type: string;
  resource_version: bigint;
  value: string;
  created_at: bigint;
}

const date = (ms: bigint): Date => new Date(Number(ms));
const optionalDate = (ms: bigint | null): Date | undefined => (ms === null ? undefined : date(ms));
export const ms = (d: Date): number => d.getTime();
const optionalMs = (d: Date | undefined): number | null => (d === undefined ? null : d.getTime());
const json = (text: string): unknown => JSON.parse(text) as unknown;

export function sandboxFromRow(r: SandboxRow): SandboxRecord {
  return {
    id: r.id,
    workspace: r.workspace,
    name: r.name,
    labels: stringMap(json(r.labels)),
    annotations: stringMap(json(r.annotations)),
    spec: copyBytes(r.spec),
    phase: Number(r.phase),
    resourceVersion: r.resource_version,
    policyVersion: Number(r.policy_version),
    policyHash: r.policy_hash,
    settingsRevision: r.settings_revision,
    providerEnvRevision: r.provider_env_revision,
    providers: stringList(json(r.providers)),
    createdAt: date(r.created_at),
    deletionAt: optionalDate(r.deletion_at),
  };
}

export function sandboxParams(s: SandboxRecord): unknown[] {
  return [
    s.id,
    s.workspace,
    s.name,
    JSON.stringify(s.labels),
    JSON.stringify(s.annotations),
    s.spec,
    s.phase,
    s.resourceVersion,
    s.policyVersion,
    s.policyHash,
    s.settingsRevision,
    s.providerEnvRevision,
    JSON.stringify(s.providers),
    ms(s.createdAt),
    optionalMs(s.deletionAt),
  ];
}

/** `col = ?` assignments and their values for the fields a patch sets (undefined = keep). */
export function sandboxPatchSql(p: SandboxPatch): { sets: string[]; values: unknown[] } {
  const sets: string[] = [];
  const values: unknown[] = [];
  const set = (column: string, value: unknown) => {
    sets.push(`${column} = ?`);
    values.push(value);
  };
  if (p.phase !== undefined) set("phase", p.phase);
  if (p.annotations !== undefined) set("annotations", JSON.stringify(p.annotations));
  if (p.labels !== undefined) set("labels", JSON.stringify(p.labels));
  if (p.spec !== undefined) set("spec", p.spec);
  if (p.policyVersion !== undefined) set("policy_version", p.policyVersion);
  if (p.policyHash !== undefined) set("policy_hash", p.policyHash);
  if (p.settingsRevision !== undefined) set("settings_revision", p.settingsRevision);
  if (p.providerEnvRevision !== undefined) set("provider_env_revision", p.providerEnvRevision);
  if (p.deletionAt !== undefined) set("deletion_at", ms(p.deletionAt));
  return { sets, values };
}

export function policyRevisionFromRow(r: PolicyRevisionRow): PolicyRevisionRecord {
  return {
    sandboxId: r.sandbox_id,
    version: Number(r.version),
    policy: copyBytes(r.policy),
    hash: r.hash,
    status: Number(r.status),
    loadError: r.load_error,
    createdAt: date(r.created_at),
    loadedAt: optionalDate(r.loaded_at),
    provenance: stringMap(json(r.provenance)),
  };
}

export function policyRevisionParams(p: PolicyRevisionRecord): unknown[] {
  return [p.sandboxId, p.version, p.policy, p.hash, p.status, p.loadError, ms(p.createdAt), optionalMs(p.loadedAt), JSON.stringify(p.provenance)];
}

export function settingFromRow(r: SettingRow): SettingRecord {
  return { sandboxId: r.sandbox_id, key: r.key, value: copyBytes(r.value) };
}

export function idempotencyFromRow(r: IdempotencyRow): IdempotencyRecord {
  return {
    sandboxId: r.sandbox_id,
    key: r.key,
    fingerprint: r.fingerprint,
    dimension: r.dimension as Dimension,
    operationId: r.operation_id,
    response: copyBytes(r.response),
    createdAt: date(r.created_at),
  };
}

export function idempotencyParams(i: IdempotencyRecord): unknown[] {
  return [i.sandboxId, i.key, i.fingerprint, i.dimension, i.operationId, i.response, ms(i.createdAt)];
}

export function operationFromRow(r: OperationRow): OperationRecord {
  return {
    id: r.id,
    sandboxId: r.sandbox_id,
    workspace: r.workspace,
    dimension: r.dimension as Dimension,
    component: Number(r.component),
    desiredRevision: r.desired_revision,
    target: r.target === null ? undefined : copyBytes(r.target),
    state: Number(r.state),
    outcome: Number(r.outcome),
    sanitizedError: r.sanitized_error,
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
    completedAt: optionalDate(r.completed_at),
    attemptCount: Number(r.attempt_count),
    nextAttemptAt: date(r.next_attempt_at),
    rowVersion: Number(r.row_version),
  };
}

export function operationParams(o: OperationRecord): unknown[] {
  return [
    o.id,
    o.sandboxId,
    o.workspace,
    o.dimension,
    o.component,
    o.desiredRevision,
    o.target ?? null,
    o.state,
    o.outcome,
    o.sanitizedError,
    ms(o.createdAt),
    ms(o.updatedAt),
    optionalMs(o.completedAt),
    o.attemptCount,
    ms(o.nextAttemptAt),
    o.rowVersion,
  ];
}

export function operationPatchSql(p: OperationPatch): { sets: string[]; values: unknown[] } {
  const sets: string[] = [];
  const values: unknown[] = [];
  const set = (column: string, value: unknown) => {
    sets.push(`${column} = ?`);
    values.push(value);
  };
  if (p.state !== undefined) set("state", p.state);
  if (p.outcome !== undefined) set("outcome", p.outcome);
  if (p.sanitizedError !== undefined) set("sanitized_error", p.sanitizedError);
  // null clears the target; undefined keeps it.
  if (p.target !== undefined) set("target", p.target);
  if (p.completedAt !== undefined) set("completed_at", ms(p.completedAt));
  if (p.attemptCount !== undefined) set("attempt_count", p.attemptCount);
  if (p.nextAttemptAt !== undefined) set("next_attempt_at", ms(p.nextAttemptAt));
  return { sets, values };
}

export function providerFromRow(r: ProviderRow): ProviderRecord {
  return {
    id: r.id,
    workspace: r.workspace,
    name: r.name,
    type: r.type,
    resourceVersion: r.resource_version,
    values: providerValues(json(r.value)),
    createdAt: date(r.created_at),
  };
}

export interface EnforcementRow {
  sandbox_id: string;
  state: bigint;
  policy_version: bigint;
  detail: Uint8Array;
  observed_at: bigint;
}

export const enforcementFromRow = (r: EnforcementRow): EnforcementRecord => ({
  sandboxId: r.sandbox_id,
  state: Number(r.state),
  policyVersion: Number(r.policy_version),
  detail: copyBytes(r.detail),
  observedAt: new Date(Number(r.observed_at)),
});
