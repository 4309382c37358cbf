// The rollout card: send the policy in the editor to every sandbox a label selector matches (the
// SDK's rollout()), and show each sandbox's progress live: queued, sending, committed (pending,
// with the version and operation id), then its outcome. The last rollout's state is kept in
// localStorage (sandbox names, the change, operation handles; no token), so an interrupted or
// halted rollout can be resumed after a reload.
//
// The SDK's rollout commits and waits in one request per sandbox, so its events say "sent" and
// then the result. To show the commit in between, the card asks for the operation by the handle
// of the "sent" event (client.getOperation): that re-sends the commit-only request with the same
// idempotency key, which the gateway answers with the one committed operation (or commits it, at
// most once, if it gets there first).

import { rollout, restoreRolloutState, type RolloutEvent, type RolloutResult, type RolloutRun, type SandboxRolloutResult } from "openshell-config/rollout";
import type { ConfigClient, OperationHandle } from "openshell-config";
import type { SandboxPolicy } from "openshell-config/raw";
import { breakable, h } from "./dom.js";
import { badge, badgeStateOf, fromStatus, plural, type BadgeState } from "./status.js";

const LAST_KEY = "openshell-dashboard.rollout";

export interface RolloutViewOptions {
  readonly client: ConfigClient;
  /** The editor's policy, or the reason it cannot be sent. */
  readonly policy: () => { readonly ok: true; readonly policy: SandboxPolicy } | { readonly ok: false; readonly message: string };
  /** A message for an error (never the token). */
  readonly explain: (err: unknown) => string;
  /** Called when a sandbox's change is known to be committed. */
  readonly onCommitted?: (sandbox: string, operationId: string, policyVersion: number) => void;
  /** Called when a rollout ends, e.g. to refresh the sandbox list. */
  readonly onFinished: () => void;
}

type RowState = BadgeState | "queued" | "skipped";

interface RowView {
  state: RowState;
  label: string;
  detail: string;
  /** The detail is an error (red), a warning (amber), or a plain note. */
  tone?: "error" | "warn";
}

/** How the summary line reads: a plain note, a running rollout, success, a warning, an error. */
type Tone = "info" | "running" | "ok" | "warn" | "error";

const secs = (ms: number) => `${(ms / 1000).toFixed(1)}\u00a0s`;

function viewOf(r: SandboxRolloutResult): RowView {
  switch (r.status) {
    case "completed": {
      const state = badgeStateOf(r.completion);
      const v = fromStatus(r.completion).policyVersion;
      const what = [v === undefined ? undefined : `policy v${v}`, secs(r.durationMs)].filter(Boolean).join(" · ");
      const error = r.completion.error;
      return { state, label: state, detail: error ? `${what}: ${error}` : what, tone: state === "failed" ? "error" : state === "degraded" ? "warn" : undefined };
    }
    case "pending":
      return { state: "timeout", label: "still pending", detail: r.handle.operationId ? `operation ${r.handle.operationId}` : "" };
    case "error":
      return { state: "error", label: "error", detail: r.error.message, tone: "error" };
    case "skipped":
      return { state: "skipped", label: `skipped (${r.reason})`, detail: "" };
  }
}

/** Segments of the bar, in this order; their widths are the share of sandboxes in each. */
const SEGMENTS: readonly { readonly cls: string; readonly states: readonly RowState[] }[] = [
  { cls: "seg-applied", states: ["applied"] },
  { cls: "seg-degraded", states: ["degraded", "timeout"] },
  { cls: "seg-failed", states: ["failed", "error", "rejected"] },
  { cls: "seg-other", states: ["superseded", "inactive", "cancelled", "skipped"] },
];

