// Row mapping of the rollouts table, shared by the SQLite and PostgreSQL stores like ./rows.ts:
// the column lists, the record read from a row, the values of an INSERT and the assignments of a
// patch live here once; each engine passes its Columns codec plus how it binds a boolean
// (SQLite has none: STRICT INTEGER 0/1; PostgreSQL: boolean).
//
// Approvals are a JSON list of {wave, principal, at} with `at` in epoch milliseconds in both
// engines, so the JSON is the same whichever database holds it.

import { copyBytes } from "./codec.js";
import type { Columns } from "./rows.js";
import type { RolloutApprovalRow, RolloutPatch, RolloutRow } from "./rollouts.js";

export interface RolloutColumns<I, T, J> extends Columns<I, T, J> {
  /** A boolean as a parameter. */
  flag(b: boolean): unknown;
}

/** Every column but the bodies: what lists and updates return. */
export const ROLLOUT_HEAD_COLUMNS =
  "workspace, id, resource_version, created_by, created_at, updated_at, label_selector, change_hash, change_summary, phase, summary, approvals, lease_holder, lease_principal, lease_until, require_distinct_approver";
/** Every column, in the order of rolloutValues. */
export const ROLLOUT_COLUMNS = `${ROLLOUT_HEAD_COLUMNS}, request, state`;

export interface RolloutRowOf<I, T, J> {
  workspace: string;
  id: string;
  resource_version: I;
  created_by: string;
  created_at: T;
  updated_at: T;
  label_selector: string;
  change_hash: string;
  change_summary: string;
  phase: I;
  summary: Uint8Array;
  approvals: J;
  lease_holder: string | null;
  lease_principal: string | null;
  lease_until: T | null;
  /** SQLite: 0 or 1 (as bigint); PostgreSQL: boolean. */
  require_distinct_approver: I | boolean;
  request?: Uint8Array;
  state?: string;
}

const approvalsJson = (approvals: readonly RolloutApprovalRow[]): string =>
  JSON.stringify(approvals.map((a) => ({ wave: a.wave, principal: a.principal, at: a.at.getTime() })));

function approvalsFromJson(value: unknown): RolloutApprovalRow[] {
  if (!Array.isArray(value)) return [];
  return value.map((a: { wave?: unknown; principal?: unknown; at?: unknown }) => ({
    wave: Number(a.wave ?? 0),
    principal: String(a.principal ?? ""),
    at: new Date(Number(a.at ?? 0)),
  }));
}

/** The record of a row; `request` and `state` only with `withBody` (and only then selected). */
export function rolloutFromRow<I, T, J>(r: RolloutRowOf<I, T, J>, c: RolloutColumns<I, T, J>, withBody: boolean): RolloutRow {
  const distinct = r.require_distinct_approver;
  const row: RolloutRow = {
    workspace: r.workspace,
    id: r.id,
    resourceVersion: c.big(r.resource_version),
    createdBy: r.created_by,
    createdAt: c.date(r.created_at),
    updatedAt: c.date(r.updated_at),
    labelSelector: r.label_selector,
    changeHash: r.change_hash,
    changeSummary: r.change_summary,
    phase: c.int(r.phase),
    summary: copyBytes(r.summary),
    approvals: approvalsFromJson(c.json(r.approvals)),
    lease:
      r.lease_holder === null || r.lease_until === null
        ? undefined
        : { holder: r.lease_holder, principal: r.lease_principal ?? "", until: c.date(r.lease_until) },
    requireDistinctApprover: typeof distinct === "boolean" ? distinct : c.int(distinct) !== 0,
  };
  if (!withBody) return row;
  return { ...row, request: copyBytes(r.request ?? new Uint8Array()), state: r.state ?? "" };
}

/** INSERT values in ROLLOUT_COLUMNS order; a row without bodies stores empty ones. */
export function rolloutValues(r: RolloutRow, c: RolloutColumns<unknown, unknown, unknown>): unknown[] {
  return [
    r.workspace,
    r.id,
    r.resourceVersion,
    r.createdBy,
    c.time(r.createdAt),
    c.time(r.updatedAt),
    r.labelSelector,
    r.changeHash,
    r.changeSummary,
    r.phase,
    r.summary,
    approvalsJson(r.approvals),
    r.lease?.holder ?? null,
    r.lease?.principal ?? null,
    r.lease === undefined ? null : c.time(r.lease.until),
    c.flag(r.requireDistinctApprover),
    r.request ?? new Uint8Array(),
    r.state ?? "",
  ];
}

/** Assignments for the fields `p` sets (undefined = keep; `lease: null` clears all three lease columns). */
export function rolloutPatchColumns(p: RolloutPatch, c: RolloutColumns<unknown, unknown, unknown>): [string, unknown][] {
  const out: [string, unknown][] = [["updated_at", c.time(p.updatedAt)]];
  if (p.phase !== undefined) out.push(["phase", p.phase]);
  if (p.summary !== undefined) out.push(["summary", p.summary]);
  if (p.state !== undefined) out.push(["state", p.state]);
  if (p.approvals !== undefined) out.push(["approvals", approvalsJson(p.approvals)]);
  if (p.lease === null) out.push(["lease_holder", null], ["lease_principal", null], ["lease_until", null]);
  else if (p.lease !== undefined) out.push(["lease_holder", p.lease.holder], ["lease_principal", p.lease.principal], ["lease_until", c.time(p.lease.until)]);
  return out;
}
