// Row shapes of the PostgreSQL tables as node-postgres returns them, and their conversion to
// store records. pg returns int8 as a string (it may exceed Number.MAX_SAFE_INTEGER): 64-bit
// counters become BigInt here, `number` fields are narrowed; timestamptz arrives as Date, bytea as
// Buffer and jsonb already parsed.

import { copyBytes, providerValues, stringList, stringMap } from "../codec.js";
import type {
  Dimension,
  EnforcementRecord,
  IdempotencyRecord,
  OperationRecord,
  PolicyRevisionRecord,
  ProviderRecord,
  SandboxRecord,
  SettingRecord,
} from "../store.js";

type Int8 = string;

export interface SandboxRow {
  id: string;
  workspace: string;
  name: string;
  labels: unknown;
  annotations: unknown;
  spec: Uint8Array;
  phase: number;
  resource_version: Int8;
  policy_version: Int8;
  policy_hash: string;
  settings_revision: Int8;
  provider_env_revision: Int8;
  providers: unknown;
  created_at: Date;
  deletion_at: Date | null;
}

export interface PolicyRevisionRow {
  sandbox_id: string;
  version: Int8;
  policy: Uint8Array;
  hash: string;
  status: number;
  load_error: string;
  created_at: Date;
  loaded_at: Date | null;
  provenance: unknown;
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
  created_at: Date;
}

export interface OperationRow {
  id: string;
  sandbox_id: string;
  workspace: string;
  dimension: string;
  component: number;
  desired_revision: Int8;
  target: Uint8Array | null;
  state: number;
  outcome: number;
  sanitized_error: string;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
  attempt_count: number;
  next_attempt_at: Date;
  row_version: Int8;
}

export interface ProviderRow {
  id: string;
  workspace: string;
  name: string;
  type: string;
  resource_version: Int8;
  value: unknown;
  created_at: Date;
}

const optionalDate = (d: Date | null): Date | undefined => d ?? undefined;

export function sandboxFromRow(r: SandboxRow): SandboxRecord {
  return {
    id: r.id,
    workspace: r.workspace,
    name: r.name,
    labels: stringMap(r.labels),
    annotations: stringMap(r.annotations),
    spec: copyBytes(r.spec),
    phase: r.phase,
    resourceVersion: BigInt(r.resource_version),
    policyVersion: Number(r.policy_version),
    policyHash: r.policy_hash,
    settingsRevision: BigInt(r.settings_revision),
    providerEnvRevision: BigInt(r.provider_env_revision),
    providers: stringList(r.providers),
    createdAt: r.created_at,
    deletionAt: optionalDate(r.deletion_at),
  };
}

export function policyRevisionFromRow(r: PolicyRevisionRow): PolicyRevisionRecord {
  return {
    sandboxId: r.sandbox_id,
    version: Number(r.version),
    policy: copyBytes(r.policy),
    hash: r.hash,
    status: r.status,
    loadError: r.load_error,
    createdAt: r.created_at,
    loadedAt: optionalDate(r.loaded_at),
    provenance: stringMap(r.provenance),
  };
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
    createdAt: r.created_at,
  };
}

export function operationFromRow(r: OperationRow): OperationRecord {
  return {
    id: r.id,
    sandboxId: r.sandbox_id,
    workspace: r.workspace,
    dimension: r.dimension as Dimension,
    component: r.component,
    desiredRevision: BigInt(r.desired_revision),
    target: r.target === null ? undefined : copyBytes(r.target),
    state: r.state,
    outcome: r.outcome,
    sanitizedError: r.sanitized_error,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    completedAt: optionalDate(r.completed_at),
    attemptCount: r.attempt_count,
    nextAttemptAt: r.next_attempt_at,
    rowVersion: Number(r.row_version),
  };
}

export function providerFromRow(r: ProviderRow): ProviderRecord {
  return {
    id: r.id,
    workspace: r.workspace,
    name: r.name,
    type: r.type,
    resourceVersion: BigInt(r.resource_version),
    values: providerValues(r.value),
    createdAt: r.created_at,
  };
}

export interface EnforcementRow {
  sandbox_id: string;
  state: number;
  policy_version: number;
  detail: Uint8Array;
  observed_at: Date;
}

export const enforcementFromRow = (r: EnforcementRow): EnforcementRecord => ({
  sandboxId: r.sandbox_id,
  state: r.state,
  policyVersion: r.policy_version,
  detail: copyBytes(r.detail),
  observedAt: r.observed_at,
});
