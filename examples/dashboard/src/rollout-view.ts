// The rollout card: send the policy in the editor to every sandbox a label selector matches (the
// SDK's rollout()), and show each sandbox's progress live: queued, sending, then its outcome. The
// last rollout's state is kept in localStorage (sandbox names, the change, operation handles; no
// token), so an interrupted or halted rollout can be resumed after a reload.

import { rollout, restoreRolloutState, type RolloutEvent, type RolloutResult, type RolloutRun, type SandboxRolloutResult } from "openshell-config/rollout";
import type { ConfigClient } from "openshell-config";
import type { SandboxPolicy } from "openshell-config/raw";
import { h } from "./dom.js";
import { badge, badgeStateOf, type BadgeState } from "./status.js";

const LAST_KEY = "openshell-dashboard.rollout";

export interface RolloutViewOptions {
  readonly client: ConfigClient;
  /** The editor's policy, or the reason it cannot be sent. */
  readonly policy: () => { readonly ok: true; readonly policy: SandboxPolicy } | { readonly ok: false; readonly message: string };
  /** A message for an error (never the token). */
  readonly explain: (err: unknown) => string;
  /** Called when a rollout ends, e.g. to refresh the sandbox list. */
  readonly onFinished: () => void;
}

interface RowView {
  state: BadgeState | "queued" | "skipped";
  label: string;
  detail: string;
}

function viewOf(r: SandboxRolloutResult): RowView {
  switch (r.status) {
    case "completed": {
      const state = badgeStateOf(r.completion);
      return { state, label: state, detail: r.completion.error ?? `${(r.durationMs / 1000).toFixed(1)} s` };
    }
    case "pending":
      return { state: "timeout", label: "still pending", detail: r.handle.operationId ?? "" };
    case "error":
      return { state: "error", label: "error", detail: r.error.message };
    case "skipped":
      return { state: "skipped", label: `skipped (${r.reason})`, detail: "" };
  }
}

