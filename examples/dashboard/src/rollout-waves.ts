// The rollout card's waves: the "waves" field parsed into the SDK's WaveInput, one view per wave
// (its size, applied / failed / pending, and its gate: passed, failed with the reason, waiting for
// approval, not reached), and their rendering as a list. Also the rollback panel ("rolling back
// 3/10", then rolled back / left alone / failed with reasons). Pure view code: the counts come from
// the card, which knows each sandbox's row.

import type { RolloutState, WaveInput } from "openshell-config/rollout";
import { h } from "./dom.js";
import { plural, timeText } from "./status.js";

/** The waves field's default: a canary, half, then everyone. */
export const DEFAULT_WAVES = "1, 50%, 100%";

/**
 * `1, 50%, 100%` → `[1, "50%", "100%"]`; a group of names (`web-1 web-2, 100%`) is a wave of those
 * sandboxes. Empty: no waves (one wave, as before waves existed). The SDK checks the rest (sizes
 * must increase, names must be targets) and names the wave that is wrong.
 */
export function parseWaves(text: string): WaveInput[] | undefined {
  const groups = text.split(",").map((g) => g.trim()).filter((g) => g !== "");
  if (groups.length === 0) return undefined;
  return groups.map((g): WaveInput => {
    if (/^\d+$/.test(g)) return Number(g);
    if (/^\d+(\.\d+)?\s*%$/.test(g)) return `${g.replace(/\s+/g, "")}` as `${number}%`;
    return g.split(/\s+/);
  });
}

/** A wave's gate as the card shows it. */
export type WaveGateView = "passed" | "failed" | "pending" | "not-reached" | "running" | "approval" | "timed";

export interface WaveView {
  readonly index: number;
  readonly sandboxes: readonly string[];
  readonly applied: number;
  readonly failed: number;
  /** Sent, with no outcome yet (or still pending when the run ended). */
  readonly pending: number;
  /** Not sent (a gate failed, or the rollout stopped first). */
  readonly skipped: number;
  readonly gate: WaveGateView;
  /** The gate's sentence (passed, failed, pending). */
  readonly reason?: string;
  /** A timed pause's end (gate "timed"). */
  readonly until?: string;
}

/** What each row state counts as in a wave's progress. */
export type CountKind = "applied" | "failed" | "pending" | "skipped" | "queued";

export function countKindOf(state: string): CountKind {
  switch (state) {
    case "applied":
    case "degraded":
    case "superseded":
    case "inactive":
      return "applied";
    case "failed":
    case "error":
    case "rejected":
    case "cancelled":
      return "failed";
    case "committing":
    case "pending":
    case "timeout":
      return "pending";
    case "skipped":
      return "skipped";
    default:
      return "queued";
  }
}

/** Counts of `sandboxes` by the kind of their row state (`stateOf` undefined: queued). */
export function countWave(sandboxes: readonly string[], stateOf: (s: string) => string | undefined): Record<CountKind, number> {
  const out: Record<CountKind, number> = { applied: 0, failed: 0, pending: 0, skipped: 0, queued: 0 };
  for (const s of sandboxes) out[countKindOf(stateOf(s) ?? "queued")]++;
  return out;
}

/**
 * The gates a saved state implies, without any run's results (after a reload): waves before
 * `state.wave` passed, the failed one failed with its reason, the next one waiting for approval
 * (or a timed pause), the rest not reached.
 */
export function gatesFromState(state: RolloutState): { gate: WaveGateView; reason?: string; until?: string }[] {
  return state.waves.map((_, i) => {
    if (state.gateFailure?.wave === i) return { gate: "failed", reason: state.gateFailure.reason };
    if (i < state.wave) return { gate: "passed" };
    if (i === state.wave && state.phase === "paused") return state.pausedUntil ? { gate: "timed", until: state.pausedUntil } : { gate: "approval" };
    return { gate: "not-reached" };
  });
}

const waveName = (i: number, n: number) => (i === 0 && n > 1 ? "Wave 1 · canary" : `Wave ${i + 1}`);

function gateChip(w: WaveView): HTMLElement {
  const [tone, text] = ((): [string, string] => {
    switch (w.gate) {
      case "passed":
        return ["green", "gate passed"];
      case "failed":
        return ["red", "gate failed"];
      case "pending":
        return ["amber", "gate pending"];
      case "running":
        return ["blue", "sending…"];
      case "approval":
        return ["amber", "waiting for approval"];
      case "timed":
        return ["blue", `starts ${w.until ? timeText(new Date(w.until)) : "soon"}`];
      case "not-reached":
        return ["grey", "not reached"];
    }
  })();
  return h("span", { class: `badge chip chip-${tone}`, "data-testid": "wave-gate", "data-gate": w.gate }, text);
}

