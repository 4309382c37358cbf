// What the command line needs to know about the terminal it draws on: whether a stream is a
// terminal that can take a redrawn line, its width, whether colour is wanted (NO_COLOR, not a
// terminal), and how to cut a line, escape sequences included, to a width with "…".

import { columnsOf, textWidth } from "./text-width.js";

/** The part of a stream (process.stderr) that live lines use. */
export interface TerminalStream {
  readonly isTTY?: boolean;
  /** The terminal's width in columns (tty.WriteStream); undefined for pipes and files. */
  readonly columns?: number;
  write(chunk: string): boolean;
}

/** Erases the current line and leaves the cursor at its start. */
export const ERASE_LINE = "\r\x1b[K";

/** Width assumed for a terminal that does not say (some CI pseudo-terminals report 0). */
const FALLBACK_COLUMNS = 80;

/**
 * True when `stream` is a terminal a line can be redrawn on: a TTY whose TERM is not `dumb`
 * (a dumb terminal ignores cursor control, so every frame would be a new line).
 */
export function canRedraw(stream: TerminalStream, env: NodeJS.ProcessEnv = process.env): boolean {
  return stream.isTTY === true && env.TERM !== "dumb";
}

/** Colour only on a terminal, and never when NO_COLOR is set to anything but "" (no-color.org). */
export function colorEnabled(stream: TerminalStream, env: NodeJS.ProcessEnv = process.env): boolean {
  return canRedraw(stream, env) && (env.NO_COLOR === undefined || env.NO_COLOR === "");
}

/** The columns a live line may use: one less than the terminal's, so the cursor never wraps. */
export function usableColumns(stream: TerminalStream): number {
  const columns = stream.columns !== undefined && stream.columns > 0 ? stream.columns : FALLBACK_COLUMNS;
  return Math.max(1, columns - 1);
}

export interface Palette {
  readonly accent: (text: string) => string;
  readonly dim: (text: string) => string;
  readonly good: (text: string) => string;
  readonly bad: (text: string) => string;
}

const plain = (text: string) => text;
const sgr = (code: string) => (text: string) => (text === "" ? "" : `\x1b[${code}m${text}\x1b[0m`);

/** ANSI colours when `enabled`, else functions that return the text unchanged. */
export function palette(enabled: boolean): Palette {
  return enabled ? { accent: sgr("36"), dim: sgr("2"), good: sgr("32"), bad: sgr("31") } : { accent: plain, dim: plain, good: plain, bad: plain };
}

// Colour sequences pass through; every other control character is removed (a live line shows
// names and states from the gateway, which must not move the cursor). Widths are terminal
// columns (text-width.ts): a CJK character or an emoji two, a combining mark none.
const COLOUR = /^\x1b\[[0-9;]*m$/;
const COLOURS = /(\x1b\[[0-9;]*m)/;

/** Removes control characters except colour sequences. */
export function stripControls(text: string): string {
  return text.replace(/\x1b\[[0-9;]*m|[\u0000-\u001f\u007f-\u009f]/g, (m) => (m.length > 1 ? m : ""));
}

/** The number of columns `text` takes: colour sequences and controls not counted. */
export function visibleWidth(text: string): number {
  return textWidth(stripControls(text).split(COLOURS).filter((part) => !COLOUR.test(part)).join(""));
}

/**
 * `text` broken at spaces into lines of at most `width` columns, each line after the first
 * indented by two spaces, so that a note above a live line keeps all it says (a selector, a
 * reason) without the terminal breaking a word in two. A line that fits is left as it is; in one
 * that does not, runs of spaces become one. A word longer than a line stays whole. The text's own
 * line breaks are kept; other control characters are removed.
 */
export function wrap(text: string, width: number): string {
  return text
    .split("\n")
    .map((part) => {
      const clean = stripControls(part);
      if (visibleWidth(clean) <= width) return clean;
      const lines: string[] = [];
      let line = "";
      for (const word of clean.split(/ +/).filter((w) => w !== "")) {
        if (line === "") line = word;
        else if (visibleWidth(`${line} ${word}`) > width) {
          lines.push(line);
          line = `  ${word}`;
        } else line = `${line} ${word}`;
      }
      lines.push(line);
      return lines.join("\n");
    })
    .join("\n");
}

/**
 * `text` cut to at most `width` columns, ending in "…" when it was cut. Colour sequences are kept
 * (a cut inside a coloured part is closed with a reset) and control characters removed.
 */
export function fit(text: string, width: number): string {
  const clean = stripControls(text);
  if (visibleWidth(clean) <= width) return clean;
  if (width <= 0) return "";
  let out = "";
  let n = 0;
  let coloured = false;
  cut: for (const part of clean.split(COLOURS)) {
    if (COLOUR.test(part)) {
      out += part;
      coloured = part !== "\x1b[0m";
      continue;
    }
    for (const { cluster, width: w } of columnsOf(part)) {
      if (n + w > width - 1) break cut;
      out += cluster;
      n += w;
    }
  }
  return `${out}…${coloured ? "\x1b[0m" : ""}`;
}