/** The rollout card; call `stop()` on sign-out to end a running rollout's waits. */
export function createRolloutView(options: RolloutViewOptions): { readonly element: HTMLElement; stop(): void } {
  const selector = h("input", { id: "rollout-selector", type: "text", placeholder: "env=prod", spellcheck: "false", autocomplete: "off", "aria-label": "Label selector" });
  const concurrency = h("input", { id: "rollout-concurrency", type: "number", min: 1, value: 4, "aria-label": "Concurrency" });
  const maxFailures = h("input", { id: "rollout-max-failures", type: "number", min: 1, placeholder: "never", "aria-label": "Max failures" });
  const start = h("button", { type: "submit", class: "primary", id: "rollout-start" }, "Roll out");
  const resumeBtn = h("button", { type: "button", id: "rollout-resume", hidden: true, onclick: () => void run("resume") }, "Resume");
  const cancel = h("button", { type: "button", id: "rollout-stop", hidden: true, onclick: () => controller?.abort() }, "Stop");
  const bar = h("progress", { "data-testid": "rollout-bar", max: 1, value: 0 });
  const summary = h("p", { class: "muted small", "data-testid": "rollout-progress", role: "status" }, "Sends the policy in the editor to every sandbox with these labels.");
  const body = h("tbody", { "data-testid": "rollout-rows" });
  const rows = new Map<string, HTMLTableRowElement>();
  let controller: AbortController | undefined;
  let current: RolloutRun | undefined;

  function setRow(sandbox: string, v: RowView): void {
    const tr = rows.get(sandbox);
    if (!tr) return;
    tr.dataset["state"] = v.state;
    tr.replaceChildren(h("td", {}, sandbox), h("td", {}, badge(v.state as BadgeState, v.label)), h("td", { class: "small" }, v.detail));
  }

  function onEvent(e: RolloutEvent): void {
    switch (e.type) {
      case "started":
        rows.clear();
        body.replaceChildren(
          ...e.sandboxes.map((name) => {
            const tr = h("tr", { "data-sandbox": name });
            rows.set(name, tr);
            return tr;
          }),
        );
        for (const name of e.sandboxes) setRow(name, { state: "queued", label: "queued", detail: "" });
        bar.max = Math.max(1, e.sandboxes.length);
        summary.textContent = `Rollout ${e.id}: ${e.sandboxes.length} sandboxes${e.alreadyCommitted ? `, ${e.alreadyCommitted} sent before` : ""}.`;
        save();
        break;
      case "sent":
        setRow(e.sandbox, { state: "committing", label: "sending…", detail: "" });
        break;
      case "result":
        setRow(e.result.sandbox, viewOf(e.result));
        bar.value = e.progress.done;
        summary.textContent = `${e.progress.done}/${e.progress.total} done${e.progress.failures ? `, ${e.progress.failures} failed` : ""}`;
        break;
      case "halted":
        summary.textContent = `Halted: ${e.failures} sandboxes failed (max ${e.maxFailures}); waiting for those already sent…`;
        break;
      case "finished":
        break;
    }
  }

  function save(): void {
    if (current) localStorage.setItem(LAST_KEY, JSON.stringify(current.state()));
  }

  function finished(r: RolloutResult): void {
    localStorage.setItem(LAST_KEY, JSON.stringify(r.state));
    const counts = Object.entries(r.counts.byState).map(([state, n]) => `${n} ${state}`);
    if (r.counts.byStatus.error) counts.push(`${r.counts.byStatus.error} errors`);
    if (r.counts.byStatus.pending) counts.push(`${r.counts.byStatus.pending} still pending`);
    if (r.counts.byStatus.skipped) counts.push(`${r.counts.byStatus.skipped} not sent`);
    const verdict = r.aborted ? "Stopped" : r.halted ? "Halted" : r.complete ? "Done" : "Incomplete";
    summary.textContent = `${verdict}: ${counts.join(", ")} (rollout ${r.id}, ${(r.durationMs / 1000).toFixed(1)} s).`;
    summary.dataset["verdict"] = verdict.toLowerCase();
    resumeBtn.hidden = r.complete;
  }

  async function run(mode: "new" | "resume"): Promise<void> {
    let opts: Parameters<typeof rollout>[1];
    if (mode === "resume") {
      const text = localStorage.getItem(LAST_KEY);
      if (!text) return;
      opts = { resume: restoreRolloutState(text) };
    } else {
      const p = options.policy();
      if (!p.ok) {
        summary.textContent = `Not sent: ${p.message}`;
        return;
      }
      opts = {
        labelSelector: selector.value.trim(),
        policy: p.policy,
        concurrency: Number(concurrency.value) || 4,
        ...(maxFailures.value ? { maxFailures: Number(maxFailures.value) } : {}),
      };
    }
    controller = new AbortController();
    delete summary.dataset["verdict"];
    start.disabled = true;
    resumeBtn.hidden = true;
    cancel.hidden = false;
    try {
      current = rollout(options.client, { ...opts, signal: controller.signal, onProgress: onEvent });
      finished(await current);
    } catch (err) {
      summary.textContent = `Could not roll out: ${options.explain(err)}`;
      summary.dataset["verdict"] = "error";
    } finally {
      start.disabled = false;
      cancel.hidden = true;
      options.onFinished();
    }
  }

  resumeBtn.hidden = localStorage.getItem(LAST_KEY) === null;
  const element = h(
    "section",
    { class: "card", "data-testid": "rollout" },
    h("div", { class: "card-head" }, h("h2", {}, "Roll out to a fleet")),
    h(
      "form",
      { class: "inline-form", onsubmit: (ev: Event) => (ev.preventDefault(), void run("new")) },
      selector,
      h("label", { class: "small" }, "at once ", concurrency),
      h("label", { class: "small" }, "stop after failures ", maxFailures),
      start,
      resumeBtn,
      cancel,
    ),
    bar,
    summary,
    h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Sandbox"), h("th", {}, "State"), h("th", {}, "Detail"))), body),
  );
  return { element, stop: () => controller?.abort() };
}
