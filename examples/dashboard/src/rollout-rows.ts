// The rollout card's rows: what a sandbox's result (and its rollback) looks like in its row and in
// the rollback panel, the segments of the card's bar, and the summary line of a finished run.

import type { RolloutResult, SandboxRollback, SandboxRolloutResult } from "openshell-config/rollout";
import { formatDuration } from "../../../shared/duration.js";
import { badgeStateOf, fromStatus, plural, type BadgeState } from "./status.js";
import { leftAloneReason, type RollbackLine } from "./rollout-waves.js";

export type RowState = BadgeState | "queued" | "skipped" | "waiting";

export interface RowView {
  state: RowState;
  label: string;
  detail: string;
  /** The detail is an error (red), a warning (amber), or a plain note. */
  tone?: "error" | "warn";
}

/** `paused`: the sandbox is in the wave a paused rollout sends when approved (`next`), or in a later one. */
export function viewOf(r: SandboxRolloutResult, paused?: "next" | "later"): RowView {
  switch (r.status) {
    case "completed": {
      const state = badgeStateOf(r.completion);
      const v = fromStatus(r.completion).policyVersion;
      // A result replayed by a resumed run comes back at once: its time says nothing.
      const what = [v === undefined ? undefined : `policy v${v}`, r.durationMs >= 50 ? formatDuration(r.durationMs) : undefined].filter(Boolean).join(" · ");
      const error = r.completion.error;
      return { state, label: state, detail: error ? `${what}: ${error}` : what, tone: state === "failed" ? "error" : state === "degraded" ? "warn" : undefined };
    }
    case "pending":
      return { state: "timeout", label: "still pending", detail: r.handle.operationId ? `operation ${r.handle.operationId}` : "" };
    case "error":
      return { state: "error", label: "error", detail: r.error.message, tone: "error" };
    case "skipped":
      if (paused === "next") return { state: "waiting", label: "awaiting approval", detail: "" };
      if (paused === "later") return { state: "queued", label: "not sent yet", detail: "" };
      return { state: "skipped", label: r.reason === "aborted" ? "not sent (stopped)" : "not sent", detail: "" };
  }
}

/** One sandbox's rollback as a line of the rollback panel. */
export function rollbackLineOf(sandbox: string, rb: SandboxRollback): RollbackLine {
  switch (rb.status) {
    case "completed": {
      const v = fromStatus(rb.completion).policyVersion;
      const ok = rb.completion.state === "applied" || rb.completion.state === "inactive";
      if (ok) return { sandbox, kind: "rolled-back", reason: v === undefined ? "rolled back" : `rolled back (policy v${v})` };
      return { sandbox, kind: "failed", reason: `rollback ${rb.completion.state}${rb.completion.error ? `: ${rb.completion.error}` : ""}` };
    }
    case "changed-by-others":
      return { sandbox, kind: "left-alone", reason: `${leftAloneReason(rb.status)} (${rb.detail})` };
    case "no-earlier-revision":
      return { sandbox, kind: "left-alone", reason: leftAloneReason(rb.status) };
    case "error":
      return { sandbox, kind: "failed", reason: rb.error.message };
    case "pending":
      return { sandbox, kind: "pending", reason: "the rollback's wait ended; Resume waits again" };
  }
}

/** Segments of the bar, in this order; their widths are the share of sandboxes in each. */
export const SEGMENTS: readonly { readonly cls: string; readonly states: readonly RowState[] }[] = [
  { cls: "seg-applied", states: ["applied"] },
  { cls: "seg-degraded", states: ["degraded", "timeout"] },
  { cls: "seg-failed", states: ["failed", "error", "rejected"] },
  { cls: "seg-other", states: ["superseded", "inactive", "cancelled", "skipped", "waiting"] },
];

/** How the summary line reads: a plain note, a running rollout, success, a warning, an error. */
export type Tone = "info" | "running" | "ok" | "warn" | "error";

/** The summary line of a rollout's run that ended with `r` (`mode`: what the card asked for). */
export function summaryOf(r: RolloutResult, mode: "new" | "resume" | "undo", explain: (err: unknown) => string): { text: string; tone: Tone; verdict: string } {
  const counts = Object.entries(r.counts.byState).map(([state, n]) => `${n} ${state}`);
  const { error = 0, pending = 0, skipped = 0 } = r.counts.byStatus;
  if (error) counts.push(plural(error, "error"));
  if (pending) counts.push(`${pending} still pending`);
  if (skipped) counts.push(`${skipped} ${r.phase === "paused" ? "not sent yet" : "not sent"}`);
  // The time is this run's (a Continue or an Undo is a run of its own, and replaces the text), and
  // says so; written as the command line writes durations (850ms, 1.4s, 2m05s; never "0.0s").
  const tail = `${counts.join(", ")} (rollout ${r.id}; this run ${formatDuration(r.durationMs)}).`;
  const failed = r.failures > 0 || error > 0;
  switch (r.phase) {
    case "complete":
      return { text: `Done: ${tail}`, tone: failed ? "error" : pending || skipped ? "warn" : "ok", verdict: "done" };
    case "paused":
      return { text: `Paused after wave ${r.state.wave} of ${r.waves.length}, waiting for approval: ${tail} Continue sends the next wave.`, tone: "warn", verdict: "paused" };
    case "halted":
      return { text: `Halted${r.gateFailure ? ` (${r.gateFailure.reason})` : ""}: ${tail}`, tone: "error", verdict: "halted" };
    case "rolled-back": {
      const rb = r.rollback;
      const undone = [`${rb?.rolledBack ?? 0} rolled back`, ...(rb?.leftAlone.length ? [`${rb.leftAlone.length} left alone`] : []), ...(rb?.failed.length ? [`${rb.failed.length} not rolled back`] : [])].join(", ");
      if (mode === "undo" || !r.gateFailure) return { text: `Undone: ${undone} (rollout ${r.id}; this run ${formatDuration(r.durationMs)}).`, tone: rb?.failed.length ? "error" : "warn", verdict: "rolled-back" };
      return { text: `Rolled back after a failed gate: ${counts.join(", ")}; ${undone} (rollout ${r.id}; this run ${formatDuration(r.durationMs)}).`, tone: "error", verdict: "rolled-back" };
    }
    case "incomplete":
      return { text: `Incomplete: ${tail}`, tone: failed ? "error" : "warn", verdict: "incomplete" };
    case "aborted":
      // onState failed (e.g. localStorage is full): nothing more was sent, and the card says why.
      if (r.stateError !== undefined) return { text: `Stopped: the rollout's state could not be saved (${explain(r.stateError)}): ${tail}`, tone: "error", verdict: "stopped" };
      return { text: `Stopped: ${tail}`, tone: failed ? "error" : "warn", verdict: "stopped" };
  }
}
