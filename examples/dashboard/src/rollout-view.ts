// The rollout card: send the policy in the editor to every sandbox a label selector matches (the
// SDK's rollout(); kubectl selectors such as `env in (dev,staging)`, read by the SDK's parser as
// the command line reads them), in waves (a canary, then 50%, then everyone by default), each
// judged by its gate, optionally pausing for approval between waves and rolling back on a failed
// gate. The card shows one rollout at a time (rollout-detail.ts) and lists every rollout kept in
// this browser (rollout-list.ts, rollout-store.ts), so that starting a new one never hides a
// paused one: each stays listed with Continue (resuming its state is the approval) and Undo
// (undoRollout) until it is done or undone, across reloads. Starting a rollout over sandboxes a
// paused one also targets asks first (rollout-conflict.ts). One run at a time from this page.
//
// When the gateway keeps shared rollout records (issue 31), a rollout started here is written
// there too, driven under this page's driver id ("dashboard <random>"), and the workspace's
// rollouts panel (rollouts-panel.ts) acts on any rollout through `act`: Continue, Resume and Undo
// then go by id from the record (resumeRollout, approveRollout, undoSharedRollout), never from a
// copy in this browser that another operator may have overtaken.

import {
  approveRollout,
  getRollout,
  resumeRollout,
  rollout,
  undoRollout,
  undoSharedRollout,
  type RolloutEvent,
  type RolloutPhase,
  type RolloutResult,
  type RolloutRun,
  type RolloutState,
  type SharedRollout,
} from "openshell-config/rollout";
import type { ConfigClient } from "openshell-config";
import type { SandboxPolicy } from "openshell-config/raw";
import { h } from "./dom.js";
import { conflictMessage, conflictsWith, targetsOf, type LabelledSandbox } from "./rollout-conflict.js";
import { createRolloutDetail } from "./rollout-detail.js";
import { createRolloutFormFields, formFromState, readSelector, rolloutOptions, type RolloutForm } from "./rollout-form.js";
import { createRolloutList, resumable } from "./rollout-list.js";
import { canUndo, createRolloutStore, phaseOfState, type KeptRollout } from "./rollout-store.js";
import { phaseOfRecord } from "./shared-rollouts.js";

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
  /** This page's driver id in a shared rollout's lease. */
  readonly driver: string;
  /** The shared record of rollout `id` when the gateway keeps records (then the card acts from it). */
  readonly sharedRecord?: (id: string) => SharedRollout | undefined;
  /** The rollout this page drives now ("" while its id is not known yet), or undefined when none. */
  readonly onRunning?: (id: string | undefined) => void;
}

type Mode = "new" | "resume" | "undo";

export interface RolloutView {
  readonly element: HTMLElement;
  /** Ends a running rollout's waits (sign-out). */
  stop(): void;
  setPolicyValid(ok: boolean): void;
  /** Continues (approving it when it waits for approval) or undoes shared rollout `r`; resolves with the refusal's sentence, or undefined. */
  act(action: "proceed" | "undo", r: SharedRollout): Promise<string | undefined>;
  /** Shows shared rollout `r` in the card (its state read from the record). */
  showShared(r: SharedRollout): Promise<void>;
  /** Says, above the list, that the rollouts below are kept in this browser only (no shared records). */
  setShared(shared: boolean): void;
  /** Redraws the list after the shared records changed. */
  refresh(): void;
}

