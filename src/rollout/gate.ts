// Health gates: which results count against a wave's gate, when a limit is reached (after which
// nothing more is sent), and the verdict on a complete wave with the sentence a person reads.
// Pure functions over results.

import type { SandboxRolloutResult } from "./result.js";
import type { Gate } from "./waves.js";

/** A wave's verdict: passed, failed (with why), pending (a result is still open) or never judged. */
export type GateVerdict = "passed" | "failed" | "pending" | "not-reached";

/** True when `r` counts against a gate: a failed or cancelled completion, an error, or (with `failOnDegraded`) a degraded one. */
export function failsGate(r: SandboxRolloutResult, gate: Pick<Gate, "failOnDegraded">): boolean {
  if (r.status === "error") return true;
  if (r.status !== "completed") return false;
  const c = r.completion;
  return c.state === "failed" || c.state === "cancelled" || (gate.failOnDegraded && c.state === "applied" && c.outcome === "degraded");
}

/** The limit `waveFailures` / `totalFailures` reached, if any, as a sentence; undefined: within the gate. */
export function limitReached(gate: Gate, waveFailures: number, totalFailures: number, waveSize: number, label: string): string | undefined {
  if (gate.maxFailures !== null && waveFailures >= gate.maxFailures) {
    return `${label}: ${waveFailures} of ${waveSize} failed, limit ${gate.maxFailures}`;
  }
  if (gate.maxTotalFailures !== null && totalFailures >= gate.maxTotalFailures) {
    return `${label}: ${totalFailures} failed in the rollout so far, limit ${gate.maxTotalFailures}`;
  }
  return undefined;
}

/** How a wave is named in sentences: `wave 1 (canary)` for a first wave of several, else `wave N`. */
export function waveLabel(index: number, waves: number): string {
  return index === 0 && waves > 1 ? "wave 1 (canary)" : `wave ${index + 1}`;
}

/**
 * The verdict on a wave whose sandboxes all have a result (or were skipped). A pending result
 * means the gate cannot be judged yet; skipped ones (halted, aborted) are not judged here.
 */
export function judgeWave(
  gate: Gate,
  results: readonly SandboxRolloutResult[],
  totalFailures: number,
  label: string,
): { verdict: GateVerdict; reason: string } {
  const failures = results.filter((r) => failsGate(r, gate)).length;
  const reached = limitReached(gate, failures, totalFailures, results.length, label);
  if (reached) return { verdict: "failed", reason: reached };
  const pending = results.filter((r) => r.status === "pending").length;
  if (pending > 0) return { verdict: "pending", reason: `${label}: ${pending} of ${results.length} still pending` };
  return { verdict: "passed", reason: `${label}: ${results.length - failures} of ${results.length} succeeded` };
}
