// What a rollout reports: one result per sandbox (the SDK's completion union, or why there is
// none, and its rollback if it had one), one per wave (its gate's verdict), and the totals a
// person reads first: the phase, counts by state and outcome, the slowest sandboxes, whether the
// rollout halted and what its rollback did. Pure functions over plain data.

import type { ApplyOutcome, Completion, OperationState } from "../completion.js";
import type { OperationHandle } from "../handle.js";
import type { CompletionTimeoutReason } from "../errors.js";
import type { RolloutState } from "./state.js";

/** What a sandbox's rollback did. Discriminated on `status`. */
export type SandboxRollback =
  | {
      /** The rollback commit reached a terminal outcome (see `completion.state`: applied means the sandbox is back). */
      readonly status: "completed";
      /** Its terminal outcome. */
      readonly completion: Completion;
      /** The rollback commit's handle. */
      readonly handle: OperationHandle;
    }
  | {
      /** Left alone: its desired state is no longer what this rollout made (someone changed it since). */
      readonly status: "changed-by-others";
      /** What was found instead. */
      readonly detail: string;
    }
  | {
      /** Left alone: it had no earlier policy revision to return to. */
      readonly status: "no-earlier-revision";
    }
  | {
      /** The rollback could not be sent or waited for (e.g. the gateway refused to delete a globally managed setting). */
      readonly status: "error";
      /** The error, an `OpenShellConfigError` subclass. */
      readonly error: Error;
    }
  | {
      /** Sent, but its wait ended here; resuming the rollout (or `undoRollout`) waits again by the same key. */
      readonly status: "pending";
      /** The rollback commit's handle. */
      readonly handle: OperationHandle;
    };

/** Fields every sandbox result has. */
export interface SandboxRolloutCommon {
  /** The index of the sandbox's wave (0: the first). */
  readonly wave: number;
  /** What its rollback did, when the rollout rolled back. */
  readonly rollback?: SandboxRollback;
}

/** One sandbox's part of a rollout. Discriminated on `status`. */
export type SandboxRolloutResult = SandboxRolloutCommon &
  (
  | {
      /** The sandbox reached a terminal outcome: see `completion.state`. */
      readonly status: "completed";
      /** The sandbox name. */
      readonly sandbox: string;
      /** The terminal outcome of exactly this rollout's revision. */
      readonly completion: Completion;
      /** The commit's handle. */
      readonly handle: OperationHandle;
      /** From sending the change (commit and wait in one request) to the outcome. */
      readonly durationMs: number;
    }
  | {
      /** Committed, but the wait ended here (`waitTimeoutMs` or the signal); the operation keeps running. */
      readonly status: "pending";
      /** The sandbox name. */
      readonly sandbox: string;
      /** Resumes the wait (`awaitCompletion`), as does resuming the rollout. */
      readonly handle: OperationHandle;
      /** `deadline` (waitTimeoutMs), `aborted` (the signal), `server-deadline` (the gateway's own wait bound) or `unavailable` (the gateway lost through the retries). */
      readonly reason: CompletionTimeoutReason;
      /** How long this run waited. */
      readonly durationMs: number;
    }
  | {
      /** The commit or the wait failed with an SDK error (e.g. NotFoundError: the sandbox is gone). */
      readonly status: "error";
      /** The sandbox name. */
      readonly sandbox: string;
      /** The error, an `OpenShellConfigError` subclass. */
      readonly error: Error;
      /** Present when an earlier run had sent the change (resuming re-sends it). */
      readonly handle: OperationHandle | undefined;
      /** From the start of this sandbox's turn to the error. */
      readonly durationMs: number;
    }
  | {
      /** Not sent by this run: it halted after `maxFailures`, or was aborted first. */
      readonly status: "skipped";
      /** The sandbox name. */
      readonly sandbox: string;
      /** `halted` (a gate failed, or the rollout paused before its wave) or `aborted`. */
      readonly reason: "halted" | "aborted";
    }
  );

/** One wave's part of a rollout. */
export interface WaveResult {
  /** Its index (0: the first). */
  readonly index: number;
  /** Its sandboxes, in sending order. */
  readonly sandboxes: readonly string[];
  /** Counts over its sandboxes. */
  readonly counts: RolloutCounts;
  /** Its sandboxes that counted against its gate. */
  readonly failures: number;
  /** The gate's verdict: `not-reached` when the rollout stopped before judging it. */
  readonly gate: "passed" | "failed" | "not-reached" | "pending";
  /** The verdict as a sentence, e.g. "wave 1 (canary): 1 of 1 failed, limit 1"; undefined when not reached. */
  readonly reason: string | undefined;
}

/**
 * How a rollout ended: `complete` (every wave's gate passed), `paused` (waiting for approval:
 * resume the state), `halted` (a gate failed, nothing rolled back), `rolled-back` (a gate
 * failed or undo was asked, and the rollback ran; see `rollback`), `incomplete` (a result is
 * still pending: resume to judge the gate) or `aborted` (the signal, or a failing `onState`).
 */
export type RolloutPhase = "complete" | "paused" | "halted" | "rolled-back" | "incomplete" | "aborted";

/** What a rollback did, over all sandboxes it considered. */
export interface RollbackSummary {
  /** Sandboxes returned to what they had before (their rollback applied, or was inactive). */
  readonly rolledBack: number;
  /** Sandboxes not touched, and why (`changed-by-others`, `no-earlier-revision`). */
  readonly leftAlone: readonly {
    /** The sandbox name. */
    readonly sandbox: string;
    /** Someone else changed its desired state since, or it had no earlier revision to return to. */
    readonly reason: "changed-by-others" | "no-earlier-revision";
  }[];
  /** Sandboxes whose rollback errored or did not apply, with a sentence. */
  readonly failed: readonly {
    /** The sandbox name. */
    readonly sandbox: string;
    /** Why its rollback failed, as a sentence. */
    readonly reason: string;
  }[];
  /** Sandboxes whose rollback is still pending. */
  readonly pending: readonly string[];
}

