// The rollout card's view of one rollout: a segmented bar, a summary line, each wave (size,
// applied / failed / pending, its gate), each sandbox's row live (queued, sending, committed with
// the version and operation id, then its outcome) and the rollback's progress. It follows a run's
// events, and shows a kept rollout (after a reload, or picked from the list) from its state and
// the view saved when its last run ended.
//
// The SDK's rollout commits and waits in one request per sandbox, so its events say "sent" and
// then the result. To show the commit in between, the card asks for the operation by the handle
// of the "sent" event (client.getOperation): that re-sends the commit-only request with the same
// idempotency key, which the gateway answers with the one committed operation (or commits it, at
// most once, if it gets there first).

import type { RolloutEvent, RolloutPhase, RolloutResult, RolloutRun, RolloutState } from "openshell-config/rollout";
import type { ConfigClient, OperationHandle } from "openshell-config";
import { breakable, h } from "./dom.js";
import { badge, fromStatus, plural, type BadgeState } from "./status.js";
import { rollbackLineOf, SEGMENTS, summaryOf, viewOf, type RowState, type RowView, type Tone } from "./rollout-rows.js";
import type { SavedView } from "./rollout-store.js";
import { countWave, gatesFromState, renderRollback, renderWaves, type RollbackLine, type WaveGateView, type WaveView } from "./rollout-waves.js";

export interface RolloutDetailOptions {
  readonly client: ConfigClient;
  /** A message for an error (never the token). */
  readonly explain: (err: unknown) => string;
  /** Called when a sandbox's change is known to be committed. */
  readonly onCommitted?: (sandbox: string, operationId: string, policyVersion: number) => void;
}

export interface RolloutDetail {
  /** Bar, summary, waves, rollback panel and rows, in this order. */
  readonly elements: readonly HTMLElement[];
  /** The rollout shown (its rows or its kept view). */
  readonly shownId: string | undefined;
  setSummary(text: string, tone: Tone, verdict?: string): void;
  /** Clears the rows, waves and bar (a new rollout, or one that cannot start). */
  clear(): void;
  /** Follows a run: `run` gives its state, `selectorText` names what matched nothing. */
  onEvent(e: RolloutEvent, run: RolloutRun | undefined, selectorText: string): void;
  /** Shows a run's result; returns what to keep of it (undefined: it matched nothing). */
  finished(r: RolloutResult, mode: "new" | "resume" | "undo"): SavedView | undefined;
  /** Shows a kept rollout from its state and saved view. */
  showKept(state: RolloutState, view: SavedView | undefined, phase: RolloutPhase): void;
  /** The AbortSignal of the run, for the reads made while it runs. */
  setSignal(signal: AbortSignal | undefined): void;
}

interface Row {
  tr: HTMLTableRowElement;
  state: RowState;
  final: boolean;
  wave: number;
  view: RowView;
  rollback?: RollbackLine;
}

