// What `policy rollout` (and resume, undo) shows on stderr while it runs: one live line on a
// terminal (finding the sandboxes; the wave being sent with its bar; the countdown of a pause;
// the rollback's progress), and above it a permanent line per step: the header, one line per
// wave once its gate is judged (`wave 1/3  canary  1/1 applied  gate passed`), a pause, the
// start of a rollback. On a terminal every line is cut to its width; on a pipe the live line is
// not drawn and the permanent lines are plain lines as the events happen (a wave's start too).

import type { RolloutEvent, RolloutState } from "openshell-config/rollout";
import { barFrame } from "./progress-bar.js";
import { startLiveLine, type LiveLineOptions } from "./live-line.js";
import type { Output } from "./output.js";
import { countOf } from "./format.js";
import { formatElapsed, spinnerFrame, type SpinnerStream } from "./spinner.js";
import { canRedraw, fit, usableColumns, wrap } from "./terminal.js";

/** How a wave is named: `canary` for the first of several, else the share of the targets sent by its end (`10%`, `100%`). */
export function waveName(index: number, waves: readonly { readonly sandboxes: readonly unknown[] }[]): string {
  if (waves.length > 1 && index === 0) return "canary";
  const total = waves.reduce((n, w) => n + w.sandboxes.length, 0);
  const upTo = waves.slice(0, index + 1).reduce((n, w) => n + w.sandboxes.length, 0);
  return total === 0 ? "-" : `${Math.floor((upTo / total) * 100)}%`;
}

/** Counts of one wave as the display keeps them. */
export interface WaveTally {
  size: number;
  done: number;
  applied: number;
  failed: number;
}

/** `wave 2/3  10%     37/100 applied  2 failed  gate passed`: one wave, its counts and its gate. */
export function waveLine(index: number, waves: number, name: string, t: WaveTally, gate: string): string {
  const parts = [`wave ${index + 1}/${waves}`, name.padEnd(6), `${t.applied}/${t.size} applied`];
  if (t.failed > 0) parts.push(`${t.failed} failed`);
  const other = t.done - t.applied - t.failed;
  if (other > 0) parts.push(`${other} other`);
  parts.push(`gate ${gate}`);
  return parts.join("  ");
}

export interface RolloutDisplay {
  /** Feeds one event of the run. */
  event(e: RolloutEvent): void;
  /** Prints a line above the live line (stderr). */
  note(text: string): void;
  /** Erases the live line; later calls do nothing. */
  stop(): void;
}

type Showing =
  | { kind: "finding" }
  | { kind: "wave"; index: number; startedAt: number }
  | { kind: "paused"; index: number; until: number }
  | { kind: "rollback"; total: number; done: number; failed: number; startedAt: number };

/**
 * Starts the display on `stream` (stderr) for a run whose state `state()` returns (read for the
 * waves once they are planned). `selector` is shown while the sandboxes are being found.
 */
