// Policy file parse time against file size (issue 30, item 2): the command line's parsePolicy
// (cli/policy-file.ts: the yaml library with its quadratic duplicate-key check off and a linear
// check of ours; JSON files through JSON.parse and a scan of the text, no YAML parse) beside the
// floor, the same steps without any duplicate check (YAML: parse, toJS, fromJson; JSON: JSON.parse,
// fromJson), and beside the command line before issue 30 (the yaml library with `uniqueKeys` on,
// and a YAML parse of JSON files too), timed once and only up to 4 MiB (YAML) or 2 MiB (JSON): it
// grows with the square of the keys (38.6 s on the issue's 5.7 MB file). Files go up to just under
// the 12 MiB cap (MAX_POLICY_FILE_BYTES); the encoded column says which the gateway would accept
// (at most 3 MiB encoded). Writes bench/results/policy-parse.{md,json}.
//
//   npm run bench:policy-parse            # or: node --import tsx bench/policy-parse.ts

import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { fromJson, toBinary, type JsonValue } from "@bufbuild/protobuf";
import { LineCounter, parseDocument } from "yaml";
import { SandboxPolicySchema } from "openshell-config/raw";
import { MAX_POLICY_BYTES, MAX_POLICY_FILE_BYTES, parsePolicy } from "../cli/policy-file.js";
import { rulesWithin } from "../test/support/policy-text.js";

const MiB = 1024 * 1024;
const SIZES_MIB = [0.25, 1, 2, 4, 8, MAX_POLICY_FILE_BYTES / MiB];
/** Sizes up to this are timed three times (the median is reported), larger ones once. */
const MEDIAN_UP_TO = 2 * MiB;
const OLD_UP_TO = { yaml: 4 * MiB, json: 2 * MiB };

type Format = "yaml" | "json";

// About 95 bytes a rule in YAML, as the issue's file (60,000 rules in 5.7 MB); JSON as jq prints it.
const RULES: Record<Format, { head: string; rule: (i: number) => string; separator: string; tail: string }> = {
  yaml: {
    head: "version: 1\nnetworkPolicies:\n",
    rule: (i) => `  r${i}:\n    name: r${i}\n    endpoints:\n      - host: h${i}.example.com\n        ports: [443]\n`,
    separator: "",
    tail: "",
  },
  json: {
    head: '{\n  "version": 1,\n  "networkPolicies": {\n',
    rule: (i) =>
      `    "r${i}": {\n      "name": "r${i}",\n      "endpoints": [\n        {\n          "host": "h${i}.example.com",\n          "ports": [\n            443\n          ]\n        }\n      ]\n    }`,
    separator: ",\n",
    tail: "\n  }\n}\n",
  },
};

/** As many rules as fit in `bytes`. */
function policyText(format: Format, bytes: number): { text: string; rules: number } {
  const { head, rule, separator, tail } = RULES[format];
  return rulesWithin(bytes, head, rule, separator, tail);
}

/** What the command line did before issue 30 (parsePolicy with the library's own check). */
function oldParse(format: Format, text: string): void {
  const doc = parseDocument(text, { lineCounter: new LineCounter(), prettyErrors: false });
  if (doc.errors.length > 0 && format === "yaml") throw new Error(doc.errors[0]!.message);
  const value = format === "json" ? JSON.parse(text) : doc.toJS({ maxAliasCount: 100 });
  fromJson(SandboxPolicySchema, value as JsonValue);
}

/** The same steps with no duplicate check at all. */
function floorParse(format: Format, text: string): void {
  const value = format === "json" ? JSON.parse(text) : parseDocument(text, { uniqueKeys: false }).toJS({ maxAliasCount: 100 });
  fromJson(SandboxPolicySchema, value as JsonValue);
}

