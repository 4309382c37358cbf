// One line of stderr redrawn in place while a command waits (the spinner of a wait, the bar of a
// rollout). It always fits the terminal (cut with "…" to one column less than its width, so the
// terminal never wraps it), is redrawn with \r and erase-to-end-of-line at most once a frame
// (100 ms) and only when its text changed, and is erased when it stops, leaving nothing behind.
// Whatever else is written to the terminal meanwhile (a retry notice on stderr, a line on stdout)
// erases it first and it is drawn again below, so nothing is ever glued to it. On a pipe, a file
// or a dumb terminal nothing is written at all; colour only without NO_COLOR.

import { canRedraw, colorEnabled, ERASE_LINE, fit, palette, usableColumns, type Palette, type TerminalStream } from "./terminal.js";

/** What a live line's render function is given for one frame. */
export interface Frame {
  /** The columns the text may take (it is cut to this anyway). */
  readonly width: number;
  /** Colours, or none (NO_COLOR, not a terminal). */
  readonly paint: Palette;
}

export interface LiveLine {
  /** Draws the line now if its text changed (e.g. after a state change), else waits for the next frame. */
  refresh(): void;
  /** Erases the line, runs `print` (lines for stderr or stdout), then draws the line again below them. */
  above(print: () => void): void;
  /** Erases the line; later calls do nothing (`above` then just prints). */
  stop(): void;
}

export interface LiveLineOptions {
  /** Time between frames; default 100 ms (at most ten redraws a second). */
  readonly intervalMs?: number;
  /** The environment NO_COLOR and TERM are read from; default process.env. */
  readonly env?: NodeJS.ProcessEnv;
  /** The clock; default Date.now. */
  readonly now?: () => number;
  /**
   * Other streams on the same terminal whose writes erase the line first; default stdout when
   * `stream` is process.stderr and stdout is a terminal.
   */
  readonly companions?: readonly TerminalStream[];
}

/** The interval between frames, by default. */
export const FRAME_MS = 100;

/** A live line that does nothing, for streams that are not terminals. */
const NONE: LiveLine = { refresh() {}, above: (print) => print(), stop() {} };

/** Starts a live line on `stream` whose text `render` returns for each frame. */
export function startLiveLine(stream: TerminalStream, render: (frame: Frame) => string, options: LiveLineOptions = {}): LiveLine {
  const env = options.env ?? process.env;
  if (!canRedraw(stream, env)) return NONE;
  const paint = palette(colorEnabled(stream, env));
  const intervalMs = options.intervalMs ?? FRAME_MS;
  const now = options.now ?? Date.now;
  // What the terminal shows: "" when the line is erased.
  let shown = "";
  let drawnAt = -Infinity;
  let stopped = false;
  const write = stream.write.bind(stream);

  const draw = (force: boolean) => {
    const width = usableColumns(stream);
    const text = fit(render({ width, paint }), width);
    if (!force && text === shown) return;
    drawnAt = now();
    shown = text;
    // The cursor goes back to the start of the line: what the terminal echoes there (^C, keys
    // typed ahead) overwrites the line instead of wrapping below it, and is erased with it.
    write(text === "" ? ERASE_LINE : `\r${text}\x1b[K\r`);
  };
  const erase = () => {
    if (shown !== "") write(ERASE_LINE);
    shown = "";
  };
  const companions = options.companions ?? (stream === process.stderr && process.stdout.isTTY ? [process.stdout] : []);
  const restore = [stream, ...companions].map((s) => beforeEachWrite(s, erase));

  draw(true);
  const timer = setInterval(() => draw(false), intervalMs);
  // Never keeps the process alive on its own.
  timer.unref?.();

  return {
    refresh() {
      if (!stopped && now() - drawnAt >= intervalMs) draw(false);
    },
    above(print) {
      if (stopped) return print();
      erase();
      print();
      draw(true);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      erase();
      for (const r of restore) r();
    },
  };
}

/** Makes `stream.write` call `before` first; returns what undoes it. */
function beforeEachWrite(stream: TerminalStream, before: () => void): () => void {
  const original = stream.write;
  const wrapper = function (this: unknown, ...args: unknown[]) {
    before();
    return (original as (...a: unknown[]) => boolean).apply(stream, args);
  };
  stream.write = wrapper as TerminalStream["write"];
  return () => {
    // Unless something wrapped it again meanwhile, which then owns it.
    if (stream.write === wrapper) stream.write = original;
  };
}