function progressText(w: WaveView): string {
  const parts = [`${w.applied} applied`, `${w.failed} failed`, `${w.pending} pending`];
  const queued = w.sandboxes.length - w.applied - w.failed - w.pending - w.skipped;
  if (queued > 0) parts.push(`${queued} queued`);
  if (w.skipped > 0) parts.push(`${w.skipped} not sent`);
  return parts.join(" · ");
}

/** The segments of a wave's small bar: applied green, failed red, pending blue. */
function miniBar(w: WaveView): HTMLElement {
  const n = w.sandboxes.length || 1;
  const seg = (cls: string, k: number) => h("span", { class: `seg ${cls}`, style: `width: ${(100 * k) / n}%` });
  return h("div", { class: "wave-bar", "aria-hidden": "true" }, seg("seg-applied", w.applied), seg("seg-failed", w.failed), seg("seg-pending", w.pending));
}

/** The list of waves; empty (hidden) for a rollout without waves. */
export function renderWaves(list: HTMLElement, waves: readonly WaveView[]): void {
  list.hidden = waves.length < 2;
  list.replaceChildren(
    ...waves.map((w) => {
      const reasonCls = w.gate === "failed" ? "error-text" : w.gate === "pending" ? "warn-text" : "muted";
      const reason =
        w.gate === "approval"
          ? "The previous wave passed its gate: Continue sends this wave, Undo rolls back what was changed."
          : w.reason;
      return h(
        "li",
        { class: "wave", "data-wave": w.index, "data-gate": w.gate },
        h(
          "div",
          { class: "wave-head" },
          h("span", { class: "wave-name" }, waveName(w.index, waves.length)),
          h("span", { class: "wave-size muted small" }, plural(w.sandboxes.length, "sandbox", "sandboxes")),
          gateChip(w),
        ),
        miniBar(w),
        h("div", { class: "wave-counts small", "data-testid": "wave-counts" }, progressText(w)),
        reason ? h("div", { class: `wave-reason small ${reasonCls}`, "data-testid": "wave-reason" }, reason) : null,
      );
    }),
  );
}

/** One sandbox's rollback, as the card shows it. */
export interface RollbackLine {
  readonly sandbox: string;
  readonly kind: "rolled-back" | "left-alone" | "failed" | "pending";
  readonly reason: string;
}

const LEFT_ALONE: Record<string, string> = {
  "changed-by-others": "changed by someone else since",
  "no-earlier-revision": "had no earlier revision",
};

export const leftAloneReason = (r: string) => LEFT_ALONE[r] ?? r;

/**
 * The rollback panel: while running "Rolling back 3/10…"; when over, how many were rolled back
 * and each sandbox left alone, failed or still pending with its reason.
 */
export function renderRollback(
  panel: HTMLElement,
  r: { readonly running: boolean; readonly reason: string; readonly total: number; readonly lines: readonly RollbackLine[] } | undefined,
): void {
  panel.hidden = r === undefined;
  if (!r) return panel.replaceChildren();
  const by = (k: RollbackLine["kind"]) => r.lines.filter((l) => l.kind === k);
  const back = by("rolled-back").length;
  const others = r.lines.filter((l) => l.kind !== "rolled-back");
  const failed = by("failed").length + by("pending").length;
  panel.dataset["state"] = r.running ? "running" : failed > 0 ? "failed" : "done";
  const title = r.running
    ? `Rolling back ${r.lines.length}/${r.total}…`
    : r.total === 0
      ? "Rolled back: nothing had been changed."
      : `Rolled back ${back} of ${plural(r.total, "changed sandbox", "changed sandboxes")}${others.length ? `; ${by("left-alone").length} left alone` : ""}${failed ? `, ${failed} not rolled back` : ""}.`;
  const list = others.length
      ? h(
          "ul",
          { class: "rollback-list small", "data-testid": "rollback-lines" },
          ...others.map((l) =>
            h(
              "li",
              { "data-sandbox": l.sandbox, "data-rollback": l.kind },
              h("span", { class: "name-cell" }, l.sandbox),
              " ",
              h("span", { class: l.kind === "left-alone" ? "warn-text" : "error-text" }, `${l.kind === "left-alone" ? "left alone" : l.kind === "pending" ? "still pending" : "failed"}: ${l.reason}`),
            ),
          ),
        )
      : undefined;
  panel.replaceChildren(
    h("p", { class: "rollback-title", "data-testid": "rollback-progress" }, title),
    h("p", { class: "small muted rollback-why" }, `Why: ${r.reason}`),
    ...(list ? [list] : []),
  );
}
