// Policy file parse time against file size (issue 30, item 2): the command line's parsePolicy
// (the yaml library with its quadratic duplicate-key check off, and a linear check of ours) beside
// the library's own check (uniqueKeys on, what the command line did before), on the same text, in
// one run. The floor is parsing alone (no duplicate check at all): the ratio ours ÷ floor is what
// the duplicate check costs. The old path is timed once per size (it took 38.6 s on 5.7 MB).
//
//   npm run bench:policy-parse           # writes bench/results/policy-parse.{json,md}

import { writeFileSync } from "node:fs";
import { parseDocument } from "yaml";
import { parsePolicy } from "../cli/policy-file.js";

const MiB = 1024 * 1024;
const SIZES = [0.25, 0.5, 1, 2, 4].map((m) => Math.floor(m * MiB) - 1024);
/** The library's own duplicate check is timed only up to this size. */
const OLD_UP_TO = 4 * MiB;

function policyText(bytes: number): { text: string; rules: number } {
  const lines = ["version: 1", "networkPolicies:"];
  let size = 0;
  let rules = 0;
  while (size < bytes) {
    const rule = [`  r${rules}:`, `    name: r${rules}`, "    endpoints:", `      - host: h${rules}.example.com`, "        ports: [443]"].join("\n");
    if (size + rule.length + 1 > bytes) break;
    lines.push(rule);
    size += rule.length + 1;
    rules++;
  }
  return { text: `${lines.join("\n")}\n`, rules };
}

function time(f: () => void): number {
  const t0 = process.hrtime.bigint();
  f();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** The median of three runs, after one warm-up. */
function median3(f: () => void): number {
  f();
  const ts = [time(f), time(f), time(f)].sort((a, b) => a - b);
  return ts[1]!;
}

const rows: { bytes: number; rules: number; floorMs: number; oursMs: number; oldMs: number | null }[] = [];
for (const bytes of SIZES) {
  const { text, rules } = policyText(bytes);
  const floorMs = median3(() => void parseDocument(text, { uniqueKeys: false }).toJS());
  const oursMs = median3(() => void parsePolicy(text, "bench.yaml"));
  const oldMs = text.length <= OLD_UP_TO ? time(() => void parseDocument(text, { uniqueKeys: true }).toJS()) : null;
  rows.push({ bytes: text.length, rules, floorMs, oursMs, oldMs });
  process.stdout.write(`${(text.length / MiB).toFixed(2)} MiB, ${rules} rules: ours ${oursMs.toFixed(0)} ms, floor ${floorMs.toFixed(0)} ms, library's check ${oldMs === null ? "-" : `${oldMs.toFixed(0)} ms`}\n`);
}

const md = [
  "# Policy file parse time",
  "",
  `Recorded ${new Date().toISOString()} on ${process.platform} ${process.arch}, node ${process.version} (\`npm run bench:policy-parse\`).`,
  "ours: `parsePolicy` (parse, linear duplicate-key check, protobuf conversion); floor: the yaml library's parse alone;",
  "library's check: the yaml library with `uniqueKeys` on (the command line before issue 30), timed once per size.",
  "",
  "| file | rules | ours ÷ floor | ours | floor | library's check |",
  "| --- | --- | --- | --- | --- | --- |",
  ...rows.map(
    (r) =>
      `| ${(r.bytes / MiB).toFixed(2)} MiB | ${r.rules} | ${(r.oursMs / r.floorMs).toFixed(2)} | ${(r.oursMs / 1000).toFixed(2)} s | ${(r.floorMs / 1000).toFixed(2)} s | ${r.oldMs === null ? "not timed" : `${(r.oldMs / 1000).toFixed(2)} s`} |`,
  ),
  "",
].join("\n");
writeFileSync(new URL("./results/policy-parse.md", import.meta.url), md);
writeFileSync(new URL("./results/policy-parse.json", import.meta.url), `${JSON.stringify({ recordedAt: new Date().toISOString(), node: process.version, rows }, null, 2)}\n`);
process.stdout.write(md);