export function createRolloutDetail(options: RolloutDetailOptions): RolloutDetail {
  const bar = h("div", { class: "rollout-bar", "data-testid": "rollout-bar", role: "progressbar", "aria-label": "Rollout progress", "aria-valuemin": 0, "aria-valuemax": 0, "aria-valuenow": 0 });
  const summary = h("p", { class: "rollout-summary", "data-testid": "rollout-progress", role: "status" });
  const waveList = h("ol", { class: "wave-list", "data-testid": "rollout-waves", hidden: true });
  const rollbackPanel = h("div", { class: "rollback-panel", "data-testid": "rollout-rollback", hidden: true });
  const body = h("tbody", { "data-testid": "rollout-rows" });
  const rows = new Map<string, Row>();
  let signal: AbortSignal | undefined;
  /** The planned waves and what the card knows of each gate. */
  let waves: readonly (readonly string[])[] = [];
  let gates: { gate: WaveGateView; reason?: string; until?: string }[] = [];
  /** Wave counts from the saved view, shown while no row exists (after a reload). */
  let savedWaves: readonly WaveView[] = [];
  let rollbackView: { running: boolean; reason: string; total: number; lines: RollbackLine[] } | undefined;
  /** The wave that awaits approval (the run paused before it). */
  let pausedBefore: number | undefined;
  /** The rollout whose waves the card shows. */
  let shownId: string | undefined;

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

  function waveViews(): WaveView[] {
    return waves.map((sandboxes, i) => {
      const saved = rows.size === 0 ? savedWaves[i] : undefined;
      const c = saved ?? countWave(sandboxes, (s) => rows.get(s)?.state);
      return { index: i, sandboxes, applied: c.applied, failed: c.failed, pending: c.pending, skipped: c.skipped, ...(gates[i] ?? { gate: "not-reached" }) };
    });
  }

  function drawWaves(): void {
    renderWaves(waveList, waveViews());
    renderRollback(rollbackPanel, rollbackView);
  }

  /** Clears the rows, waves and bar (a new rollout, or one that cannot start). */
  function clear(): void {
    rows.clear();
    body.replaceChildren();
    waves = [];
    gates = [];
    savedWaves = [];
    rollbackView = undefined;
    pausedBefore = undefined;
    drawBar();
    drawWaves();
  }

  function drawRow(sandbox: string): void {
    const row = rows.get(sandbox)!;
    const v = row.view;
    const rb = row.rollback;
    row.tr.dataset["state"] = v.state;
    if (rb) row.tr.dataset["rollback"] = rb.kind;
    row.tr.replaceChildren(
      h("td", { class: "name-cell" }, sandbox, waves.length > 1 ? h("span", { class: "wave-tag" }, `wave ${row.wave + 1}`) : null),
      h("td", {}, badge(v.state as BadgeState, v.label)),
      h(
        "td",
        { class: `small detail${v.tone ? ` ${v.tone}-text` : ""}` },
        breakable(v.detail),
        rb ? h("span", { class: `rollback-note ${rb.kind === "rolled-back" ? "muted" : rb.kind === "left-alone" ? "warn-text" : "error-text"}`, "data-testid": "row-rollback" }, `↩ ${rb.kind === "left-alone" ? "left alone: " : ""}${rb.reason}`) : null,
      ),
    );
  }

  function setRow(sandbox: string, v: RowView, final = false): void {
    const row = rows.get(sandbox);
    if (!row) return;
    row.state = v.state;
    row.final = final;
    row.view = v;
    drawRow(sandbox);
  }

  /** Shows the commit of a sent sandbox (see the header) while its outcome is awaited. */
  async function showCommit(sandbox: string, handle: OperationHandle): Promise<void> {
    try {
      const status = await options.client.getOperation(handle, signal ? { signal } : {});
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

  function onEvent(e: RolloutEvent, current: RolloutRun | undefined, selectorText: string): void {
    switch (e.type) {
      case "started": {
        // A resumed run judges only the waves it sends: keep the sentences of the gates passed before.
        const known = shownId === e.id ? gates : [];
        shownId = e.id;
        clear();
        if (e.sandboxes.length === 0) {
          setSummary(`No sandbox matches ${selectorText || "the selector"}: nothing was sent.`, "error", "no-match");
          break;
        }
        const s = current?.state();
        waves = s && s.waves.length > 0 ? s.waves.map((w) => w.sandboxes) : [e.sandboxes];
        gates = s ? gatesFromState(s).map((g, i) => (g.reason === undefined && known[i]?.gate === g.gate && known[i]?.reason ? { ...g, reason: known[i]!.reason } : g)) : [];
        // Rows in sending order: wave by wave.
        waves.forEach((w, i) =>
          w.forEach((name) => {
            const tr = h("tr", { "data-sandbox": name, "data-wave": i });
            rows.set(name, { tr, state: "queued", final: false, wave: i, view: { state: "queued", label: "queued", detail: "" } });
            body.append(tr);
            drawRow(name);
          }),
        );
        drawBar();
        drawWaves();
        setSummary(`Rolling out to ${plural(e.sandboxes.length, "sandbox", "sandboxes")}${waves.length > 1 ? ` in ${waves.length} waves` : ""}${e.alreadyCommitted ? `, ${e.alreadyCommitted} sent before` : ""}…`, "running");
        break;
      }
      case "wave-started":
        gates[e.wave] = { gate: "running" };
        drawWaves();
        if (e.waves > 1) setSummary(`Wave ${e.wave + 1} of ${e.waves}: sending to ${plural(e.sandboxes.length, "sandbox", "sandboxes")}…`, "running");
        break;
      case "gate":
        gates[e.wave] = { gate: e.verdict, reason: e.reason };
        drawWaves();
        break;
      case "paused":
        pausedBefore = e.until === undefined ? e.wave + 1 : undefined;
        gates[e.wave + 1] = e.until ? { gate: "timed", until: e.until.toISOString() } : { gate: "approval" };
        drawWaves();
        break;
      case "sent":
        setRow(e.sandbox, { state: "committing", label: "sending…", detail: "" });
        void showCommit(e.sandbox, e.handle);
        break;
      case "result": {
        const wave = rows.get(e.result.sandbox)?.wave ?? 0;
        const v = viewOf(e.result, pausedBefore === undefined ? undefined : wave === pausedBefore ? "next" : "later");
        // A sandbox a paused rollout has yet to send is not done.
        setRow(e.result.sandbox, v, v.state !== "waiting" && v.state !== "queued");
        drawBar();
        drawWaves();
        if (summary.dataset["verdict"] !== "halting" && e.result.status !== "skipped") {
          setSummary(`${e.progress.done}/${e.progress.total} done${e.progress.failures ? `, ${e.progress.failures} failed` : ""}`, e.progress.failures ? "warn" : "running");
        }
        break;
      }
      case "halted":
        setSummary(`Halted: ${plural(e.failures, "sandbox", "sandboxes")} failed (max ${e.maxFailures}); waiting for those already sent…`, "error", "halting");
        break;
      case "rollback-started":
        rollbackView = { running: true, reason: e.reason, total: e.sandboxes.length, lines: [] };
        drawWaves();
        setSummary(`Rolling back ${plural(e.sandboxes.length, "sandbox", "sandboxes")}…`, "warn", "rolling-back");
        break;
      case "rollback-result": {
        const line = rollbackLineOf(e.sandbox, e.rollback);
        rollbackView?.lines.push(line);
        const row = rows.get(e.sandbox);
        if (row) {
          row.rollback = line;
          drawRow(e.sandbox);
        }
        drawWaves();
        break;
      }
      case "finished":
        break;
    }
  }

  function finished(r: RolloutResult, mode: "new" | "resume" | "undo"): SavedView | undefined {
    if (r.sandboxes.length === 0) return undefined; // "no match", said at "started"; nothing to keep
    // The result is authoritative: each wave's gate, and a paused rollout's next wave.
    gates = r.waves.map((w, i) => {
      const reason = w.reason ?? (gates[i]?.gate === w.gate ? gates[i]?.reason : undefined);
      return { gate: w.gate, ...(reason ? { reason } : {}) };
    });
    if (r.phase === "paused" && r.state.wave < gates.length) gates[r.state.wave] = { gate: "approval" };
    if (rollbackView || r.rollback) {
      const lines = r.sandboxes.flatMap((s) => (s.rollback ? [rollbackLineOf(s.sandbox, s.rollback)] : []));
      rollbackView = { running: false, reason: rollbackView?.reason ?? (mode === "undo" ? "undo requested" : (r.gateFailure?.reason ?? "")), total: rollbackView?.total ?? lines.length, lines };
    }
    drawWaves();
    const line = summaryOf(r, mode, options.explain);
    setSummary(line.text, line.tone, line.verdict);
    return {
      id: r.id,
      phase: r.phase,
      waves: waveViews(),
      ...(rollbackView ? { rollback: { reason: rollbackView.reason, total: rollbackView.total, lines: rollbackView.lines } } : {}),
      summary: { text: summary.textContent ?? "", tone: summary.dataset["tone"] ?? "info", ...(summary.dataset["verdict"] ? { verdict: summary.dataset["verdict"] } : {}) },
    };
  }

  function showKept(state: RolloutState, view: SavedView | undefined, phase: RolloutPhase): void {
    clear();
    shownId = state.id;
    waves = state.waves.map((w) => w.sandboxes);
    gates = view ? view.waves.map((w) => ({ gate: w.gate, ...(w.reason ? { reason: w.reason } : {}), ...(w.until ? { until: w.until } : {}) })) : gatesFromState(state);
    savedWaves = view?.waves ?? [];
    if (view?.rollback) rollbackView = { running: false, ...view.rollback, lines: [...view.rollback.lines] };
    drawWaves();
    if (view) setSummary(view.summary.text, view.summary.tone as Tone, view.summary.verdict);
    else setSummary(`Rollout ${state.id} is ${phase}.`, phase === "complete" ? "info" : "warn", phase);
  }

  drawBar();
  return {
    elements: [
      bar,
      summary,
      waveList,
      rollbackPanel,
      h("div", { class: "rollout-scroll" }, h("table", { class: "rollout-table" }, h("thead", {}, h("tr", {}, h("th", {}, "Sandbox"), h("th", {}, "State"), h("th", {}, "Detail"))), body)),
    ],
    get shownId() {
      return shownId;
    },
    setSummary,
    clear,
    onEvent,
    finished,
    showKept,
    setSignal: (s) => (signal = s),
  };
}
