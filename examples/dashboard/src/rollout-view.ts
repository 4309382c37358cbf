// The rollout card: send the policy in the editor to every sandbox a label selector matches (the
// SDK's rollout(); kubectl selectors such as `env in (dev,staging)`, read by the SDK's parser as
// the command line reads them), in waves (a canary, then 50%, then everyone by default), each
// judged by its gate, optionally pausing for approval between waves and rolling back on a failed
// gate. The card shows one rollout at a time (rollout-detail.ts) and lists every rollout kept in
// this browser (rollout-list.ts, rollout-store.ts), so that starting a new one never hides a
// paused one: each stays listed with Continue (resuming its state is the approval) and Undo
// (undoRollout) until it is done or undone, across reloads. Starting a rollout over sandboxes a
// paused one also targets asks first (rollout-conflict.ts). One run at a time from this page.

import { rollout, undoRollout, type RolloutEvent, type RolloutPhase, type RolloutRun, type RolloutState } from "openshell-config/rollout";
import type { ConfigClient } from "openshell-config";
import type { SandboxPolicy } from "openshell-config/raw";
import { h } from "./dom.js";
import { conflictMessage, conflictsWith, targetsOf, type LabelledSandbox } from "./rollout-conflict.js";
import { createRolloutDetail } from "./rollout-detail.js";
import { createRolloutFormFields, formFromState, readSelector, rolloutOptions, type RolloutForm } from "./rollout-form.js";
import { createRolloutList, resumable } from "./rollout-list.js";
import { canUndo, createRolloutStore, phaseOfState } from "./rollout-store.js";

export interface RolloutViewOptions {
  readonly client: ConfigClient;
  /** The editor's policy, or the reason it cannot be sent. */
  readonly policy: () => { readonly ok: true; readonly policy: SandboxPolicy } | { readonly ok: false; readonly message: string };
  /** A message for an error (never the token). */
  readonly explain: (err: unknown) => string;
  /** Every sandbox with its labels, read when a new rollout may overlap a paused one. */
  readonly listSandboxes: () => Promise<readonly LabelledSandbox[]>;
  /** Called when a sandbox's change is known to be committed. */
  readonly onCommitted?: (sandbox: string, operationId: string, policyVersion: number) => void;
  /** Called when a rollout ends, e.g. to refresh the sandbox list. */
  readonly onFinished: () => void;
}

type Mode = "new" | "resume" | "undo";

