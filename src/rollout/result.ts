// What a rollout reports: one result per sandbox (the SDK's completion union, or why there is
// none), and the totals a person reads first: counts by state and outcome, the slowest sandboxes,
// whether the rollout halted. Pure functions over plain data.

import type { ApplyOutcome, Completion, OperationState } from "../completion.js";
import type { OperationHandle } from "../handle.js";
import type { RolloutState } from "./state.js";

/** One sandbox's part of a rollout. Discriminated on `status`. */
export type SandboxRolloutResult =
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
      /** `deadline` (waitTimeoutMs), `aborted` (the signal) or `server-deadline` (the gateway's own wait bound). */
      readonly reason: "deadline" | "aborted" | "server-deadline";
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
      /** `halted` or `aborted`. */
      readonly reason: "halted" | "aborted";
    };

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
