// Issue 32's targets judged on the median of several full runs, as the issue asks ("medians of at
// least 3 runs"): each ratio a target judges, run by run (each measured back to back in its own
// run), its median, and the verdict on the median. It reads the results documents the runs
// wrote (bench/results/full.json), from files or from git (REV:PATH), and says whether the
// product's sources (src, gateway/src, supervisor/src) are the same at every run's commit.
//   node --import tsx bench/medians.ts FILE|REV:PATH ...        (npm run bench:medians -- …)
// e.g. npm run bench:medians -- 466d683:bench/results/full.json de4c89a:bench/results/full.json 109ea34:bench/results/full.json

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { issue32Judged } from "./lib/issue32.js";
import { times } from "./lib/ratios.js";
import type { Results } from "./lib/results.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const PRODUCT = ["src", "gateway/src", "supervisor/src"];

/** The median of the defined values (the mean of the middle two for an even count); undefined when none. */
export function median(xs: readonly (number | undefined)[]): number | undefined {
  const v = xs.filter((x): x is number => x !== undefined && Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return undefined;
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid] : (v[mid - 1]! + v[mid]!) / 2;
}

export interface MedianRow {
  readonly measure: string;
  readonly short: string;
  readonly what: string;
  readonly perRun: (number | undefined)[];
  readonly median: number | undefined;
  readonly target: string;
  readonly met: boolean | undefined;
}

/** One row per ratio a target judges (in the report's order), across `runs`. */
export function medianRows(runs: readonly Results[]): MedianRow[] {
  const judged = runs.map(issue32Judged);
  const rows: MedianRow[] = [];
  judged[0]?.forEach((t, i) => {
    // Every item any run measured, in first-seen order (a quick run may lack some counts).
    const names = [...new Set(judged.flatMap((j) => j[i]!.items.map((x) => x.what)))];
    for (const what of names) {
      const perRun = judged.map((j) => j[i]!.items.find((x) => x.what === what)?.v);
      const m = median(perRun);
      rows.push({ measure: t.measure, short: t.short, what, perRun, median: m, target: t.target, met: m === undefined ? undefined : t.ok(m) });
    }
  });
  return rows;
}

function load(spec: string): Results {
  // REV:PATH reads the document as committed; anything else is a file.
  const git = /^([0-9a-f]{7,40}|HEAD[~^0-9]*):(.+)$/.exec(spec);
  const text = git ? execFileSync("git", ["show", `${git[1]}:${git[2]}`], { cwd: ROOT, encoding: "utf8", maxBuffer: 64 << 20 }) : readFileSync(spec, "utf8");
  const r = JSON.parse(text) as Results;
  if (!r.meta || !Array.isArray(r.probe) || !r.floor) throw new Error(`${spec}: not a results document of bench/run.ts`);
  return r;
}

/** Whether the product's sources are the same at every run's commit; undefined when git cannot tell. */
function sameProduct(commits: readonly string[]): { same: boolean; detail: string } | undefined {
  const clean = commits.map((c) => c.replace(/\+changes$/, ""));
  if (clean.some((c) => !/^[0-9a-f]{7,40}$/.test(c))) return undefined;
  try {
    const differ = clean.slice(1).filter((c) => execFileSync("git", ["diff", "--name-only", clean[0]!, c, "--", ...PRODUCT], { cwd: ROOT, encoding: "utf8" }).trim() !== "");
    const dirty = commits.filter((c) => c.endsWith("+changes"));
    const same = differ.length === 0 && dirty.length === 0;
    const detail = same
      ? `${PRODUCT.join(", ")}: the same at every run's commit`
      : [differ.length > 0 ? `${PRODUCT.join(", ")} differ between ${clean[0]} and ${differ.join(", ")}` : "", dirty.length > 0 ? `${dirty.join(", ")} ran with uncommitted changes` : ""].filter(Boolean).join("; ");
    return { same, detail };
  } catch {
    return undefined;
  }
}

export function renderMedians(runs: readonly Results[]): string {
  const rows = medianRows(runs);
  const product = sameProduct(runs.map((r) => r.meta.commit));
  const lines = [
    `# Issue 32's targets over ${runs.length} runs: the median of each ratio`,
    "",
    ...runs.map((r, i) => `${i + 1}. ${r.meta.date} · ${r.meta.mode} · commit ${r.meta.commit} · ${r.meta.cpu}`),
    "",
    product ? `Product sources (${product.same ? "one build" : "not one build"}): ${product.detail}.` : "Product sources: git could not compare the runs' commits.",
    "",
    `| measure | ${runs.map((_, i) => `run ${i + 1}`).join(" | ")} | median | target | on the median |`,
    `| --- | ${runs.map(() => "---").join(" | ")} | --- | --- | --- |`,
    ...rows.map((x) => `| ${x.short}: ${x.what} | ${x.perRun.map(times).join(" | ")} | **${times(x.median)}** | ${x.target} | ${x.met === undefined ? "n/a" : x.met ? "met" : "not met"} |`),
  ];
  if (runs.length < 3) lines.push("", `Fewer than 3 runs: the issue judges medians of at least 3.`);
  return `${lines.join("\n")}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const specs = process.argv.slice(2);
  if (specs.length === 0) {
    process.stderr.write("usage: node --import tsx bench/medians.ts FILE|REV:PATH ...  (results documents of full runs, e.g. bench/results/full.json)\n");
    process.exit(2);
  }
  try {
    process.stdout.write(renderMedians(specs.map(load)));
  } catch (err) {
    process.stderr.write(`bench/medians: ${(err as Error).message.split("\n")[0]}\n`);
    process.exit(1);
  }
}
