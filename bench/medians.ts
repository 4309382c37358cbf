// Issue 32's targets judged on the median of several full runs, as the issue asks ("medians of at
// least 3 runs"): each ratio a target judges, run by run (each measured back to back in its own
// run), its median, and the verdict on the median. It reads the results documents the runs
// wrote (bench/results/full.json), from files or from git (REV:PATH), and says whether the runs
// are one build: the product's sources, the floor's and the bench build's the same at every
// run's commit.
//   node --import tsx bench/medians.ts FILE|REV:PATH ...        (npm run bench:medians -- …)
// e.g. npm run bench:medians -- 466d683:bench/results/full.json de4c89a:bench/results/full.json 109ea34:bench/results/full.json

import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { issue32Judged, shown } from "./lib/issue32.js";
import { ROOT } from "./lib/proc.js";
import type { Results } from "./lib/results.js";
import { median as medianOf } from "./lib/stats.js";

/** What makes two runs one build: the product, the floor every ratio divides by, how both are built, and the locked dependencies. */
export const BUILD_PATHS = ["src", "gateway/src", "supervisor/src", "bench/floor", "bench/lib/build.ts", "package.json", "package-lock.json", "gateway/package.json", "supervisor/package.json"];

/** The median of the values measured (undefined when none). */
export function median(xs: readonly (number | undefined)[]): number | undefined {
  const v = xs.filter((x): x is number => x !== undefined && Number.isFinite(x));
  return v.length === 0 ? undefined : medianOf(v);
}

export interface MedianRow {
  readonly measure: string;
  readonly short: string;
  /** The ratio's name within its target ("probe", "group commit 8"); "" for a target no run measured. */
  readonly what: string;
  readonly perRun: (number | undefined)[];
  readonly median: number | undefined;
  /** How many runs measured it. */
  readonly count: number;
  readonly target: string;
  /** The target's test of one ratio. */
  readonly ok: (v: number) => boolean;
  readonly met: boolean | undefined;
}

// The report's order: probe, fleet, then the counts in flight from fewest up.
const order = (what: string) => (what === "probe" ? -2 : what === "fleet" ? -1 : Number(/(\d+)$/.exec(what)?.[1] ?? 1e9));

/** One row per ratio a target judges, across `runs`; a target no run measured keeps one row, n/a. */
export function medianRows(runs: readonly Results[]): MedianRow[] {
  const judged = runs.map(issue32Judged);
  const rows: MedianRow[] = [];
  (judged[0] ?? []).forEach((t, i) => {
    const names = [...new Set(judged.flatMap((j) => j[i]!.items.map((x) => x.what)))].sort((a, b) => order(a) - order(b));
    if (names.length === 0) rows.push({ measure: t.measure, short: t.short, what: "", perRun: runs.map(() => undefined), median: undefined, count: 0, target: t.target, ok: t.ok, met: undefined });
    for (const what of names) {
      const perRun = judged.map((j) => j[i]!.items.find((x) => x.what === what)?.v);
      const m = median(perRun);
      const count = perRun.filter((v) => v !== undefined && Number.isFinite(v)).length;
      rows.push({ measure: t.measure, short: t.short, what, perRun, median: m, count, target: t.target, ok: t.ok, met: m === undefined ? undefined : t.ok(m) });
    }
  });
  return rows;
}

