// The progress line of `policy rollout` on stderr: how many sandboxes have a result, how many
// failed, and the elapsed time, as one live line (see live-line.ts: fits the terminal, redrawn in
// place, nothing on a pipe). Until the sandboxes are known it shows a spinner, never a bar: a bar
// for 0 of 0 would look finished.

import { fit, visibleWidth, type Palette } from "./terminal.js";
import { startLiveLine, type LiveLineOptions } from "./live-line.js";
import { formatElapsed, spinnerFrame, type SpinnerStream } from "./spinner.js";

export interface ProgressBar {
  /** Redraws with `done` of `total` and a short status text (e.g. `1 failed`). */
  update(done: number, total: number, status: string): void;
  /** Erases the line, runs `print`, and draws the line again below what it printed. */
  above(print: () => void): void;
  /** Erases the line; later calls do nothing. */
  stop(): void;
}

/** The bar itself: `[#####-----]` with `width` cells; empty while nothing is known (total 0). */
export function renderBar(done: number, total: number, width = 24): string {
  const filled = total <= 0 ? 0 : Math.max(0, Math.min(width, Math.floor((done / total) * width)));
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
}

// The bar takes what the text leaves of the line, within these bounds; with less room than the
// least, there is no bar (the counts say it all).
const MIN_CELLS = 4;
const MAX_CELLS = 30;

/** One frame: `label [####------] 12/48 1 failed 1.0s`, its bar as wide as the line allows. */
export function barFrame(label: string, progress: { done: number; total: number; status: string }, elapsedMs: number, width: number, paint?: Palette): string {
  const { done, total, status } = progress;
  const counts = `${done}/${total}`;
  const elapsed = formatElapsed(elapsedMs);
  const fixed = [label, counts, status, elapsed].filter((p) => p !== "");
  // The spaces between the parts, and the bar's own space and two brackets.
  const room = width - fixed.reduce((n, p) => n + visibleWidth(p), 0) - (fixed.length - 1) - 3;
  const cells = Math.min(MAX_CELLS, room);
  let drawn = "";
  if (cells >= MIN_CELLS) {
    const bar = renderBar(done, total, cells);
    const filled = bar.indexOf("-") === -1 ? cells : bar.indexOf("-") - 1;
    drawn = paint ? `[${paint.good(bar.slice(1, 1 + filled))}${paint.dim(bar.slice(1 + filled, -1))}]` : bar;
  }
  const shown = [label, drawn, counts, status && paint ? paint.bad(status) : status, paint ? paint.dim(elapsed) : elapsed].filter((p) => p !== "");
  return fit(shown.join(" "), width);
}

/** Starts a progress line on `stream` when it is a terminal; otherwise returns one that does nothing. */
export function startProgressBar(stream: SpinnerStream, label: string, options: LiveLineOptions & { readonly starting?: string } = {}): ProgressBar {
  const now = options.now ?? Date.now;
  const started = now();
  let progress: { done: number; total: number; status: string } | undefined;
  const starting = options.starting ?? `${label}: finding the sandboxes`;
  const line = startLiveLine(
    stream,
    ({ width, paint }) => (progress === undefined ? spinnerFrame(starting, now() - started, width, paint) : barFrame(label, progress, now() - started, width, paint)),
    { ...options, now },
  );
  return {
    update(done, total, status) {
      progress = { done, total, status };
      line.refresh();
    },
    above: (print) => line.above(print),
    stop: () => line.stop(),
  };
}