/** The rollout card; call `stop()` on sign-out to end a running rollout's waits. */
export function createRolloutView(options: RolloutViewOptions): { readonly element: HTMLElement; stop(): void; setPolicyValid(ok: boolean): void } {
  const store = createRolloutStore();
  const fields = createRolloutFormFields();
  const detail = createRolloutDetail(options);
  const list = createRolloutList({
    show: (id) => !running && showKept(id),
    resume: (id) => void run("resume", id),
    undo: (id) => void run("undo", id),
    forget: (id) => {
      store.forget(id);
      if (shown?.id === id) shown = undefined;
      sync();
    },
  });
  const start = h("button", { type: "submit", class: "primary", id: "rollout-start", disabled: true, title: "Load a valid policy in the editor first" }, "Roll out");
  const resumeBtn = h("button", { type: "button", id: "rollout-resume", hidden: true, onclick: () => void run("resume") }, "Resume");
  const undoBtn = h("button", { type: "button", id: "rollout-undo", hidden: true, onclick: () => void run("undo"), title: "Return every sandbox this rollout changed to what it had before" }, "Undo");
  const cancel = h("button", { type: "button", id: "rollout-stop", hidden: true, onclick: () => controller?.abort() }, "Stop");
  const conflictText = h("p", { class: "conflict-text" });
  const anyway = h("button", { type: "button", class: "danger", id: "rollout-anyway", onclick: () => void run("new", undefined, true) }, "Roll out anyway");
  const conflict = h(
    "div",
    { class: "conflict", "data-testid": "rollout-conflict", role: "alert", hidden: true },
    conflictText,
    h("div", { class: "conflict-buttons" }, anyway, h("button", { type: "button", id: "rollout-conflict-cancel", onclick: () => hideConflict() }, "Cancel")),
  );
  let controller: AbortController | undefined;
  let current: RolloutRun | undefined;
  /** The id of the rollout a run drives now ("" until its first state is known). */
  let running: string | undefined;
  let policyValid = false;
  /** The rollout the card shows and its buttons act on: its state (kept current by onState) and how it stands. */
  let shown: { id: string; state: RolloutState; phase: RolloutPhase } | undefined;

  const hideConflict = () => {
    conflict.hidden = true;
    conflictText.textContent = "";
  };
  fields.selector.addEventListener("input", hideConflict);

  /** The list, and the buttons for the rollout shown: Continue (paused) or Resume (halted, cut short), Undo. */
  function sync(): void {
    list.render({ rollouts: store.list(), shownId: shown?.id, running });
    const busy = running !== undefined;
    start.disabled = busy || !policyValid;
    anyway.disabled = busy || !policyValid;
    start.title = busy ? "A rollout is running" : policyValid ? "" : "Load a valid policy in the editor first";
    const phase = shown?.phase;
    resumeBtn.hidden = phase === undefined || !resumable(phase);
    resumeBtn.textContent = phase === "paused" ? "Continue" : "Resume";
    resumeBtn.title = phase === "paused" ? "Approve: send the next wave" : "Resume this rollout from its saved state";
    undoBtn.hidden = !(shown && canUndo(shown.state) && phase !== "rolled-back");
    resumeBtn.disabled = busy;
    undoBtn.disabled = busy;
  }

  /** Shows a kept rollout (its waves, gates and summary) in the card. */
  function showKept(id: string): boolean {
    const state = store.state(id);
    if (!state) {
      sync();
      return false;
    }
    const view = store.view(id);
    shown = { id, state, phase: view?.phase ?? phaseOfState(state) };
    detail.showKept(state, view, shown.phase);
    sync();
    return true;
  }

  /** The paused rollouts over any sandbox `selector` matches now. */
  async function pausedConflicts(selector: Parameters<typeof targetsOf>[0]) {
    const paused = store
      .list()
      .filter((r) => r.phase === "paused")
      .flatMap((r) => {
        const s = store.state(r.id);
        return s ? [{ id: r.id, ...(r.selector !== undefined ? { selector: r.selector } : {}), sandboxes: s.sandboxes }] : [];
      });
    if (paused.length === 0) return [];
    return conflictsWith(targetsOf(selector, await options.listSandboxes()), paused);
  }

  async function run(mode: Mode, id?: string, confirmed = false): Promise<void> {
    if (running !== undefined) return;
    hideConflict();
    let form: RolloutForm | undefined;
    let selectorText = "";
    let launch: () => RolloutRun;
    const onProgress = (e: RolloutEvent) => detail.onEvent(e, current, selectorText);
    const onState = (s: RolloutState) => {
      if (s.sandboxes.length === 0) return; // matched nothing: nothing to keep
      store.saveState(s, mode === "new" ? form : undefined); // throws when full: the SDK stops, saying why
      running = s.id;
      shown = { id: s.id, state: s, phase: phaseOfState(s) };
      sync();
    };
    if (mode !== "new") {
      if (id !== undefined && id !== shown?.id && !showKept(id)) return;
      const kept = shown;
      if (!kept) return;
      selectorText = kept.state.labelSelector ?? "";
      launch = () =>
        mode === "undo"
          ? undoRollout(options.client, kept.state, { signal: controller!.signal, onProgress, onState })
          : rollout(options.client, { resume: kept.state, signal: controller!.signal, onProgress, onState });
    } else {
      form = fields.values();
      if (form.selector === "") {
        detail.clear();
        detail.setSummary("Enter a label selector (e.g. app=web): nothing was sent.", "error", "error");
        fields.selector.focus();
        return;
      }
      const sel = readSelector(form.selector);
      if (!sel.ok) {
        detail.clear();
        detail.setSummary(`Not sent: ${sel.message}`, "error", "error");
        fields.selector.focus();
        return;
      }
      const p = options.policy();
      if (!p.ok) {
        detail.clear();
        detail.setSummary(`Not sent: ${p.message}`, "error", "error");
        return;
      }
      selectorText = sel.text;
      if (!confirmed) {
        let conflicts;
        try {
          conflicts = await pausedConflicts(sel.selector);
        } catch (err) {
          detail.setSummary(`Could not check the paused rollouts' sandboxes: ${options.explain(err)}`, "error", "error");
          return;
        }
        if (conflicts.length > 0) {
          conflictText.textContent = conflictMessage(conflicts);
          conflict.dataset["rollouts"] = conflicts.map((c) => c.id).join(" ");
          conflict.hidden = false;
          anyway.focus();
          return;
        }
      }
      const opts = rolloutOptions(form, selectorText, p.policy);
      launch = () => rollout(options.client, { ...opts, signal: controller!.signal, onProgress, onState });
    }
    controller = new AbortController();
    detail.setSignal(controller.signal);
    running = mode === "new" ? "" : shown!.id;
    sync();
    detail.setSummary(mode === "undo" ? "Undoing the rollout…" : `Selecting the sandboxes with ${selectorText}…`, "running");
    cancel.hidden = false;
    try {
      current = launch();
      const result = await current;
      const view = detail.finished(result, mode);
      if (view) {
        store.saveState(result.state);
        store.saveView(view);
        shown = { id: result.id, state: result.state, phase: result.phase };
      }
    } catch (err) {
      detail.clear();
      detail.setSummary(`Could not ${mode === "undo" ? "undo" : "roll out"}: ${options.explain(err)}`, "error", "error");
    } finally {
      running = undefined;
      current = undefined;
      sync();
      cancel.hidden = true;
      options.onFinished();
    }
  }

  // After a reload: the rollout last worked on, with the form it was started with.
  const latest = [...store.list()].sort((a, b) => b.touchedAt - a.touchedAt)[0];
  if (latest && showKept(latest.id)) fields.fill(latest.form ?? formFromState(shown!.state));
  else detail.setSummary("Sends the policy in the editor to every sandbox with these labels, wave by wave.", "info");
  sync();

  const element = h(
    "section",
    { class: "card", "data-testid": "rollout" },
    h("div", { class: "card-head" }, h("h2", {}, "Roll out to a fleet")),
    h("form", { class: "inline-form rollout-form", onsubmit: (ev: Event) => (ev.preventDefault(), void run("new")) }, ...fields.elements, h("div", { class: "rollout-buttons" }, start, resumeBtn, undoBtn, cancel)),
    conflict,
    list.element,
    ...detail.elements,
  );
  return {
    element,
    stop: () => controller?.abort(),
    setPolicyValid(ok: boolean) {
      policyValid = ok;
      sync();
    },
  };
}
