// A one-line progress bar for `policy rollout`, on stderr: how many sandboxes have a result, how
// many failed, and the elapsed time. Only on a terminal: when stderr is a pipe or a file (CI logs,
// scripts) nothing is written, as with the spinner.

import { formatElapsed, type SpinnerStream } from "./spinner.js";

export interface ProgressBar {
  /** Redraws with `done` of `total` and a short status text. */
  update(done: number, total: number, status: string): void;
  /** Erases the line; later calls do nothing. */
  stop(): void;
}

/** The bar itself: `[#####-----]` with `width` cells. */
export function renderBar(done: number, total: number, width = 24): string {
  const filled = total === 0 ? width : Math.min(width, Math.floor((done / total) * width));
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}]`;
}

/** Starts a bar on `stream` when it is a terminal; otherwise returns one that does nothing. */
export function startProgressBar(
  stream: SpinnerStream,
  label: string,
  options: { readonly intervalMs?: number; readonly now?: () => number } = {},
): ProgressBar {
  if (!stream.isTTY) return { update() {}, stop() {} };
  const now = options.now ?? Date.now;
  const started = now();
  let line = { done: 0, total: 0, status: "" };
  let stopped = false;
  let drawnAt = -Infinity;
  const draw = () => {
    drawnAt = now();
    const { done, total, status } = line;
    stream.write(`\r\x1b[2K${label} ${renderBar(done, total)} ${done}/${total}${status ? ` ${status}` : ""} ${formatElapsed(now() - started)}`);
  };
  draw();
  // Redraws the elapsed time while nothing else happens; never keeps the process alive.
  const timer = setInterval(draw, options.intervalMs ?? 250);
  timer.unref?.();
  return {
    update(done, total, status) {
      line = { done, total, status };
      // A thousand results a second need not be a thousand redraws.
      if (!stopped && (done === total || now() - drawnAt >= 50)) draw();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      stream.write("\r\x1b[2K");
    },
  };
}
