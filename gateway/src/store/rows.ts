// Row mapping shared by the SQLite and PostgreSQL stores. The tables have the same columns in
// both; only how a column's value travels differs (SQLite: integers as bigint, times as epoch
// milliseconds, JSON as text; PostgreSQL: int8 as a string, timestamptz as Date, jsonb parsed).
// Each engine passes its Columns codec; the field-to-column correspondence lives here once: the
// records read from rows, the values of an INSERT in table column order, and the assignments of
// a sandbox or operation patch.

import { copyBytes, providerValues, stringList, stringMap } from "./codec.js";
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
} from "./store.js";

/** How one engine's driver represents integers (I), times (T) and JSON (J) columns. */
export interface Columns<I, T, J> {
  int(v: I): number;
  big(v: I): bigint;
  date(v: T): Date;
  json(v: J): unknown;
  /** A time as a parameter. */
  time(d: Date): unknown;
}

export const optionalDate = <T>(c: Columns<unknown, T, unknown>, v: T | null): Date | undefined => (v === null ? undefined : c.date(v));
const optionalTime = (c: Columns<unknown, unknown, unknown>, d: Date | undefined): unknown => (d === undefined ? null : c.time(d));

export interface SandboxRowOf<I, T, J> {
  id: string;
  workspace: string;
  name: string;
  labels: J;
  annotations: J;
  spec: Uint8Array;
  phase: I;
  resource_version: I;
  policy_version: I;
  policy_hash: string;
  settings_revision: I;
  provider_env_revision: I;
  providers: J;
  created_at: T;
  deletion_at: T | null;
}

export interface PolicyRevisionRowOf<I, T, J> {
  sandbox_id: string;
  version: I;
  policy: Uint8Array;
  hash: string;
  status: I;
  load_error: string;
  created_at: T;
  loaded_at: T | null;
  provenance: J;
}

export interface SettingRow {
  sandbox_id: string;
  key: string;
  value: Uint8Array;
}

export interface IdempotencyRowOf<T> {
  sandbox_id: string;
  key: string;
  fingerprint: string;
  dimension: string;
  operation_id: string;
  response: Uint8Array;
  created_at: T;
}

export interface OperationRowOf<I, T> {
  id: string;
  sandbox_id: string;
  workspace: string;
  dimension: string;
  component: I;
  desired_revision: I;
  target: Uint8Array | null;
  state: I;
  outcome: I;
  sanitized_error: string;
  created_at: T;
  updated_at: T;
  completed_at: T | null;
  attempt_count: I;
  next_attempt_at: T;
  row_version: I;
}

export interface ProviderRowOf<I, T, J> {
  id: string;
  workspace: string;
  name: string;
  type: string;
  resource_version: I;
  value: J;
  created_at: T;
}

export interface EnforcementRowOf<I, T> {
  sandbox_id: string;
  state: I;
  policy_version: I;
  detail: Uint8Array;
  observed_at: T;
}

export function sandboxFromRow<I, T, J>(r: SandboxRowOf<I, T, J>, c: Columns<I, T, J>): SandboxRecord {
  return {
    id: r.id,
    workspace: r.workspace,
    name: r.name,
    labels: stringMap(c.json(r.labels)),
    annotations: stringMap(c.json(r.annotations)),
    spec: copyBytes(r.spec),
    phase: c.int(r.phase),
    resourceVersion: c.big(r.resource_version),
    policyVersion: c.int(r.policy_version),
    policyHash: r.policy_hash,
    settingsRevision: c.big(r.settings_revision),
    providerEnvRevision: c.big(r.provider_env_revision),
    providers: stringList(c.json(r.providers)),
    createdAt: c.date(r.created_at),
    deletionAt: optionalDate(c, r.deletion_at),
  };
}

/** INSERT values of a sandbox, in table column order. */
export function sandboxValues(s: SandboxRecord, c: Columns<unknown, unknown, unknown>): unknown[] {
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
    c.time(s.createdAt),
    optionalTime(c, s.deletionAt),
  ];
}

