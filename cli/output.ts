// Output: human-readable tables (the default) or one JSON document (`--output json`) on stdout;
// warnings and errors as lines on stderr. Everything printed passes through here, so that the
// bearer token can never be printed (it is redacted wherever it would appear) and text that came
// from the gateway cannot move the cursor or recolour the terminal (control characters are
// escaped).

import type { OutputFormat } from "./args.js";

/** The part of a stream the output uses. */
export interface OutputStream {
  readonly isTTY?: boolean;
  write(chunk: string): boolean;
}

export interface Output {
  readonly format: OutputFormat;
  readonly stdout: OutputStream;
  readonly stderr: OutputStream;
  /** Secrets to redact from anything printed. */
  redact(secret: string | undefined): void;
  /** One or more lines of human output on stdout (ignored with `--output json`). */
  line(text?: string): void;
  /** A document on stdout with `--output json`. */
  json(value: unknown): void;
  /** A table with a header row (human output). */
  table(headers: readonly string[], rows: readonly (readonly string[])[]): void;
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

export function createOutput(format: OutputFormat, stdout: OutputStream, stderr: OutputStream): Output {
  const secrets = new Set<string>();
  const clean = (text: string): string => {
    let out = text;
    for (const s of secrets) out = out.split(s).join("[redacted]");
    return out;
  };
  const human = format === "table";
  const o: Output = {
    format,
    stdout,
    stderr,
    redact(secret) {
      // Very short tokens would redact ordinary words; a token that short is no secret anyway.
      if (secret !== undefined && secret.length >= 6) secrets.add(secret);
    },
    line(text = "") {
      if (human) stdout.write(`${clean(sanitize(text))}\n`);
    },
    json(value) {
      if (!human) stdout.write(`${clean(toJsonText(value))}\n`);
    },
    table(headers, rows) {
      if (!human) return;
      const all = [headers, ...rows].map((r) => r.map((c) => sanitize(c).replace(/\s*\n\s*/g, " ")));
      const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? "").length)));
      for (const r of all) o.line(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ").trimEnd());
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