export function startRolloutDisplay(
  stream: SpinnerStream,
  out: Output,
  state: () => RolloutState,
  options: LiveLineOptions & { readonly selector?: string | undefined; readonly undo?: boolean } = {},
): RolloutDisplay {
  const now = options.now ?? Date.now;
  const started = now();
  const live = canRedraw(stream, options.env ?? process.env);
  let showing: Showing = { kind: "finding" };
  let waves: readonly { readonly sandboxes: readonly string[] }[] = [];
  let tallies: WaveTally[] = [];
  const waveOf = new Map<string, number>();
  let progress = { done: 0, total: 0, failures: 0 };
  const selector = options.selector;

  const render = ({ width, paint }: { width: number; paint: Parameters<typeof barFrame>[4] }): string => {
    const s = showing;
    switch (s.kind) {
      case "finding":
        return spinnerFrame(`finding the sandboxes${selector ? ` (${selector})` : ""}`, now() - started, width, paint);
      case "wave": {
        if (waves.length <= 1) return barFrame("rolling out", { done: progress.done, total: progress.total, status: progress.failures > 0 ? `${progress.failures} failed` : "" }, now() - started, width, paint);
        const t = tallies[s.index]!;
        const label = `wave ${s.index + 1}/${waves.length} ${waveName(s.index, waves)}`;
        return barFrame(label, { done: t.done, total: t.size, status: t.failed > 0 ? `${t.failed} failed` : "" }, now() - s.startedAt, width, paint);
      }
      case "paused": {
        const left = Math.max(0, s.until - now());
        return fit(`paused after wave ${s.index + 1}/${waves.length}: next wave in ${formatElapsed(left)} (Ctrl-C stops; resume later)`, width);
      }
      case "rollback":
        return barFrame("rolling back", { done: s.done, total: s.total, status: s.failed > 0 ? `${s.failed} failed` : "" }, now() - s.startedAt, width, paint);
    }
  };
  const line = startLiveLine(stream, render as never, options);
  // Notes wrap at spaces rather than lose their end: a selector or a gate's reason matters.
  const note = (text: string) => line.above(() => out.note(live ? wrap(text, usableColumns(stream)) : text));

  return {
    note,
    event(e) {
      switch (e.type) {
        case "started": {
          waves = state().waves;
          tallies = waves.map((w) => ({ size: w.sandboxes.length, done: 0, applied: 0, failed: 0 }));
          waves.forEach((w, i) => w.sandboxes.forEach((s) => waveOf.set(s, i)));
          progress = { done: 0, total: e.sandboxes.length, failures: 0 };
          const sent = e.alreadyCommitted ? `, ${e.alreadyCommitted} sent before` : "";
          // The waves are on the lines that follow: with a UUID this line is near 80 columns already.
          // An undo says what it does on its own line (rollback-started).
          if (!options.undo) note(`rollout ${e.id}: ${countOf(e.sandboxes.length, "sandbox", "sandboxes")}${selector ? ` (${selector})` : ""}${sent}`);
          showing = { kind: "wave", index: 0, startedAt: now() };
          break;
        }
        case "wave-started":
          showing = { kind: "wave", index: e.wave, startedAt: now() };
          if (!live && e.waves > 1) note(`wave ${e.wave + 1}/${e.waves}  ${waveName(e.wave, waves)}: sending to ${countOf(e.sandboxes.length, "sandbox", "sandboxes")}`);
          break;
        case "result": {
          progress = { ...e.progress };
          const i = waveOf.get(e.result.sandbox);
          const t = i === undefined ? undefined : tallies[i];
          if (t && e.result.status !== "skipped") {
            t.done++;
            if (e.result.status === "completed" && (e.result.completion.state === "applied" || e.result.completion.state === "inactive")) t.applied++;
            else if (e.result.status === "error" || (e.result.status === "completed" && (e.result.completion.state === "failed" || e.result.completion.state === "cancelled"))) t.failed++;
          }
          break;
        }
        case "gate":
          if (waves.length > 1) {
            const reason = e.verdict === "failed" ? ` (${e.reason.replace(/^wave \d+( \(canary\))?: /, "")})` : "";
            note(`${waveLine(e.wave, waves.length, waveName(e.wave, waves), tallies[e.wave]!, e.verdict)}${reason}`);
          }
          break;
        case "halted":
          if (waves.length <= 1) note(`warning: ${countOf(e.failures, "sandbox", "sandboxes")} failed (--max-failures ${e.maxFailures}): no further sandbox is sent; waiting for those already sent`);
          break;
        case "paused":
          if (e.until === undefined) {
            note(`paused after wave ${e.wave + 1}/${waves.length}: waiting for approval`);
          } else {
            note(`paused after wave ${e.wave + 1}/${waves.length} until ${e.until.toISOString()}`);
            showing = { kind: "paused", index: e.wave, until: e.until.getTime() };
          }
          break;
        case "rollback-started":
          note(`rolling back ${countOf(e.sandboxes.length, "sandbox", "sandboxes")}: ${e.reason}`);
          showing = { kind: "rollback", total: e.sandboxes.length, done: 0, failed: 0, startedAt: now() };
          break;
        case "rollback-result":
          if (showing.kind === "rollback") {
            const rb = e.rollback;
            showing.done++;
            if (rb.status === "error" || (rb.status === "completed" && rb.completion.state !== "applied" && rb.completion.state !== "inactive")) showing.failed++;
          }
          break;
        default:
          break;
      }
      line.refresh();
    },
    stop: () => line.stop(),
  };
}
