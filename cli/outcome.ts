// What a command's result means for the user: the exit status of each terminal state, and the
// human and JSON forms of an operation status.

import type { Completion, OperationStatus, TargetRevision } from "openshell-config";
import { formatDuration } from "./format.js";
import type { Output } from "./output.js";

/** Exit statuses. */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  /** The local wait ended; the operation keeps running (as timeout(1)). */
  timeout: 124,
  /** The wait lost the gateway (down, restarting, UNAVAILABLE) after the commit; it keeps running (sysexits' EX_UNAVAILABLE). */
  unreachable: 69,
  /** What the command needs is not offered: a gateway that keeps no shared rollouts (EX_UNAVAILABLE too). */
  unavailable: 69,
  /** Try again later: another driver holds the rollout's lease until the time printed (sysexits' EX_TEMPFAIL). */
  tempfail: 75,
  /** SIGINT (128 + 2). */
  interrupted: 130,
} as const;

/** 0 for applied (degraded included) and inactive; 1 for failed, superseded and cancelled. */
export function exitCodeOf(c: Completion): number {
  return c.state === "applied" || c.state === "inactive" ? EXIT.ok : EXIT.failed;
}

/** One sentence about what happened to `subject` (e.g. `policy v4 of sandbox web`). */
export function summarize(status: OperationStatus, subject: string): string {
  switch (status.state) {
    case "applied":
      if (status.outcome === "degraded") return `${subject}: applied, degraded (the sandbox runs it with reduced function)`;
      if (status.outcome === "ignored-duplicate") return `${subject}: applied (the sandbox already ran an identical configuration)`;
      return `${subject}: applied`;
    case "inactive":
      return `${subject}: inactive (the sandbox is stopped; the change is stored and applies when it starts)`;
    case "failed":
      return `${subject}: failed (${status.outcome})`;
    case "superseded":
      return `${subject}: superseded (a newer revision replaced it before it was applied)`;
    case "cancelled":
      return `${subject}: cancelled (the sandbox is being deleted or is gone; the change will never apply)`;
    case "pending":
      return `${subject}: pending (not yet applied by the sandbox)`;
  }
}

export function formatTarget(t: TargetRevision | undefined): string | undefined {
  if (t === undefined) return undefined;
  switch (t.kind) {
    case "sandbox-config":
      // The config revision (a fingerprint of policy and settings) stays in the JSON: as text it
      // says nothing the policy version and settings revision do not.
      return `policy v${t.policyVersion} (${t.policySource}${t.globalPolicyVersion ? ` v${t.globalPolicyVersion}` : ""}), settings revision ${t.settingsRevision}`;
    case "provider-environment":
      return `provider environment revision ${t.providerEnvRevision}`;
    case "provider-target":
      return `provider ${t.providerId} (resource version ${t.providerResourceVersion})`;
    case "policy-version":
      return `policy v${t.policyVersion}`;
  }
}

/** Key-value rows of an operation status, for the human table. */
export function statusRows(s: OperationStatus): [string, string | undefined][] {
  const took = s.createdAt && s.completedAt ? ` (after ${formatDuration(s.completedAt.getTime() - s.createdAt.getTime())})` : "";
  return [
    ["state", s.state],
    ["outcome", s.outcome === "unspecified" ? undefined : s.outcome],
    ["operation", s.operationId || undefined],
    ["target", formatTarget(s.target)],
    ["error", s.error],
    ["created", s.createdAt?.toISOString()],
    ["completed", s.completedAt ? `${s.completedAt.toISOString()}${took}` : undefined],
  ];
}

/** An operation status as JSON-ready data (bigints and Dates are handled by toJsonText). */
export function statusJson(s: OperationStatus): Record<string, unknown> {
  return {
    state: s.state,
    outcome: s.outcome,
    operationId: s.operationId,
    sandboxId: s.sandboxId,
    component: s.component,
    target: s.target,
    error: s.error,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
    completedAt: s.completedAt,
    tracking: s.tracking,
  };
}

/** Stderr lines for an outcome that is not plain success: a warning (degraded) or an error. */
export function reportProblems(out: Output, c: Completion, subject: string): void {
  const id = c.operationId ? ` (operation ${c.operationId})` : "";
  if (c.state === "applied" && c.outcome === "degraded") {
    out.warn(`${subject} runs degraded: ${c.error ?? "no reason given"}${id}`);
    return;
  }
  if (exitCodeOf(c) === EXIT.ok) return;
  const reason = c.error ?? (c.state === "superseded" ? "a newer revision replaced it before it was applied" : c.state === "cancelled" ? "the sandbox is being deleted or is gone" : "no reason given");
  out.error(`${subject} ${c.state}: ${reason}${id}`);
}
