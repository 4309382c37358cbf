// The operation state machine: which initial state a sandbox phase implies, how a supervisor
// outcome maps to a state, and the size bound on sanitized errors.

import { ConfigApplyOutcome, ConfigUpdateOperationState as State, SandboxPhase } from "openshell-config/raw";

export const PENDING = State.PENDING;

export function isTerminalState(state: number): boolean {
  return state >= State.APPLIED && state <= State.CANCELLED;
}

/** The state an operation starts in, from the sandbox's phase at commit. */
export function initialState(phase: number): { state: State; error: string } {
  switch (phase) {
    case SandboxPhase.STOPPED:
    case SandboxPhase.COMPLETED:
      return { state: State.INACTIVE, error: "the sandbox is stopped; the change applies when it starts" };
    case SandboxPhase.DELETING:
      return { state: State.CANCELLED, error: "sandbox is deleting" };
    default:
      return { state: State.PENDING, error: "" };
  }
}

/** The state a supervisor's reported outcome leads to. */
export function stateForOutcome(outcome: ConfigApplyOutcome): State {
  switch (outcome) {
    case ConfigApplyOutcome.APPLIED:
    case ConfigApplyOutcome.IGNORED_DUPLICATE:
    case ConfigApplyOutcome.DEGRADED:
      return State.APPLIED;
    case ConfigApplyOutcome.IGNORED_STALE:
      return State.SUPERSEDED;
    default:
      return State.FAILED;
  }
}

export const SUPERSEDED_ERROR = "a newer desired revision replaced this update before application";
const MAX_ERROR_BYTES = 1024;

/** Cuts an error to at most 1024 UTF-8 bytes without splitting a character. */
export function sanitizeError(message: string): string {
  const bytes = Buffer.from(message, "utf8");
  if (bytes.length <= MAX_ERROR_BYTES) return message;
  let end = MAX_ERROR_BYTES;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.subarray(0, end).toString("utf8");
}
