// The rollout card's form fields: the label selector (kubectl syntax, read by the SDK's parser as
// the command line reads --selector), the waves, how many at once, the failure limit, pause for
// approval and roll back on failure. Their values as plain data (RolloutForm, kept with each
// rollout), the SDK options they make, and the fields filled from a kept rollout, so that a
// reload shows what that rollout was started with rather than the defaults.

import { formatLabelSelector, parseLabelSelector, type LabelSelector, type RolloutOptions, type RolloutState } from "openshell-config/rollout";
import type { SandboxPolicy } from "openshell-config/raw";
import { h } from "./dom.js";
import type { RolloutForm } from "./rollout-store.js";
import { DEFAULT_WAVES, parseWaves } from "./rollout-waves.js";

export type { RolloutForm } from "./rollout-store.js";

/** The form's values before anything is typed. */
export const DEFAULT_FORM: RolloutForm = { selector: "", waves: DEFAULT_WAVES, concurrency: 4, approval: false, rollback: false };

/**
 * The form a kept state was started with, for a rollout kept without one (kept by an earlier
 * version): its selector, its waves as cumulative counts, its limits, pause and rollback.
 */
export function formFromState(s: RolloutState): RolloutForm {
  const waved = s.waves.length > 1;
  let sum = 0;
  const counts = s.waves.map((w) => (sum += w.sandboxes.length));
  const limit = waved ? s.waves[0]!.gate.maxFailures : s.maxFailures;
  return {
    selector: s.labelSelector ?? "",
    waves: waved ? counts.join(", ") : "",
    concurrency: s.concurrency,
    ...(limit !== null && limit !== undefined && !(waved && limit === 1) ? { maxFailures: limit } : {}),
    approval: s.waves.some((w) => w.gate.pause === "approval"),
    rollback: s.rollback === "on-halt",
  };
}

/** The selector typed, parsed; an error message naming the problem when it cannot be read. */
export function readSelector(text: string): { readonly ok: true; readonly selector: LabelSelector; readonly text: string } | { readonly ok: false; readonly message: string } {
  try {
    const selector = parseLabelSelector(text, "selector");
    return { ok: true, selector, text: formatLabelSelector(selector) };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

/** The SDK options of a new rollout of `policy` with the form's values (the selector already read). */
export function rolloutOptions(form: RolloutForm, selector: string, policy: SandboxPolicy): RolloutOptions {
  const waves = parseWaves(form.waves);
  const limit = form.maxFailures;
  return {
    labelSelector: selector,
    policy,
    concurrency: form.concurrency,
    ...(waves ? { waves, gate: { ...(limit !== undefined ? { maxFailures: limit } : {}), ...(form.approval ? { pause: "approval" as const } : {}) } } : limit !== undefined ? { maxFailures: limit } : {}),
    ...(form.rollback ? { rollback: "on-halt" as const } : {}),
  };
}

export interface RolloutFormFields {
  readonly selector: HTMLInputElement;
  readonly waves: HTMLInputElement;
  readonly concurrency: HTMLInputElement;
  readonly maxFailures: HTMLInputElement;
  readonly approval: HTMLInputElement;
  readonly rollback: HTMLInputElement;
  /** The fields laid out for the form (the buttons come after them). */
  readonly elements: readonly HTMLElement[];
  /** The values typed. */
  values(): RolloutForm;
  /** Shows a kept rollout's values. */
  fill(form: RolloutForm): void;
}

export function createRolloutFormFields(): RolloutFormFields {
  const selector = h("input", { id: "rollout-selector", type: "text", placeholder: "label selector, e.g. app=web or env in (dev,staging)", spellcheck: "false", autocomplete: "off", "aria-label": "Label selector" });
  const waves = h("input", { id: "rollout-waves", type: "text", value: DEFAULT_FORM.waves, placeholder: "one wave", spellcheck: "false", autocomplete: "off", "aria-label": "Waves", title: "Cumulative wave sizes (counts or percentages), or sandbox names; empty: one wave" });
  const concurrency = h("input", { id: "rollout-concurrency", type: "number", min: 1, value: DEFAULT_FORM.concurrency, "aria-label": "Concurrency" });
  const maxFailures = h("input", { id: "rollout-max-failures", type: "number", min: 1, placeholder: "1", "aria-label": "Max failures", title: "With waves: failures in one wave that fail its gate (default 1); without: failures that halt the rollout (default never)" });
  const approval = h("input", { id: "rollout-approval", type: "checkbox" });
  const rollback = h("input", { id: "rollout-rollback", type: "checkbox" });
  // Without waves the failure limit is the rollout's (none: never halt); with waves each gate's (default 1).
  const syncLimitHint = () => (maxFailures.placeholder = parseWaves(waves.value) ? "1" : "never");
  waves.addEventListener("input", syncLimitHint);
  syncLimitHint();
  return {
    selector,
    waves,
    concurrency,
    maxFailures,
    approval,
    rollback,
    elements: [
      selector,
      h("label", { class: "small waves-label" }, "waves ", waves),
      h("label", { class: "small" }, "at once ", concurrency),
      h("label", { class: "small" }, "stop after failures ", maxFailures),
      h("div", { class: "rollout-checks" }, h("label", { class: "small check" }, approval, "pause for approval between waves"), h("label", { class: "small check" }, rollback, "roll back on failure")),
    ],
    values: () => ({
      selector: selector.value.trim(),
      waves: waves.value,
      concurrency: Number(concurrency.value) || DEFAULT_FORM.concurrency,
      ...(maxFailures.value ? { maxFailures: Number(maxFailures.value) } : {}),
      approval: approval.checked,
      rollback: rollback.checked,
    }),
    fill(form) {
      selector.value = form.selector;
      waves.value = form.waves;
      concurrency.value = String(form.concurrency);
      maxFailures.value = form.maxFailures === undefined ? "" : String(form.maxFailures);
      approval.checked = form.approval;
      rollback.checked = form.rollback;
      syncLimitHint();
    },
  };
}
