// What `policy rollout status ID` adds for a rollout the gateway keeps a shared record of: who
// created it, who approved each wave and when, who drives it now (the lease holder, while the
// lease is live), and whether its creator may approve (four eyes). Fields of the JSON document
// and lines of the table, apart from rollout-status.ts, which reads the state either way.

import type { SharedRollout } from "openshell-config/rollout";
import { formatAge } from "./format.js";

/** The shared record's part of the status document; `shared: false` for a rollout only a local state file knows. */
export function sharedFields(record: SharedRollout | undefined, now: number = Date.now()) {
  if (record === undefined) return { shared: false, createdBy: null, createdAt: null, approvals: [], lease: null, requireDistinctApprover: false, awaitingApproval: null };
  const live = record.lease !== undefined && record.lease.expiresAt.getTime() > now;
  return {
    shared: true,
    createdBy: record.createdBy,
    createdAt: record.createdAt,
    // Waves as the tables number them: 1 is the first.
    approvals: record.approvals.map((a) => ({ wave: a.wave + 1, by: a.by, at: a.at })),
    lease: live ? record.lease! : null,
    requireDistinctApprover: record.requireDistinctApprover,
    awaitingApproval: record.awaitingApproval,
  };
}

type Shared = ReturnType<typeof sharedFields> & { readonly phase: string };

/** The lines under `status:`: creator, approvals, driver. None for a local-only rollout. */
export function sharedLines(d: Shared, now: number = Date.now()): string[] {
  if (!d.shared || d.createdAt === null) return [];
  const lines = [`created by ${d.createdBy || "unknown"} ${formatAge(d.createdAt, now)} ago${d.requireDistinctApprover ? " (four eyes: another person approves)" : ""}`];
  for (const a of d.approvals) lines.push(`wave ${a.wave} approved by ${a.by} ${formatAge(a.at, now)} ago (${a.at.toISOString()})`);
  if (d.lease !== null) lines.push(`driven by ${d.lease.holder} (${d.lease.principal}), lease until ${d.lease.expiresAt.toISOString()}`);
  else if (d.phase === "running" || d.phase === "rolling-back") lines.push("driven by nobody now: its driver stopped; resume continues it");
  return lines;
}
