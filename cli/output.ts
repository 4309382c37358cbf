// Output: human-readable tables (the default; `-o wide` adds columns and full ids) or one document
// on stdout (`-o json` or `-o yaml`, the same data: 64-bit integers as decimal strings, bytes as
// base64, times in ISO 8601); warnings and errors as lines on stderr. On a terminal, a table's last
// column (free text: an error, labels) is cut to the width, so that no row wraps and splits a state
// word; the rest of every row is kept short by the commands (AGE, short ids). Everything printed passes through here, so that the bearer token
// can never be printed (it is redacted wherever it would appear) and text that came from the
// gateway cannot move the cursor or recolour the terminal (control characters are escaped).

import { stringify } from "yaml";
import type { OutputFormat } from "./types.js";
import { cutToWidth, textWidth } from "./text-width.js";

/** The part of a stream the output uses. */
export interface OutputStream {
  readonly isTTY?: boolean;
  write(chunk: string): boolean;
}

export interface Output {
  readonly format: OutputFormat;
  /** `-o wide`: tables with every column, full ids and times. */
  readonly wide: boolean;
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  /** Secrets to redact from anything printed. */
  redact(secret: string | undefined): void;
  /** One or more lines of human output on stdout (ignored with `-o json` and `-o yaml`). */
  line(text?: string): void;
  /** The document on stdout with `-o json` (JSON) or `-o yaml` (YAML); ignored for tables. */
  json(value: unknown): void;
  /** A table with a header row (human output; `--no-headers` leaves it out). */
  table(headers: readonly string[], rows: readonly (readonly string[])[], options?: { readonly cut?: number }): void;
  /** How `table` lays tables out here, for a command that formats one itself (`formatTable`). */
  tableLayout(): TableLayout;
  /**
   * True when stdout is a terminal that `frame` redraws in place (not a pipe, a file, TERM=dumb),
   * and the output is for people.
   */
  readonly live: boolean;
  /**
   * Human output that replaces the previous frame on a live terminal (`--watch`); else printed as
   * lines. A line wider than the terminal is cut, except a command to copy (one that holds
   * `openshell-config `), which is kept whole and may take several rows.
   */
  frame(lines: readonly string[]): void;
  /** Key-value rows (human output); rows with an undefined value are skipped. */
  fields(rows: readonly (readonly [string, string | undefined])[]): void;
  /** `warning: …` on stderr, in every format. */
  warn(message: string): void;
  /** `error: …` on stderr, in every format. */
  error(message: string): void;
  /** A plain line on stderr, in every format. */
  note(message: string): void;
}