/**
 * `sb` after `p`, as its row would read back (maps and bytes copied; fields in the order of
 * sandboxFromRow): what an engine answers instead of reading the row again when its transaction
 * holds the row as it stands.
 */
export function patchedSandbox(sb: SandboxRecord, p: SandboxPatch): SandboxRecord {
  return {
    id: sb.id,
    workspace: sb.workspace,
    name: sb.name,
    labels: p.labels !== undefined ? { ...p.labels } : sb.labels,
    annotations: p.annotations !== undefined ? { ...p.annotations } : sb.annotations,
    spec: p.spec !== undefined ? copyBytes(p.spec) : sb.spec,
    phase: p.phase ?? sb.phase,
    resourceVersion: sb.resourceVersion + 1n,
    policyVersion: p.policyVersion ?? sb.policyVersion,
    policyHash: p.policyHash ?? sb.policyHash,
    settingsRevision: p.settingsRevision ?? sb.settingsRevision,
    providerEnvRevision: p.providerEnvRevision ?? sb.providerEnvRevision,
    providers: sb.providers,
    createdAt: sb.createdAt,
    deletionAt: p.deletionAt ?? sb.deletionAt,
  };
}

/** (column, value) of every field `p` sets (undefined = keep). */
export function sandboxPatchColumns(p: SandboxPatch, c: Columns<unknown, unknown, unknown>): [string, unknown][] {
  const out: [string, unknown][] = [];
  if (p.phase !== undefined) out.push(["phase", p.phase]);
  if (p.annotations !== undefined) out.push(["annotations", JSON.stringify(p.annotations)]);
  if (p.labels !== undefined) out.push(["labels", JSON.stringify(p.labels)]);
  if (p.spec !== undefined) out.push(["spec", p.spec]);
  if (p.policyVersion !== undefined) out.push(["policy_version", p.policyVersion]);
  if (p.policyHash !== undefined) out.push(["policy_hash", p.policyHash]);
  if (p.settingsRevision !== undefined) out.push(["settings_revision", p.settingsRevision]);
  if (p.providerEnvRevision !== undefined) out.push(["provider_env_revision", p.providerEnvRevision]);
  if (p.deletionAt !== undefined) out.push(["deletion_at", c.time(p.deletionAt)]);
  return out;
}

export function policyRevisionFromRow<I, T, J>(r: PolicyRevisionRowOf<I, T, J>, c: Columns<I, T, J>): PolicyRevisionRecord {
  return {
    sandboxId: r.sandbox_id,
    version: c.int(r.version),
    policy: copyBytes(r.policy),
    hash: r.hash,
    status: c.int(r.status),
    loadError: r.load_error,
    createdAt: c.date(r.created_at),
    loadedAt: optionalDate(c, r.loaded_at),
    provenance: stringMap(c.json(r.provenance)),
  };
}

export function policyRevisionValues(p: PolicyRevisionRecord, c: Columns<unknown, unknown, unknown>): unknown[] {
  return [p.sandboxId, p.version, p.policy, p.hash, p.status, p.loadError, c.time(p.createdAt), optionalTime(c, p.loadedAt), JSON.stringify(p.provenance)];
}

export function settingFromRow(r: SettingRow): SettingRecord {
  return { sandboxId: r.sandbox_id, key: r.key, value: copyBytes(r.value) };
}

export function idempotencyFromRow<T>(r: IdempotencyRowOf<T>, c: Columns<unknown, T, unknown>): IdempotencyRecord {
  return {
    sandboxId: r.sandbox_id,
    key: r.key,
    fingerprint: r.fingerprint,
    dimension: r.dimension as Dimension,
    operationId: r.operation_id,
    response: copyBytes(r.response),
    createdAt: c.date(r.created_at),
  };
}

export function idempotencyValues(i: IdempotencyRecord, c: Columns<unknown, unknown, unknown>): unknown[] {
  return [i.sandboxId, i.key, i.fingerprint, i.dimension, i.operationId, i.response, c.time(i.createdAt)];
}