/** git's answer, or an Error carrying the first line git wrote to stderr. */
function git(args: readonly string[]): string {
  try {
    return execFileSync("git", args, { cwd: ROOT, encoding: "utf8", maxBuffer: 64 << 20, stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error((e.stderr?.trim() || e.message).split("\n")[0]!.replace(/^fatal: /, ""));
  }
}

/** A results document from a file, or from git as REV:PATH when no file has that name. */
export function load(spec: string): Results {
  let text: string;
  if (existsSync(spec)) {
    if (!statSync(spec).isFile()) throw new Error(`${spec}: not a file`);
    text = readFileSync(spec, "utf8");
  } else {
    const colon = spec.indexOf(":");
    if (colon <= 0) throw new Error(`${spec}: no such file (a committed document is REV:PATH)`);
    if (colon === spec.length - 1) throw new Error(`${spec}: no path after the revision (REV:PATH)`);
    try {
      text = git(["cat-file", "blob", spec]);
    } catch (err) {
      const m = (err as Error).message;
      throw new Error(`${spec}: ${/bad file$/.test(m) ? "not a file at that revision" : m}`);
    }
  }
  let r: Partial<Results> | null;
  try {
    r = JSON.parse(text) as Partial<Results> | null;
  } catch {
    throw new Error(`${spec}: not JSON`);
  }
  const ok = typeof r === "object" && r !== null && typeof r.meta?.commit === "string" && typeof r.meta.date === "string";
  if (!ok || !Array.isArray(r!.probe) || !Array.isArray(r!.fleet) || !Array.isArray(r!.latency) || typeof r!.floor !== "object" || r!.floor === null) {
    throw new Error(`${spec}: not a results document of bench/run.ts`);
  }
  if (issue32Judged(r as Results).every((t) => t.items.length === 0)) throw new Error(`${spec}: measured none of the ratios issue 32 judges (a run of other scenarios?)`);
  return r as Results;
}

/** Whether the runs are one build (BUILD_PATHS the same at every run's commit), and why not or why it cannot tell. */
export function oneBuild(runs: readonly Results[]): { readonly same: boolean | undefined; readonly detail: string } {
  const commits = runs.map((r) => r.meta.commit);
  const dirty = commits.flatMap((c, i) => (c.endsWith("+changes") ? [`run ${i + 1} (${c}) ran with uncommitted changes`] : []));
  const unknown = commits.flatMap((c, i) => (/^[0-9a-f]{7,40}(\+changes)?$/.test(c) ? [] : [`run ${i + 1}'s commit is ${JSON.stringify(c)}`]));
  if (dirty.length + unknown.length > 0) return { same: undefined, detail: `cannot tell: ${[...dirty, ...unknown].join("; ")}` };
  try {
    const differ = commits.slice(1).flatMap((c, i) => {
      const paths = git(["diff", "--name-only", commits[0]!, c, "--", ...BUILD_PATHS]).trim().split("\n").filter(Boolean);
      return paths.length === 0 ? [] : [`run ${i + 2} (${c}) in ${paths.length} file${paths.length === 1 ? "" : "s"}: ${paths.slice(0, 3).join(", ")}${paths.length > 3 ? ", …" : ""}`];
    });
    return differ.length === 0
      ? { same: true, detail: `${BUILD_PATHS.join(", ")}: the same at every run's commit` }
      : { same: false, detail: `differs from run 1 (${commits[0]}): ${differ.join("; ")}` };
  } catch (err) {
    return { same: undefined, detail: `cannot tell: git could not compare the runs' commits (${(err as Error).message})` };
  }
}

export function renderMedians(given: readonly Results[]): string {
  // The same run given twice would weigh twice in every median.
  const seen = new Map<string, number>();
  given.forEach((r, i) => {
    const key = `${r.meta.date} ${r.meta.commit}`;
    if (seen.has(key)) throw new Error(`documents ${seen.get(key)! + 1} and ${i + 1} are the same run (${r.meta.date}, commit ${r.meta.commit})`);
    seen.set(key, i);
  });
  // Numbered in the order they ran, whatever order they were given in.
  const runs = [...given].sort((a, b) => a.meta.date.localeCompare(b.meta.date));
  const rows = medianRows(runs);
  const build = oneBuild(runs);
  const quick = runs.flatMap((r, i) => (r.meta.mode === "full" ? [] : [i + 1]));
  const lines = [
    `# Issue 32's targets over ${runs.length} run${runs.length === 1 ? "" : "s"}: the median of each ratio`,
    "",
    ...runs.map((r, i) => `${i + 1}. ${r.meta.date} · ${r.meta.mode} · commit ${r.meta.commit} · ${r.meta.cpu} · ${r.meta.os}`),
    "",
    `${build.same === true ? "One build" : build.same === false ? "Not one build" : "One build or not"}: ${build.detail}.`,
    ...(quick.length > 0 ? ["", `Run${quick.length === 1 ? "" : "s"} ${quick.join(", ")} ${quick.length === 1 ? "is a quick run" : "are quick runs"}: smaller shapes than a full run's (the fleet's 100 sandboxes, not 1,000).`] : []),
    ...(runs.length < 3 ? ["", "Fewer than 3 runs: the issue judges medians of at least 3."] : []),
    "",
    `| measure | ${runs.map((_, i) => `run ${i + 1}`).join(" | ")} | median | target | on the median |`,
    `| --- | ${runs.map(() => "---").join(" | ")} | --- | --- | --- |`,
    ...rows.map((x) => {
      const of = x.count > 0 && x.count < runs.length ? ` (of ${x.count})` : "";
      const verdict = x.met === undefined ? "n/a" : x.met ? "met" : "not met";
      return `| ${x.short}${x.what ? `: ${x.what}` : ""} | ${x.perRun.map((v) => shown(v, x.ok)).join(" | ")} | **${shown(x.median, x.ok)}**${of} | ${x.target} | ${verdict} |`;
    }),
  ];
  return `${lines.join("\n")}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const specs = process.argv.slice(2);
  const usage = "usage: npm run bench:medians -- FILE|REV:PATH ...  (results documents of runs, e.g. bench/results/full.json or 466d683:bench/results/full.json; paths from the repository's root; issue 32 judges full runs)\n";
  if (specs.length === 0 || specs.some((a) => a === "--help" || a === "-h")) {
    // Asked for, the usage is the answer (stdout); without arguments it is an error (stderr).
    (specs.length === 0 ? process.stderr : process.stdout).write(usage);
    process.exit(specs.length === 0 ? 2 : 0);
  }
  try {
    process.stdout.write(renderMedians(specs.map(load)));
  } catch (err) {
    process.stderr.write(`bench/medians: ${(err as Error).message.split("\n")[0]}\n`);
    process.exit(1);
  }
}
