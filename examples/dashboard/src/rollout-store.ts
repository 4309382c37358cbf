// The last rollout, kept in localStorage so that a reload can continue or undo it: its state
// (openshell-config/rollout@2, written by the SDK's onState at every durable step; sandbox names,
// the change, operation handles, no token) and a small view of what the card last showed (each
// wave's counts and gate, the rollback lines, the summary), which the state alone does not hold.

import { restoreRolloutState, type RolloutPhase, type RolloutState } from "openshell-config/rollout";
import type { RollbackLine, WaveView } from "./rollout-waves.js";

const STATE_KEY = "openshell-dashboard.rollout";
const VIEW_KEY = "openshell-dashboard.rollout-view";

/** What the card showed when the rollout's last run ended (or at its last step). */
export interface SavedView {
  /** The rollout id it belongs to. */
  readonly id: string;
  readonly phase: RolloutPhase;
  readonly waves: readonly WaveView[];
  readonly rollback?: { readonly reason: string; readonly total: number; readonly lines: readonly RollbackLine[] };
  readonly summary: { readonly text: string; readonly tone: string; readonly verdict?: string };
}

export function saveState(state: RolloutState): void {
  localStorage.setItem(STATE_KEY, JSON.stringify(state));
}

/** The saved state, or undefined (none, or unreadable: then it is dropped). */
export function loadState(): RolloutState | undefined {
  const text = localStorage.getItem(STATE_KEY);
  if (text === null) return undefined;
  try {
    return restoreRolloutState(text);
  } catch {
    localStorage.removeItem(STATE_KEY);
    return undefined;
  }
}

export function saveView(view: SavedView): void {
  try {
    localStorage.setItem(VIEW_KEY, JSON.stringify(view));
  } catch {
    // Only a convenience for the next reload: the state is what matters.
  }
}

/** The saved view of rollout `id`, if it is the one saved. */
export function loadView(id: string): SavedView | undefined {
  try {
    const v = JSON.parse(localStorage.getItem(VIEW_KEY) ?? "null") as SavedView | null;
    return v && v.id === id && Array.isArray(v.waves) ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * How a saved state's rollout stands, without its run's result: paused, halted (a gate failed,
 * nothing rolled back), rolled back, incomplete (a run was cut short) or complete.
 */
export function phaseOfState(s: RolloutState): RolloutPhase {
  if (s.phase === "paused") return "paused";
  if (s.phase === "running" || s.phase === "rolling-back") return "incomplete";
  if (Object.keys(s.undoRefs).length > 0) return "rolled-back";
  return s.gateFailure ? "halted" : "complete";
}

/** True when the state records what its sandboxes had before, so `undoRollout` can return them. */
export const canUndo = (s: RolloutState): boolean => Object.keys(s.before).length > 0 && Object.keys(s.refs).length > 0;