/** Counts over a rollout's sandboxes. */
export interface RolloutCounts {
  /** Every target sandbox. */
  readonly total: number;
  /** By result status: completed, pending, error, skipped. */
  readonly byStatus: Readonly<Record<SandboxRolloutResult["status"], number>>;
  /** Completed sandboxes by completion state (only states that occurred). */
  readonly byState: Readonly<Partial<Record<Exclude<OperationState, "pending">, number>>>;
  /** Completed sandboxes by supervisor outcome (only outcomes that occurred). */
  readonly byOutcome: Readonly<Partial<Record<ApplyOutcome, number>>>;
}

/** One of the slowest sandboxes. */
export interface SlowSandbox {
  /** The sandbox name. */
  readonly sandbox: string;
  /** How long its commit and wait took in this run. */
  readonly durationMs: number;
  /** Its completion state, or `pending` / `error`. */
  readonly state: Exclude<OperationState, "pending"> | "pending" | "error";
}

/** What a rollout returns. Halting and aborting are reported here, never thrown. */
export interface RolloutResult {
  /** The rollout id; resuming with it never creates a second revision for any sandbox. */
  readonly id: string;
  /** One result per target sandbox, in target order. */
  readonly sandboxes: readonly SandboxRolloutResult[];
  /** Counts by status, state and outcome. */
  readonly counts: RolloutCounts;
  /** Sandboxes that counted against `maxFailures`: failed or cancelled completions and errors. */
  readonly failures: number;
  /** True when `failures` reached `maxFailures`, after which no new sandbox was sent. */
  readonly halted: boolean;
  /** True when the signal ended the rollout early. */
  readonly aborted: boolean;
  /** True when every sandbox completed (reached a terminal outcome). */
  readonly complete: boolean;
  /** The slowest sandboxes of this run, slowest first (at most five). */
  readonly slowest: readonly SlowSandbox[];
  /** Wall-clock time of this run. */
  readonly durationMs: number;
  /** The state to resume from (`JSON.stringify` it). */
  readonly state: RolloutState;
  /** How the rollout ended. */
  readonly phase: RolloutPhase;
  /** One entry per wave (one wave when none were given). */
  readonly waves: readonly WaveResult[];
  /** The gate that failed, if one did. */
  readonly gateFailure?: {
    /** The index of the wave whose gate failed (0: the first). */
    readonly wave: number;
    /** The verdict as a sentence, e.g. "wave 1 (canary): 1 of 1 failed, limit 1". */
    readonly reason: string;
  };
  /** What the rollback did, when one ran. */
  readonly rollback?: RollbackSummary;
  /** Why the run ended `aborted` when `onState` threw or rejected (nothing more was committed after it). */
  readonly stateError?: unknown;
}

/** The rollback summary over `results`' rollbacks. */
export function summarizeRollback(results: readonly SandboxRolloutResult[]): RollbackSummary {
  let rolledBack = 0;
  const leftAlone: { sandbox: string; reason: "changed-by-others" | "no-earlier-revision" }[] = [];
  const failed: { sandbox: string; reason: string }[] = [];
  const pending: string[] = [];
  for (const { sandbox, rollback: rb } of results) {
    if (!rb) continue;
    if (rb.status === "changed-by-others" || rb.status === "no-earlier-revision") leftAlone.push({ sandbox, reason: rb.status });
    else if (rb.status === "pending") pending.push(sandbox);
    else if (rb.status === "error") failed.push({ sandbox, reason: rb.error.message });
    else if (rb.completion.state === "applied" || rb.completion.state === "inactive") rolledBack++;
    else failed.push({ sandbox, reason: `rollback ${rb.completion.state}${rb.completion.error ? `: ${rb.completion.error}` : ""}` });
  }
  return { rolledBack, leftAlone, failed, pending };
}

/** True for a result that counts against `maxFailures`. */
export function isFailure(r: SandboxRolloutResult): boolean {
  if (r.status === "error") return true;
  return r.status === "completed" && (r.completion.state === "failed" || r.completion.state === "cancelled");
}

/** Counts by status, state and outcome. */
export function countResults(results: readonly SandboxRolloutResult[], total: number): RolloutCounts {
  const byStatus = { completed: 0, pending: 0, error: 0, skipped: 0 };
  const byState: Partial<Record<Exclude<OperationState, "pending">, number>> = {};
  const byOutcome: Partial<Record<ApplyOutcome, number>> = {};
  for (const r of results) {
    byStatus[r.status]++;
    if (r.status !== "completed") continue;
    const c = r.completion;
    byState[c.state] = (byState[c.state] ?? 0) + 1;
    if (c.outcome !== "unspecified") byOutcome[c.outcome] = (byOutcome[c.outcome] ?? 0) + 1;
  }
  return { total, byStatus, byState, byOutcome };
}

/** The `n` slowest sandboxes that did any work in this run, slowest first. */
export function slowestOf(results: readonly SandboxRolloutResult[], n = 5): SlowSandbox[] {
  const timed: SlowSandbox[] = [];
  for (const r of results) {
    if (r.status === "skipped") continue;
    const state = r.status === "completed" ? r.completion.state : r.status;
    timed.push({ sandbox: r.sandbox, durationMs: r.durationMs, state });
  }
  return timed.sort((a, b) => b.durationMs - a.durationMs || a.sandbox.localeCompare(b.sandbox)).slice(0, n);
}
