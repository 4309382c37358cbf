// The spinner of a wait on stderr: `⠋ waiting for sandbox web to apply policy v3: pending 1.2s`,
// one live line (see live-line.ts: fits the terminal, redrawn in place, nothing on a pipe). When
// the terminal is narrow the text is cut, never the frame or the elapsed time.

import { fit, visibleWidth, type TerminalStream } from "./terminal.js";
import { FRAME_MS, startLiveLine, type LiveLine, type LiveLineOptions } from "./live-line.js";

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** The part of a stream the spinner uses (process.stderr). */
export type SpinnerStream = TerminalStream;

export interface Spinner {
  /** Replaces the text shown after the spinner. */
  update(text: string): void;
  /** Erases the line, runs `print`, and draws the line again below what it printed. */
  above(print: () => void): void;
  /** Erases the line; later calls do nothing. */
  stop(): void;
}

/** Formats elapsed milliseconds as `0.4s`, `12.0s`, `2m05s`. */
export function formatElapsed(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

/** One frame of a spinner: the frame character, `text` cut to what is left, the elapsed time. */
export function spinnerFrame(text: string, elapsedMs: number, width: number, paint = { accent: (s: string) => s, dim: (s: string) => s }): string {
  const frame = FRAMES[Math.floor(elapsedMs / FRAME_MS) % FRAMES.length]!;
  const elapsed = formatElapsed(elapsedMs);
  const room = width - visibleWidth(frame) - elapsed.length - 2;
  if (room < 1) return `${paint.accent(frame)} ${paint.dim(elapsed)}`;
  return `${paint.accent(frame)} ${fit(text, room)} ${paint.dim(elapsed)}`;
}

/** Starts a spinner on `stream` when it is a terminal; otherwise returns one that does nothing. */
export function startSpinner(stream: SpinnerStream, text: string, options: LiveLineOptions = {}): Spinner {
  const now = options.now ?? Date.now;
  const started = now();
  let current = text;
  const line: LiveLine = startLiveLine(stream, ({ width, paint }) => spinnerFrame(current, now() - started, width, paint), { ...options, now });
  return {
    update(next) {
      current = next;
      line.refresh();
    },
    above: (print) => line.above(print),
    stop: () => line.stop(),
  };
}
