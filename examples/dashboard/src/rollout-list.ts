// The list of kept rollouts (rollout-store.ts), newest first: each one's id and selector, how it
// stands (paused, halted, done, …), its waves and when it started, and what can be done with it:
// Continue (paused) or Resume (halted, cut short, stopped), Undo, Show (its waves and rows in the
// card above), Forget. Forgetting a rollout that is not finished asks once more, since this page
// can then no longer continue or undo it. Text only, never HTML.

import type { RolloutPhase } from "openshell-config/rollout";
import { h } from "./dom.js";
import { isFinished, type KeptRollout } from "./rollout-store.js";
import { plural, timeEl } from "./status.js";

export interface RolloutListActions {
  readonly show: (id: string) => void;
  readonly resume: (id: string) => void;
  readonly undo: (id: string) => void;
  readonly forget: (id: string) => void;
}

export interface RolloutListView {
  /** Every kept rollout; `running`: the one a run is driving now (others' buttons wait). */
  readonly rollouts: readonly KeptRollout[];
  readonly shownId: string | undefined;
  readonly running: string | undefined;
}

/** Can be resumed: Continue (paused) or Resume. */
export const resumable = (phase: RolloutPhase): boolean => ["paused", "halted", "incomplete", "aborted"].includes(phase);

const PHASES: Record<RolloutPhase | "running", readonly [string, string]> = {
  running: ["blue", "running"],
  paused: ["amber", "paused for approval"],
  halted: ["red", "halted"],
  incomplete: ["amber", "cut short"],
  aborted: ["amber", "stopped"],
  complete: ["green", "done"],
  "rolled-back": ["grey", "rolled back"],
};

function phaseChip(phase: RolloutPhase | "running"): HTMLElement {
  const [tone, text] = PHASES[phase];
  return h("span", { class: `badge chip chip-${tone}`, "data-testid": "kept-phase" }, text);
}

function progress(r: KeptRollout): string {
  const sandboxes = plural(r.total, "sandbox", "sandboxes");
  if (r.waves < 2) return sandboxes;
  return `${sandboxes} · ${Math.min(r.wave, r.waves)} of ${r.waves} waves passed`;
}

/** The list; `render` fills it. */
export function createRolloutList(actions: RolloutListActions): { readonly element: HTMLElement; render(view: RolloutListView): void } {
  const list = h("ul", { class: "kept-list", "data-testid": "kept-rollouts" });
  const count = h("span", { class: "muted small", "data-testid": "kept-count" });
  const empty = h("p", { class: "muted small" }, "Rollouts started here are listed until they are done or undone, also after a reload.");
  /** Unfinished rollouts whose Forget was clicked once. */
  const confirming = new Set<string>();
  let last: RolloutListView = { rollouts: [], shownId: undefined, running: undefined };

  function row(r: KeptRollout, view: RolloutListView): HTMLElement {
    const busy = view.running !== undefined;
    const phase = view.running === r.id ? "running" : r.phase;
    const buttons: HTMLElement[] = [];
    if (phase !== "running" && resumable(r.phase)) {
      buttons.push(h("button", { type: "button", "data-action": "resume", disabled: busy, onclick: () => actions.resume(r.id), title: r.phase === "paused" ? "Approve: send the next wave" : "Send what this rollout has not sent yet" }, r.phase === "paused" ? "Continue" : "Resume"));
    }
    if (phase !== "running" && r.undoable && r.phase !== "rolled-back") {
      buttons.push(h("button", { type: "button", "data-action": "undo", disabled: busy, onclick: () => actions.undo(r.id), title: "Return every sandbox this rollout changed to what it had before" }, "Undo"));
    }
    if (view.shownId !== r.id) buttons.push(h("button", { type: "button", class: "ghost", "data-action": "show", disabled: busy, onclick: () => actions.show(r.id) }, "Show"));
    if (phase !== "running") {
      const asking = confirming.has(r.id);
      buttons.push(
        h(
          "button",
          {
            type: "button",
            class: asking ? "danger" : "ghost",
            "data-action": "forget",
            title: isFinished(r.phase) ? "Remove it from this list" : "Remove it from this list: this page can then no longer continue or undo it",
            onclick: () => {
              if (isFinished(r.phase) || confirming.has(r.id)) {
                confirming.delete(r.id);
                actions.forget(r.id);
              } else {
                confirming.add(r.id);
                render(last);
              }
            },
          },
          asking ? "Forget it? It stays as it is" : "Forget",
        ),
      );
    }
    return h(
      "li",
      { class: `kept${view.shownId === r.id ? " shown" : ""}`, "data-rollout-id": r.id, "data-phase": phase, "aria-current": view.shownId === r.id ? "true" : undefined },
      h(
        "div",
        { class: "kept-head" },
        h("code", { class: "kept-id", title: r.id }, r.id.slice(0, 8)),
        r.selector ? h("code", { class: "kept-selector" }, r.selector) : null,
        phaseChip(phase),
      ),
      h("div", { class: "kept-foot" }, h("span", { class: "kept-meta small muted" }, progress(r), " · started ", timeEl(new Date(r.startedAt))), h("span", { class: "kept-buttons" }, ...buttons)),
    );
  }

  function render(view: RolloutListView): void {
    last = view;
    for (const id of confirming) if (!view.rollouts.some((r) => r.id === id)) confirming.delete(id);
    const open = view.rollouts.filter((r) => !isFinished(r.phase)).length;
    count.textContent = view.rollouts.length === 0 ? "" : `${view.rollouts.length} kept${open ? `, ${open} not finished` : ""}`;
    empty.hidden = view.rollouts.length > 0;
    list.replaceChildren(...view.rollouts.map((r) => row(r, view)));
  }

  const element = h("div", { class: "kept-panel", "data-testid": "rollouts" }, h("div", { class: "kept-title" }, h("h3", {}, "Rollouts"), count), empty, list);
  return { element, render };
}