export function operationFromRow<I, T>(r: OperationRowOf<I, T>, c: Columns<I, T, unknown>): OperationRecord {
  return {
    id: r.id,
    sandboxId: r.sandbox_id,
    workspace: r.workspace,
    dimension: r.dimension as Dimension,
    component: c.int(r.component),
    desiredRevision: c.big(r.desired_revision),
    target: r.target === null ? undefined : copyBytes(r.target),
    state: c.int(r.state),
    outcome: c.int(r.outcome),
    sanitizedError: r.sanitized_error,
    createdAt: c.date(r.created_at),
    updatedAt: c.date(r.updated_at),
    completedAt: optionalDate(c, r.completed_at),
    attemptCount: c.int(r.attempt_count),
    nextAttemptAt: c.date(r.next_attempt_at),
    rowVersion: c.int(r.row_version),
  };
}

export function operationValues(o: OperationRecord, c: Columns<unknown, unknown, unknown>): unknown[] {
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
    c.time(o.createdAt),
    c.time(o.updatedAt),
    optionalTime(c, o.completedAt),
    o.attemptCount,
    c.time(o.nextAttemptAt),
    o.rowVersion,
  ];
}

/** `o` after `p` (updated at `updatedAt`, row version bumped), as its row would read back; see patchedSandbox. */
export function patchedOperation(o: OperationRecord, p: OperationPatch, updatedAt: Date): OperationRecord {
  return {
    id: o.id,
    sandboxId: o.sandboxId,
    workspace: o.workspace,
    dimension: o.dimension,
    component: o.component,
    desiredRevision: o.desiredRevision,
    target: p.target === undefined ? o.target : p.target === null ? undefined : copyBytes(p.target),
    state: p.state ?? o.state,
    outcome: p.outcome ?? o.outcome,
    sanitizedError: p.sanitizedError ?? o.sanitizedError,
    createdAt: o.createdAt,
    updatedAt,
    completedAt: p.completedAt ?? o.completedAt,
    attemptCount: p.attemptCount ?? o.attemptCount,
    nextAttemptAt: p.nextAttemptAt ?? o.nextAttemptAt,
    rowVersion: o.rowVersion + 1,
  };
}

/** (column, value) of every field `p` sets; a null target clears it, undefined keeps it. */
export function operationPatchColumns(p: OperationPatch, c: Columns<unknown, unknown, unknown>): [string, unknown][] {
  const out: [string, unknown][] = [];
  if (p.state !== undefined) out.push(["state", p.state]);
  if (p.outcome !== undefined) out.push(["outcome", p.outcome]);
  if (p.sanitizedError !== undefined) out.push(["sanitized_error", p.sanitizedError]);
  if (p.target !== undefined) out.push(["target", p.target]);
  if (p.completedAt !== undefined) out.push(["completed_at", c.time(p.completedAt)]);
  if (p.attemptCount !== undefined) out.push(["attempt_count", p.attemptCount]);
  if (p.nextAttemptAt !== undefined) out.push(["next_attempt_at", c.time(p.nextAttemptAt)]);
  return out;
}

export function providerFromRow<I, T, J>(r: ProviderRowOf<I, T, J>, c: Columns<I, T, J>): ProviderRecord {
  return {
    id: r.id,
    workspace: r.workspace,
    name: r.name,
    type: r.type,
    resourceVersion: c.big(r.resource_version),
    values: providerValues(c.json(r.value)),
    createdAt: c.date(r.created_at),
  };
}

export function enforcementFromRow<I, T>(r: EnforcementRowOf<I, T>, c: Columns<I, T, unknown>): EnforcementRecord {
  return {
    sandboxId: r.sandbox_id,
    state: c.int(r.state),
    policyVersion: c.int(r.policy_version),
    detail: copyBytes(r.detail),
    observedAt: c.date(r.observed_at),
  };
}