/** The rollout card; call `stop()` on sign-out to end a running rollout's waits. */
export function createRolloutView(options: RolloutViewOptions): { readonly element: HTMLElement; stop(): void; setPolicyValid(ok: boolean): void } {
  const selector = h("input", { id: "rollout-selector", type: "text", placeholder: "label selector, e.g. app=web", spellcheck: "false", autocomplete: "off", "aria-label": "Label selector" });
  const concurrency = h("input", { id: "rollout-concurrency", type: "number", min: 1, value: 4, "aria-label": "Concurrency" });
  const maxFailures = h("input", { id: "rollout-max-failures", type: "number", min: 1, placeholder: "never", "aria-label": "Max failures" });
  const start = h("button", { type: "submit", class: "primary", id: "rollout-start", disabled: true, title: "Load a valid policy in the editor first" }, "Roll out");
  const resumeBtn = h("button", { type: "button", id: "rollout-resume", hidden: true, onclick: () => void run("resume") }, "Resume");
  const cancel = h("button", { type: "button", id: "rollout-stop", hidden: true, onclick: () => controller?.abort() }, "Stop");
  const bar = h("div", { class: "rollout-bar", "data-testid": "rollout-bar", role: "progressbar", "aria-label": "Rollout progress", "aria-valuemin": 0, "aria-valuemax": 0, "aria-valuenow": 0 });
  const summary = h("p", { class: "rollout-summary", "data-testid": "rollout-progress", role: "status" });
  const body = h("tbody", { "data-testid": "rollout-rows" });
  const rows = new Map<string, { tr: HTMLTableRowElement; state: RowState; final: boolean }>();
  let controller: AbortController | undefined;
  let current: RolloutRun | undefined;
  let running = false;
  let policyValid = false;
  let selectorText = "";

  function setSummary(text: string, tone: Tone, verdict?: string): void {
    summary.textContent = text;
    summary.dataset["tone"] = tone;
    if (verdict === undefined) delete summary.dataset["verdict"];
    else summary.dataset["verdict"] = verdict;
    bar.dataset["tone"] = tone;
  }

  function drawBar(): void {
    const total = rows.size;
    const done = [...rows.values()].filter((r) => r.final).length;
    bar.setAttribute("aria-valuemax", String(total));
    bar.setAttribute("aria-valuenow", String(done));
    bar.dataset["done"] = String(done);
    bar.dataset["total"] = String(total);
    bar.replaceChildren(
      ...SEGMENTS.map((s) => {
        const n = [...rows.values()].filter((r) => r.final && s.states.includes(r.state)).length;
        return h("span", { class: `seg ${s.cls}`, style: `width: ${total === 0 ? 0 : (100 * n) / total}%` });
      }),
    );
  }

  /** Clears the rows and the bar (a new rollout, or one that cannot start). */
  function clear(): void {
    rows.clear();
    body.replaceChildren();
    drawBar();
  }

  function setRow(sandbox: string, v: RowView, final = false): void {
    const row = rows.get(sandbox);
    if (!row) return;
    row.state = v.state;
    row.final = final;
    row.tr.dataset["state"] = v.state;
    row.tr.replaceChildren(
      h("td", { class: "name-cell" }, sandbox),
      h("td", {}, badge(v.state as BadgeState, v.label)),
      h("td", { class: `small detail${v.tone ? ` ${v.tone}-text` : ""}` }, breakable(v.detail)),
    );
  }

  /** Shows the commit of a sent sandbox (see the header) while its outcome is awaited. */
  async function showCommit(sandbox: string, handle: OperationHandle): Promise<void> {
    try {
      const status = await options.client.getOperation(handle, controller ? { signal: controller.signal } : {});
      const v = fromStatus(status);
      if (v.operationId && v.policyVersion !== undefined) options.onCommitted?.(sandbox, v.operationId, v.policyVersion);
      if (rows.get(sandbox)?.state !== "committing" || status.state !== "pending") return; // the result came first
      const version = v.policyVersion === undefined ? "committed" : `policy v${v.policyVersion}`;
      setRow(sandbox, { state: "pending", label: "pending", detail: v.operationId ? `${version} · operation ${v.operationId.slice(0, 8)}` : version });
      const tr = rows.get(sandbox)?.tr;
      if (tr && v.operationId) tr.dataset["operationId"] = v.operationId;
    } catch {
      // The row keeps "sending…"; its result says what happened.
    }
  }

  function onEvent(e: RolloutEvent): void {
    switch (e.type) {
      case "started":
        clear();
        if (e.sandboxes.length === 0) {
          setSummary(`No sandbox matches ${selectorText || "the selector"}: nothing was sent.`, "error", "no-match");
          break;
        }
        for (const name of e.sandboxes) {
          const tr = h("tr", { "data-sandbox": name });
          rows.set(name, { tr, state: "queued", final: false });
          body.append(tr);
          setRow(name, { state: "queued", label: "queued", detail: "" });
        }
        drawBar();
        setSummary(`Rolling out to ${plural(e.sandboxes.length, "sandbox", "sandboxes")}${e.alreadyCommitted ? `, ${e.alreadyCommitted} sent before` : ""}…`, "running");
        save();
        break;
      case "sent":
        setRow(e.sandbox, { state: "committing", label: "sending…", detail: "" });
        void showCommit(e.sandbox, e.handle);
        break;
      case "result":
        setRow(e.result.sandbox, viewOf(e.result), true);
        drawBar();
        if (summary.dataset["verdict"] !== "halting") {
          setSummary(`${e.progress.done}/${e.progress.total} done${e.progress.failures ? `, ${e.progress.failures} failed` : ""}`, e.progress.failures ? "warn" : "running");
        }
        break;
      case "halted":
        setSummary(`Halted: ${plural(e.failures, "sandbox", "sandboxes")} failed (max ${e.maxFailures}); waiting for those already sent…`, "error", "halting");
        break;
      case "finished":
        break;
    }
  }

  function save(): void {
    if (current) localStorage.setItem(LAST_KEY, JSON.stringify(current.state()));
  }

  function finished(r: RolloutResult): void {
    if (r.sandboxes.length === 0) return; // "no match", said at "started"; nothing to resume
    localStorage.setItem(LAST_KEY, JSON.stringify(r.state));
    const counts = Object.entries(r.counts.byState).map(([state, n]) => `${n} ${state}`);
    const { error = 0, pending = 0, skipped = 0 } = r.counts.byStatus;
    if (error) counts.push(plural(error, "error"));
    if (pending) counts.push(`${pending} still pending`);
    if (skipped) counts.push(`${skipped} not sent`);
    const verdict = r.aborted ? "Stopped" : r.halted ? "Halted" : r.complete ? "Done" : "Incomplete";
    const tone: Tone = r.failures > 0 || error > 0 ? "error" : r.aborted || pending > 0 || skipped > 0 || !r.complete ? "warn" : "ok";
    setSummary(`${verdict}: ${counts.join(", ")} (rollout ${r.id}, ${secs(r.durationMs)}).`, tone, verdict.toLowerCase());
    resumeBtn.hidden = r.complete;
  }

  function syncStart(): void {
    start.disabled = running || !policyValid;
    start.title = running ? "A rollout is running" : policyValid ? "" : "Load a valid policy in the editor first";
  }

  async function run(mode: "new" | "resume"): Promise<void> {
    let opts: Parameters<typeof rollout>[1];
    if (mode === "resume") {
      const text = localStorage.getItem(LAST_KEY);
      if (!text) return;
      const resume = restoreRolloutState(text);
      opts = { resume };
      selectorText = resume.labelSelector ?? "";
    } else {
      selectorText = selector.value.trim();
      if (selectorText === "") {
        clear();
        setSummary("Enter a label selector (e.g. app=web): nothing was sent.", "error", "error");
        selector.focus();
        return;
      }
      const p = options.policy();
      if (!p.ok) {
        clear();
        setSummary(`Not sent: ${p.message}`, "error", "error");
        return;
      }
      opts = {
        labelSelector: selectorText,
        policy: p.policy,
        concurrency: Number(concurrency.value) || 4,
        ...(maxFailures.value ? { maxFailures: Number(maxFailures.value) } : {}),
      };
    }
    controller = new AbortController();
    running = true;
    syncStart();
    setSummary(`Selecting the sandboxes with ${selectorText}…`, "running");
    resumeBtn.hidden = true;
    cancel.hidden = false;
    try {
      current = rollout(options.client, { ...opts, signal: controller.signal, onProgress: onEvent });
      finished(await current);
    } catch (err) {
      clear();
      setSummary(`Could not roll out: ${options.explain(err)}`, "error", "error");
    } finally {
      running = false;
      syncStart();
      cancel.hidden = true;
      options.onFinished();
    }
  }

  resumeBtn.hidden = localStorage.getItem(LAST_KEY) === null;
  setSummary("Sends the policy in the editor to every sandbox with these labels.", "info");
  drawBar();
  const element = h(
    "section",
    { class: "card", "data-testid": "rollout" },
    h("div", { class: "card-head" }, h("h2", {}, "Roll out to a fleet")),
    h(
      "form",
      { class: "inline-form rollout-form", onsubmit: (ev: Event) => (ev.preventDefault(), void run("new")) },
      selector,
      h("label", { class: "small" }, "at once ", concurrency),
      h("label", { class: "small" }, "stop after failures ", maxFailures),
      h("div", { class: "rollout-buttons" }, start, resumeBtn, cancel),
    ),
    bar,
    summary,
    h("div", { class: "rollout-scroll" }, h("table", { class: "rollout-table" }, h("thead", {}, h("tr", {}, h("th", {}, "Sandbox"), h("th", {}, "State"), h("th", {}, "Detail"))), body)),
  );
  return {
    element,
    stop: () => controller?.abort(),
    setPolicyValid(ok: boolean) {
      policyValid = ok;
      syncStart();
    },
  };
}
