// Rollout rows (store/rollouts.ts) to the wire's RolloutRecord and back: the summary and the
// request template travel as protobuf binary in the store, decoded only here. Also the change
// hash, which the gateway computes so that every client agrees on it.

import { createHash } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  RolloutRecordSchema,
  RolloutSummarySchema,
  UpdateConfigRequestSchema,
  type RolloutRecord,
  type RolloutSummary,
  type UpdateConfigRequest,
} from "openshell-config/raw";
import type { RolloutRow } from "../store/rollouts.js";

/** Lower-case hex SHA-256 of the request template's binary encoding. */
export function changeHash(request: UpdateConfigRequest): string {
  return createHash("sha256").update(toBinary(UpdateConfigRequestSchema, request)).digest("hex");
}

export const encodeSummary = (summary: RolloutSummary): Uint8Array => toBinary(RolloutSummarySchema, summary);

/** A stored summary; an empty one (all defaults) when the bytes are empty. */
export const decodeSummary = (bytes: Uint8Array): RolloutSummary => fromBinary(RolloutSummarySchema, bytes);

/** The record a read returns: with `request` and `state_json` only when `full` and the row carries them. */
export function toRolloutRecord(row: RolloutRow, full: boolean): RolloutRecord {
  return create(RolloutRecordSchema, {
    id: row.id,
    workspace: row.workspace,
    resourceVersion: row.resourceVersion,
    createdBy: row.createdBy,
    createdTime: timestampFromDate(row.createdAt),
    updatedTime: timestampFromDate(row.updatedAt),
    labelSelector: row.labelSelector,
    changeHash: row.changeHash,
    changeSummary: row.changeSummary,
    summary: decodeSummary(row.summary),
    approvals: row.approvals.map((a) => ({ wave: a.wave, principal: a.principal, approvedTime: timestampFromDate(a.at) })),
    ...(row.lease ? { lease: { holder: row.lease.holder, principal: row.lease.principal, expireTime: timestampFromDate(row.lease.until) } } : {}),
    requireDistinctApprover: row.requireDistinctApprover,
    ...(full && row.request ? { request: fromBinary(UpdateConfigRequestSchema, row.request) } : {}),
    ...(full && row.state !== undefined ? { stateJson: row.state } : {}),
  });
}

/** The key of a rollout in notifications and watcher sets: `<workspace>/<id>` (neither holds a '/'). */
export const rolloutKey = (workspace: string, id: string): string => `${workspace}/${id}`;

export function parseRolloutKey(key: string): { workspace: string; id: string } | undefined {
  const slash = key.indexOf("/");
  if (slash <= 0 || slash === key.length - 1) return undefined;
  return { workspace: key.slice(0, slash), id: key.slice(slash + 1) };
}
