// Before a new rollout starts: which kept rollouts are paused over some of the same sandboxes. A
// paused rollout waits to send its next waves; a new rollout over its sandboxes leaves the fleet
// with two changes in flight, and Continue on the paused one would later overwrite the new one.
// The card warns, naming the rollout and the sandboxes, and starts only when asked again. Pure.

import { matchesLabelSelector, type LabelSelector } from "openshell-config/rollout";

/** A sandbox as the conflict check needs it. */
export interface LabelledSandbox {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** A kept rollout as the conflict check needs it. */
export interface PausedRollout {
  readonly id: string;
  readonly selector?: string;
  /** Its targets. */
  readonly sandboxes: readonly string[];
}

export interface Conflict {
  readonly id: string;
  readonly selector?: string;
  /** The sandboxes both would change, sorted. */
  readonly sandboxes: readonly string[];
}

/** The names `selector` matches among `sandboxes`. */
export const targetsOf = (selector: LabelSelector, sandboxes: readonly LabelledSandbox[]): string[] =>
  sandboxes.filter((s) => matchesLabelSelector(selector, s.labels)).map((s) => s.name);

/** The paused rollouts that target any of `targets`, each with the sandboxes in common. */
export function conflictsWith(targets: readonly string[], paused: readonly PausedRollout[]): Conflict[] {
  const wanted = new Set(targets);
  return paused
    .map((p) => ({ id: p.id, ...(p.selector !== undefined ? { selector: p.selector } : {}), sandboxes: p.sandboxes.filter((s) => wanted.has(s)).sort() }))
    .filter((c) => c.sandboxes.length > 0);
}

const SHOWN = 3;

/** The warning, e.g. `Rollout 3f2a9c1e (app=web) is paused over 2 of these sandboxes: web-1, web-2. …` */
export function conflictMessage(conflicts: readonly Conflict[]): string {
  const one = (c: Conflict) => {
    const names = c.sandboxes.slice(0, SHOWN).join(", ") + (c.sandboxes.length > SHOWN ? `, … (${c.sandboxes.length - SHOWN} more)` : "");
    return `Rollout ${c.id.slice(0, 8)}${c.selector ? ` (${c.selector})` : ""} is paused over ${c.sandboxes.length} of these sandboxes: ${names}.`;
  };
  return `${conflicts.map(one).join(" ")} A new rollout would leave ${conflicts.length === 1 ? "it" : "them"} waiting over sandboxes it changes, and Continue would later send the older change over the new one. Continue or Undo ${conflicts.length === 1 ? "it" : "them"} first, or roll out anyway.`;
}