/** The rollout card; call `stop()` on sign-out to end a running rollout's waits. */
export function createRolloutView(options: RolloutViewOptions): RolloutView {
  const store = createRolloutStore();
  const fields = createRolloutFormFields();
  const detail = createRolloutDetail(options);
  const list = createRolloutList({
    show: (id) => {
      if (running !== undefined) return;
      const record = options.sharedRecord?.(id);
      if (record) void readShared(id).then(() => sync());
      else showKept(id);
    },
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
  let reported: string | undefined;
  let policyValid = false;
  /** The rollout the card shows and its buttons act on: its state (kept current by onState) and how it stands. */
  let shown: { id: string; state: RolloutState; phase: RolloutPhase } | undefined;

  const hideConflict = () => {
    conflict.hidden = true;
    conflictText.textContent = "";
  };
  fields.selector.addEventListener("input", hideConflict);

  /**
   * The kept rollouts as they stand: with shared records, how each record stands now (another
   * operator may have continued or undone it since this browser saved it).
   */
  function listed(): KeptRollout[] {
    return store.list().map((r) => {
      const record = options.sharedRecord?.(r.id);
      return record ? { ...r, phase: phaseOfRecord(record, Date.now()), wave: record.waves.done } : r;
    });
  }

  /** The list, and the buttons for the rollout shown: Continue (paused) or Resume (halted, cut short), Undo. */
  function sync(): void {
    if (running !== reported) options.onRunning?.((reported = running));
    list.render({ rollouts: listed(), shownId: shown?.id, running });
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
    const paused = listed()
      .filter((r) => r.phase === "paused")
      .flatMap((r) => {
        const s = store.state(r.id);
        return s ? [{ id: r.id, ...(r.selector !== undefined ? { selector: r.selector } : {}), sandboxes: s.sandboxes }] : [];
      });
    if (paused.length === 0) return [];
    return conflictsWith(targetsOf(selector, await options.listSandboxes()), paused);
  }

  /** Whether this browser keeps rollout `id` (a shared one started elsewhere is not copied here). */
  const kept = (id: string) => store.list().some((e) => e.id === id);

  /** Reads shared rollout `id` with its state and shows it; the error's sentence when it cannot. */
  async function readShared(id: string): Promise<SharedRollout | string> {
    try {
      const full = await getRollout(options.client, id);
      if (full.state === undefined) return `rollout ${id} has no state to show`;
      shown = { id, state: full.state, phase: phaseOfState(full.state) };
      // What this browser saved of its last run (the gates' sentences), while nobody has moved it on since.
      const local = kept(id) ? store.state(id) : undefined;
      const current = local !== undefined && local.wave === full.state.wave && local.phase === full.state.phase;
      detail.showKept(full.state, current ? store.view(id) : undefined, shown.phase);
      return full;
    } catch (err) {
      return options.explain(err);
    }
  }

  async function run(mode: Mode, id?: string, confirmed = false, via?: SharedRollout): Promise<string | undefined> {
    if (running !== undefined) return "This page is driving a rollout already; one at a time.";
    hideConflict();
    let form: RolloutForm | undefined;
    let selectorText = "";
    let launch: () => RolloutRun | Promise<RolloutRun>;
    /** The state so far of a shared run, whose RolloutRun the card never holds (the SDK resolves it at the end). */
    let latest: RolloutState | undefined;
    const runOf = () => current ?? (latest ? ({ state: () => latest! } as unknown as RolloutRun) : undefined);
    const onProgress = (e: RolloutEvent) => detail.onEvent(e, runOf(), selectorText);
    const onState = (s: RolloutState) => {
      if (s.sandboxes.length === 0) return; // matched nothing: nothing to keep
      latest = s;
      if (mode === "new" || kept(s.id)) store.saveState(s, mode === "new" ? form : undefined); // throws when full: the SDK stops, saying why
      running = s.id;
      shown = { id: s.id, state: s, phase: phaseOfState(s) };
      sync();
    };
    const record = mode === "new" ? undefined : (via ?? options.sharedRecord?.(id ?? shown?.id ?? ""));
    if (record) {
      // Shared: from the record, by id; whoever drove it last, wherever.
      running = record.id;
      sync();
      const full = await readShared(record.id);
      running = undefined;
      sync();
      if (typeof full === "string") {
        detail.setSummary(`Could not read rollout ${record.id}: ${full}`, "error", "error");
        return full;
      }
      latest = full.state;
      selectorText = full.labelSelector ?? "";
      const o = () => ({ driver: options.driver, signal: controller!.signal, onProgress, onState });
      launch = () =>
        mode === "undo"
          ? undoSharedRollout(options.client, full.id, o())
          : full.awaitingApproval
            ? approveRollout(options.client, full.id, o())
            : resumeRollout(options.client, full.id, o());
    } else if (mode !== "new") {
      if (id !== undefined && id !== shown?.id && !showKept(id)) return undefined;
      const keptOne = shown;
      if (!keptOne) return undefined;
      selectorText = keptOne.state.labelSelector ?? "";
      launch = () =>
        mode === "undo"
          ? undoRollout(options.client, keptOne.state, { signal: controller!.signal, onProgress, onState })
          : rollout(options.client, { resume: keptOne.state, driver: options.driver, signal: controller!.signal, onProgress, onState });
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
      launch = () => rollout(options.client, { ...opts, driver: options.driver, signal: controller!.signal, onProgress, onState });
    }
    controller = new AbortController();
    detail.setSignal(controller.signal);
    running = mode === "new" ? "" : (record?.id ?? shown!.id);
    sync();
    detail.setSummary(mode === "undo" ? "Undoing the rollout…" : `Selecting the sandboxes with ${selectorText}…`, "running");
    cancel.hidden = false;
    try {
      const launched = launch();
      if (!(launched instanceof Promise)) current = launched;
      // A shared run's promise settles at its end, with the result (awaiting twice is right either way).
      const result = (await (await launched)) as RolloutResult;
      const view = detail.finished(result, mode);
      if (view && (record === undefined || kept(result.id))) {
        store.saveState(result.state);
        store.saveView(view);
      }
      if (view) shown = { id: result.id, state: result.state, phase: result.phase };
      return undefined;
    } catch (err) {
      const message = options.explain(err);
      // A refusal of a shared rollout (lease held, four eyes, permission) leaves it as it was, on show.
      if (record === undefined) detail.clear();
      detail.setSummary(`Could not ${mode === "undo" ? "undo" : record ? "continue" : "roll out"}: ${message}`, "error", "error");
      return message;
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
    refresh: () => sync(),
    act: (action, r) => run(action === "undo" ? "undo" : "resume", r.id, false, r),
    async showShared(r) {
      if (running !== undefined) return;
      const full = await readShared(r.id);
      if (typeof full === "string") detail.setSummary(`Could not read rollout ${r.id}: ${full}`, "error", "error");
      sync();
    },
    setShared(shared) {
      const title = list.element.querySelector("h3");
      if (title) title.textContent = shared ? "Started in this browser" : "Rollouts (this browser only: not shared)";
    },
  };
}