/** Escapes control characters (terminal escape sequences among them) in untrusted text. */
export function sanitize(text: string): string {
  // Keep tabs and newlines; escape every other C0/C1 control character and DEL.
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** JSON.stringify with bigint as a decimal string, bytes as base64 and Dates as ISO strings. */
export function toJsonText(value: unknown): string {
  return JSON.stringify(
    value,
    (_key, v: unknown) => {
      if (typeof v === "bigint") return v.toString();
      if (v instanceof Uint8Array) return Buffer.from(v).toString("base64");
      return v;
    },
    2,
  );
}

/** Every string of a JSON value (keys too) passed through `f`. */
function redactDeep(value: unknown, f: (s: string) => string): unknown {
  if (typeof value === "string") return f(value);
  if (Array.isArray(value)) return value.map((v) => redactDeep(v, f));
  if (value !== null && typeof value === "object") return Object.fromEntries(Object.entries(value).map(([k, v]) => [f(k), redactDeep(v, f)]));
  return value;
}

/** The same document as YAML (via its JSON form, so that both print the same values). */
export function toYamlText(value: unknown): string {
  return stringify(JSON.parse(toJsonText(value) ?? "null"), { lineWidth: 0, aliasDuplicateObjects: false }).trimEnd();
}

/** How a table is laid out: without its header row; its last column cut so that rows fit `maxWidth`. */
export interface TableLayout {
  readonly headers?: boolean;
  readonly maxWidth?: number;
  /**
   * The column cut first when rows are wider than `maxWidth` (down to its header's width), e.g. a
   * free-text column, so that a name in a later column stays whole.
   */
  readonly cut?: number;
}

/** A table as lines: columns padded to their widest cell, two spaces apart. */
export function formatTable(headers: readonly string[], rows: readonly (readonly string[])[], layout: TableLayout = {}): string[] {
  const all = [headers, ...rows].map((r) => r.map((c) => sanitize(c).replace(/\s*\n\s*/g, " ")));
  // Each cell's width in terminal columns, measured once (text-width.ts).
  const cellWidths = all.map((r) => r.map(textWidth));
  const widths = headers.map((_, i) => Math.max(...cellWidths.map((r) => r[i] ?? 0)));
  const max = layout.maxWidth;
  let last = headers.length - 1;
  const cut = layout.cut;
  const cutColumn = (i: number, width: number) => {
    widths[i] = width;
    all.forEach((r, j) => {
      if (r[i] !== undefined && cellWidths[j]![i]! > width) {
        r[i] = cutToWidth(r[i], width);
        cellWidths[j]![i] = textWidth(r[i]);
      }
    });
  };
  if (max !== undefined && cut !== undefined && cut < last) {
    const over = widths.reduce((a, w) => a + w, 0) + 2 * last - max;
    const width = Math.max(textWidth(headers[cut]!), widths[cut]! - Math.max(0, over));
    if (width < widths[cut]!) cutColumn(cut, width);
  }
  let start = widths.slice(0, last).reduce((a, w) => a + w + 2, 0);
  // A last column whose header does not fit is left out rather than cut to nothing, and so is the
  // one before it if it does not fit either; the column last then is cut to the width.
  while (max !== undefined && last > 0 && max - start < textWidth(headers[last]!)) {
    for (const r of all) r.length = last;
    widths.length = last;
    last--;
    start -= widths[last]! + 2;
  }
  if (max !== undefined && widths[last]! > max - start) cutColumn(last, max - start);
  const lines = all.map((r, j) =>
    r
      .map((c, i) => (i < r.length - 1 ? c + " ".repeat(Math.max(0, widths[i]! - cellWidths[j]![i]!)) : c))
      .join("  ")
      .trimEnd(),
  );
  return layout.headers === false ? lines.slice(1) : lines;
}

/** Rows `line` takes on a terminal `columns` wide. */
export function rowsOf(line: string, columns: number): number {
  return Math.max(1, Math.ceil(textWidth(line) / columns));
}

/** A command to copy: never cut in a frame. */
const COMMAND = /(^|\s)openshell-config\s/;

export function createOutput(
  format: OutputFormat,
  stdout: OutputStream,
  stderr: OutputStream,
  env: NodeJS.ProcessEnv = process.env,
  options: { readonly headers?: boolean } = {},
): Output {
  const secrets = new Set<string>();
  const clean = (text: string): string => {
    let out = text;
    for (const s of secrets) out = out.split(s).join("[redacted]");
    return out;
  };
  const human = format === "table" || format === "wide";
  const wide = format === "wide";
  const live = human && stdout.isTTY === true && env.TERM !== "dumb";
  const columns = () => (stdout as { columns?: number }).columns || 80;
  // Rows the last frame took on the terminal.
  let framed = 0;
  const o: Output = {
    format,
    wide,
    stdout,
    stderr,
    live,
    redact(secret) {
      // Very short tokens would redact ordinary words; a token that short is no secret anyway.
      if (secret !== undefined && secret.length >= 6) secrets.add(secret);
    },
    line(text = "") {
      if (human) stdout.write(`${clean(sanitize(text))}\n`);
    },
    json(value) {
      if (human) return;
      // Redacted in the data, before it is written: a replacement in YAML text could change what it means.
      const doc = redactDeep(JSON.parse(toJsonText(value) ?? "null"), clean);
      stdout.write(`${clean(format === "json" ? toJsonText(doc) : toYamlText(doc))}\n`);
    },
    tableLayout() {
      return { headers: options.headers !== false, ...(stdout.isTTY === true && !wide ? { maxWidth: columns() } : {}) };
    },
    table(headers, rows, options = {}) {
      if (!human) return;
      for (const l of formatTable(headers, rows, { ...o.tableLayout(), ...options })) o.line(l);
    },
    frame(lines) {
      if (!human) return;
      if (!live) {
        for (const l of lines) o.line(l);
        return;
      }
      const width = columns();
      // Each line cut to the width, so that it takes one row, except a command to copy, kept
      // whole: the next frame goes up as many rows as this one took.
      const text = lines.map((l) => {
        const c = clean(sanitize(l));
        return textWidth(c) < width || COMMAND.test(c) ? c : cutToWidth(c, width - 1);
      });
      stdout.write(`${framed > 0 ? `\x1b[${framed}A\r\x1b[J` : ""}${text.join("\n")}\n`);
      framed = text.reduce((n, l) => n + rowsOf(l, width), 0);
    },
    fields(rows) {
      if (!human) return;
      const present = rows.filter((r): r is readonly [string, string] => r[1] !== undefined);
      const width = Math.max(0, ...present.map(([k]) => k.length));
      for (const [k, v] of present) o.line(`${k.padEnd(width)}  ${v.replace(/\n/g, `\n${" ".repeat(width + 2)}`)}`);
    },
    warn(message) {
      stderr.write(`${clean(sanitize(`warning: ${message}`))}\n`);
    },
    error(message) {
      stderr.write(`${clean(sanitize(`error: ${message}`))}\n`);
    },
    note(message) {
      stderr.write(`${clean(sanitize(message))}\n`);
    },
  };
  return o;
}
