// A one-line spinner with the elapsed time, on stderr while a command waits. Only on a terminal:
// when stderr is a pipe or a file (CI logs, scripts) nothing is written at all.

const FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/** The part of a stream the spinner uses. */
export interface SpinnerStream {
  readonly isTTY?: boolean;
  write(chunk: string): boolean;
}

export interface Spinner {
  /** Replaces the text shown after the spinner. */
  update(text: string): void;
  /** Erases the line; later calls do nothing. */
  stop(): void;
}

/** Formats elapsed milliseconds as `0.4s`, `12.0s`, `2m05s`. */
export function formatElapsed(ms: number): string {
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
}

/** Starts a spinner on `stream` when it is a terminal; otherwise returns one that does nothing. */
export function startSpinner(
  stream: SpinnerStream,
  text: string,
  options: { readonly intervalMs?: number; readonly now?: () => number } = {},
): Spinner {
  if (!stream.isTTY) return { update() {}, stop() {} };
  const now = options.now ?? Date.now;
  const started = now();
  let frame = 0;
  let current = text;
  let stopped = false;
  const draw = () => {
    stream.write(`\r\x1b[2K${FRAMES[frame++ % FRAMES.length]} ${current} ${formatElapsed(now() - started)}`);
  };
  draw();
  const timer = setInterval(draw, options.intervalMs ?? 80);
  // Never keeps the process alive on its own.
  timer.unref?.();
  return {
    update(next) {
      current = next;
      if (!stopped) draw();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      stream.write("\r\x1b[2K");
    },
  };
}