function time(f: () => void): number {
  const t0 = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

const timed = (bytes: number, f: () => void) => (bytes <= MEDIAN_UP_TO ? [time(f), time(f), time(f)].sort((a, b) => a - b)[1]! : time(f));

interface Row {
  readonly format: Format;
  readonly bytes: number;
  readonly rules: number;
  readonly encodedBytes: number;
  readonly oursMs: number;
  readonly floorMs: number;
  readonly oldMs: number | null;
}

const loadAtStart = loadavg()[0]!;
const started = Date.now();
// Warm up the code paths (JIT) on a small file of each format.
for (const format of ["yaml", "json"] as const) {
  const { text } = policyText(format, 64 * 1024);
  parsePolicy(text, `warm-up.${format}`);
  floorParse(format, text);
  oldParse(format, text);
}

const rows: Row[] = [];
for (const format of ["yaml", "json"] as const) {
  for (const mib of SIZES_MIB) {
    // Just under each size: the last one is the largest file the command line reads.
    const { text, rules } = policyText(format, Math.floor(mib * MiB) - 64);
    const bytes = Buffer.byteLength(text);
    const encodedBytes = toBinary(SandboxPolicySchema, parsePolicy(text, `bench.${format}`)).length;
    const oursMs = timed(bytes, () => void parsePolicy(text, `bench.${format}`));
    const floorMs = timed(bytes, () => floorParse(format, text));
    const oldMs = bytes <= OLD_UP_TO[format] ? time(() => oldParse(format, text)) : null;
    const row = { format, bytes, rules, encodedBytes, oursMs, floorMs, oldMs };
    rows.push(row);
    process.stdout.write(`${format} ${(bytes / MiB).toFixed(2)} MiB, ${rules} rules: ours ${s(oursMs)}, floor ${s(floorMs)}, before ${oldMs === null ? "not timed" : s(oldMs)}\n`);
  }
}

function s(ms: number): string {
  return ms < 10_000 ? `${(ms / 1000).toFixed(2)} s` : `${(ms / 1000).toFixed(1)} s`;
}

function git(...args: string[]): string {
  try {
    return execFileSync("git", args, { encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}

const recordedAt = new Date().toISOString();
const machine = `${cpus().length} cores (${cpus()[0]?.model.trim() ?? "unknown CPU"}) · ${Math.round(totalmem() / 2 ** 30)} GB · Node ${process.version} · commit ${git("rev-parse", "--short", "HEAD")}`;
const loads = `1-min load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end; ${Math.round((Date.now() - started) / 1000)} s in all`;
const table = (format: Format) => [
  `| file | rules | encoded | now | floor | now ÷ floor | before (issue 30) | before ÷ now |`,
  "| --- | --- | --- | --- | --- | --- | --- | --- |",
  ...rows
    .filter((r) => r.format === format)
    .map(
      (r) =>
        `| ${(r.bytes / MiB).toFixed(2)} MiB | ${r.rules} | ${(r.encodedBytes / MiB).toFixed(2)} MiB${r.encodedBytes > MAX_POLICY_BYTES ? " (over the gateway's cap)" : ""} | **${s(r.oursMs)}** | ${s(r.floorMs)} | ${(r.oursMs / r.floorMs).toFixed(2)} | ${r.oldMs === null ? "not timed" : s(r.oldMs)} | ${r.oldMs === null ? "" : `${(r.oldMs / r.oursMs).toFixed(1)}×`} |`,
    ),
];
const md = [
  "# Policy file parse time",
  "",
  `${recordedAt} · ${machine} · ${loads}`,
  "",
  "`npm run bench:policy-parse`: the command line's `parsePolicy` (cli/policy-file.ts) on generated policy files up to just under the largest it reads (12 MiB), network rules of one endpoint each. " +
    "**now**: `parsePolicy` (YAML with the yaml library's `uniqueKeys` off and our linear duplicate-key check; JSON with JSON.parse and a scan of the text), median of 3 up to 2 MiB, else one run. " +
    "**floor**: the same steps with no duplicate check. **before**: what `parsePolicy` did before issue 30 (the library's quadratic `uniqueKeys` check, and a YAML parse of JSON files too), one run, YAML up to 4 MiB and JSON up to 2 MiB. " +
    "**encoded**: the policy's binary size; the gateway accepts at most 3 MiB. Other work on the machine skews the figures.",
  "",
  "## YAML (about 95 bytes a rule, as the issue's 5.7 MB file of 60,000 rules)",
  "",
  ...table("yaml"),
  "",
  "## JSON, indented as jq prints it",
  "",
  ...table("json"),
  "",
].join("\n");
writeFileSync(new URL("./results/policy-parse.md", import.meta.url), md);
writeFileSync(
  new URL("./results/policy-parse.json", import.meta.url),
  `${JSON.stringify({ recordedAt, machine, loadAverage: { start: loadAtStart, end: loadavg()[0] }, maxPolicyFileBytes: MAX_POLICY_FILE_BYTES, maxPolicyBytes: MAX_POLICY_BYTES, rows }, null, 2)}\n`,
);
process.stdout.write(`\n${md}`);
