// Issue 32's targets judged on the median of several runs (bench/medians.ts): the ratios each run
// measured, their median, and the verdict on the median rather than on any one run.

import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { median, medianRows, oneBuild, renderMedians } from "../../bench/medians.js";
import { issue32Targets } from "../../bench/lib/issue32.js";
import type { Results } from "../../bench/lib/results.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "../..");
const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim();

/** A side of a shape: updates/s and CPU per update of the gateway and supervisors. */
const side = (perSec: number, gateway = 1, supervisors = 0.3) => ({ completedPerSec: perSec, cpuMsPerOp: { gateway, supervisors, clients: 0.5 } });

let serial = 0;
/** A results document holding what issue 32's targets read, with our SQLite probe at `probe` updates/s against a floor of 100. */
function run(o: { probe: number; fleet?: number; gc?: Record<number, number>; seq?: number; commit?: string; date?: string; gateway?: number; providerFloor?: boolean }): Results {
  const levels = Object.entries(o.gc ?? {}).map(([n, v]) => ({ inFlight: Number(n), sqlite: side(v), postgres: side(v * 0.7), floor: side(100) }));
  return {
    meta: { date: o.date ?? `2026-12-06T00:00:00.${String(++serial).padStart(3, "0")}Z`, mode: "full", node: "v20", cores: 2, cpu: "test", memoryGb: 24, os: "linux", commit: o.commit ?? "unknown", notes: [], load: [] },
    latency: o.seq === undefined ? [] : [{ backend: "sqlite", waitedMs: { p50: o.seq } }],
    probe: [{ backend: "sqlite", ...side(o.probe, o.gateway ?? 1.2, 0.3) }, { backend: "postgres", ...side(o.probe * 0.75) }],
    groupCommit: { levels },
    fleet: o.fleet === undefined ? [] : [{ backend: "sqlite", ...side(o.fleet) }],
    scale: [],
    recovery: [],
    floor: {
      probe: side(100, 1, 0.15),
      ...(o.providerFloor === false ? {} : { probeProviderToo: side(90, 1.1, 0.3) }),
      ...(o.fleet === undefined ? {} : { fleet: side(100) }),
      ...(o.seq === undefined ? {} : { latency: { waitedMs: { p50: 1 } } }),
      scale: [],
      recovery: [],
    },
    profiles: [],
    failures: [],
  } as unknown as Results;
}

describe("the median of a run's ratios", () => {
  it("takes the middle value of an odd count and the mean of the middle two of an even one", () => {
    expect(median([0.9, 0.7, 1.1])).toBe(0.9);
    expect(median([0.6, 1.0, 0.8, 0.7])).toBeCloseTo(0.75);
  });

  it("leaves out runs that did not measure the ratio, and has none when no run did", () => {
    expect(median([undefined, 0.5, 0.9, undefined])).toBeCloseTo(0.7);
    expect(median([undefined, Number.NaN])).toBeUndefined();
  });
});

describe("issue 32's targets over several runs", () => {
  it("judges the median, so one slow run does not decide a target and one fast run does not pass it", () => {
    const rows = medianRows([run({ probe: 100 }), run({ probe: 70 }), run({ probe: 85 })]);
    const probe = rows.find((r) => r.short.startsWith("Waited updates/s") && r.what === "probe")!;
    expect(probe.perRun.map((v) => v?.toFixed(2))).toEqual(["1.00", "0.70", "0.85"]);
    expect(probe.median).toBeCloseTo(0.85);
    expect(probe.met).toBe(true);
    // Each run alone: the second is not met, the others are.
    expect(issue32Targets(run({ probe: 70 }))[0]!.verdict).toBe("not met");

    const high = medianRows([run({ probe: 95 }), run({ probe: 70 }), run({ probe: 75 })]).find((r) => r.what === "probe")!;
    expect(high.median).toBeCloseTo(0.75);
    expect(high.met).toBe(false);
  });

  it("holds CPU targets to at most their bound and throughput targets to at least theirs", () => {
    const rows = medianRows([run({ probe: 90 }), run({ probe: 90 }), run({ probe: 90 })]);
    const gw = rows.find((r) => r.short.startsWith("Gateway CPU") && r.what === "probe")!;
    expect(gw.median).toBeCloseTo(1.2);
    expect(gw.met).toBe(true);
    const sup = rows.find((r) => r.short.startsWith("Supervisor CPU"))!;
    expect(sup.median).toBeCloseTo(1.0);
    expect(sup.met).toBe(true);
    const pg = rows.find((r) => r.short.startsWith("PostgreSQL") && r.what === "probe")!;
    expect(pg.median).toBeCloseTo(0.75);
    expect(pg.met).toBe(true);
  });

  it("keeps a count that only some runs measured, with the others shown as not measured", () => {
    const rows = medianRows([run({ probe: 90, gc: { 1: 60, 128: 110 } }), run({ probe: 90, gc: { 128: 95 } }), run({ probe: 90, gc: { 1: 70, 128: 120 } })]);
    const one = rows.find((r) => r.short.startsWith("Waited") && r.what === "group commit 1")!;
    expect(one.perRun[1]).toBeUndefined();
    expect(one.median).toBeCloseTo(0.65);
    const stretch = rows.find((r) => r.short.startsWith("Stretch"))!;
    expect(stretch.median).toBeCloseTo(1.1);
    expect(stretch.met).toBe(true);
  });

  it("judges the sequential ratio at two decimals, as the report prints it", () => {
    const rows = medianRows([run({ probe: 90, seq: 1.034 }), run({ probe: 90, seq: 1.2 }), run({ probe: 90, seq: 0.9 })]);
    const seq = rows.find((r) => r.short.startsWith("Sequential"))!;
    expect(seq.median).toBeCloseTo(1.034);
    expect(seq.met).toBe(true);
    expect(medianRows([run({ probe: 90, seq: 1.04 })]).find((r) => r.short.startsWith("Sequential"))!.met).toBe(false);
  });

  it("prints one row per ratio with every run's value and says when there are fewer than three runs", () => {
    const md = renderMedians([run({ probe: 100, fleet: 60 }), run({ probe: 80, fleet: 70 })]);
    expect(md).toContain("| Waited updates/s ÷ floor: fleet | 0.60× | 0.70× | **0.65×** | ≥ 0.8× floor | not met |");
    expect(md).toContain("| Waited updates/s ÷ floor: probe | 1.00× | 0.80× | **0.90×** | ≥ 0.8× floor | met |");
    expect(md).toContain("Fewer than 3 runs");
    expect(renderMedians([run({ probe: 90 }), run({ probe: 90 }), run({ probe: 90 })])).not.toContain("Fewer than 3 runs");
  });
});

describe("the edges of a target", () => {
  it("passes a throughput ratio of exactly 0.8 and a CPU ratio of exactly 1.3", () => {
    const rows = medianRows([run({ probe: 80, gateway: 1.3 }), run({ probe: 80, gateway: 1.3 }), run({ probe: 80, gateway: 1.3 })]);
    expect(rows.find((r) => r.short.startsWith("Waited") && r.what === "probe")!.met).toBe(true);
    expect(rows.find((r) => r.short.startsWith("Gateway CPU") && r.what === "probe")!.met).toBe(true);
    const below = medianRows([run({ probe: 79, gateway: 1.31 })]);
    expect(below.find((r) => r.short.startsWith("Waited") && r.what === "probe")!.met).toBe(false);
    expect(below.find((r) => r.short.startsWith("Gateway CPU") && r.what === "probe")!.met).toBe(false);
  });

  it("keeps a target that no run measured as one row, n/a, as the report does", () => {
    const runs = [run({ probe: 90, providerFloor: false }), run({ probe: 90, providerFloor: false }), run({ probe: 90, providerFloor: false })];
    const sup = medianRows(runs).filter((r) => r.short.startsWith("Supervisor CPU"));
    expect(sup).toHaveLength(1);
    expect(sup[0]!.met).toBeUndefined();
    expect(renderMedians(runs)).toMatch(/\| Supervisor CPU per apply ÷ floor with the provider message \| – \| – \| – \| \*\*–\*\* \| [^|]+ \| n\/a \|/);
    expect(issue32Targets(runs[0]!)[2]).toMatchObject({ now: "–", verdict: "n/a" });
    // A floor figure of zero gives no ratio: the same "–", not a sentence around one.
    const zero = run({ probe: 90 });
    (zero.floor.probeProviderToo!.cpuMsPerOp as { supervisors: number }).supervisors = 0;
    expect(issue32Targets(zero)[2]).toMatchObject({ now: "–", verdict: "n/a" });
  });

  it("says of how many runs a median is taken when some runs did not measure it", () => {
    const md = renderMedians([run({ probe: 90, gc: { 8: 70 } }), run({ probe: 90 }), run({ probe: 90, gc: { 8: 90 } })]);
    expect(md).toContain("| Waited updates/s ÷ floor: group commit 8 | 0.70× | – | 0.90× | **0.80×** (of 2) | ≥ 0.8× floor | met |");
  });

  it("refuses the same run given twice, which would weigh twice in every median", () => {
    const a = run({ probe: 90, date: "2026-12-06T01:00:00.000Z", commit: "abc1234" });
    expect(() => renderMedians([a, run({ probe: 80 }), { ...a }])).toThrow("documents 1 and 3 are the same run (2026-12-06T01:00:00.000Z, commit abc1234)");
  });

  it("numbers the runs in the order they ran, whatever order they were given in", () => {
    const md = renderMedians([run({ probe: 70, date: "2026-12-06T03:00:00.000Z" }), run({ probe: 90, date: "2026-12-06T01:00:00.000Z" }), run({ probe: 80, date: "2026-12-06T02:00:00.000Z" })]);
    expect(md).toContain("1. 2026-12-06T01:00:00.000Z");
    expect(md).toContain("| Waited updates/s ÷ floor: probe | 0.90× | 0.80× | 0.70× | **0.80×** |");
  });

  it("prints a third decimal where two would read as the other side of the target", () => {
    const md = renderMedians([run({ probe: 79.8 }), run({ probe: 79.8 }), run({ probe: 79.8 })]);
    expect(md).toContain("| Waited updates/s ÷ floor: probe | 0.798× | 0.798× | 0.798× | **0.798×** | ≥ 0.8× floor | not met |");
    expect(issue32Targets(run({ probe: 79.8 }))[0]!.now).toMatch(/^probe 0\.798×/);
    expect(issue32Targets(run({ probe: 79.4 }))[0]!.now).toMatch(/^probe 0\.79×/);
  });
});

describe("one build", () => {
  it("is one build when the product, the floor and the packages are the same at every run's commit", () => {
    const head = git("rev-parse", "--short", "HEAD");
    expect(oneBuild([run({ probe: 90, commit: head }), run({ probe: 90, commit: head })])).toMatchObject({ same: true });
  });

  it("is not one build when the product's sources differ, naming the files", () => {
    const first = git("rev-list", "--max-parents=0", "HEAD").split("\n")[0]!.slice(0, 12);
    const head = git("rev-parse", "--short", "HEAD");
    const r = oneBuild([run({ probe: 90, commit: first }), run({ probe: 90, commit: head })]);
    expect(r.same).toBe(false);
    expect(r.detail).toMatch(new RegExp(`^differs from run 1 \\(${first}\\): run 2 \\(${head}\\) in \\d+ files?: `));
  });

  it("cannot tell for a run with uncommitted changes or an unknown commit", () => {
    const head = git("rev-parse", "--short", "HEAD");
    expect(oneBuild([run({ probe: 90, commit: head }), run({ probe: 90, commit: `${head}+changes` })])).toEqual({ same: undefined, detail: `cannot tell: run 2 (${head}+changes) ran with uncommitted changes` });
    expect(oneBuild([run({ probe: 90, commit: "unknown" }), run({ probe: 90, commit: head })])).toEqual({ same: undefined, detail: 'cannot tell: run 1\'s commit is "unknown"' });
  });
});

describe("npm run bench:medians", () => {
  let dir = "";
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "osc-medians-"));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const cli = (...args: string[]) => spawnSync(process.execPath, ["--import", "tsx", "bench/medians.ts", ...args], { cwd: ROOT, encoding: "utf8" });

  it("reads results documents from files and from git as REV:PATH", () => {
    const head = git("rev-parse", "--short", "HEAD");
    const files = [80, 100].map((p, i) => {
      const f = join(dir, `run${i}.json`);
      writeFileSync(f, JSON.stringify(run({ probe: p, commit: head })));
      return f;
    });
    // The committed full run is a real document: its own probe ratio is among the three.
    const committed = JSON.parse(git("show", "HEAD:bench/results/full.json")) as Results;
    const own = medianRows([committed]).find((r) => r.short.startsWith("Waited") && r.what === "probe")!.perRun[0]!;
    const r = cli(...files, "HEAD:bench/results/full.json");
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("# Issue 32's targets over 3 runs");
    const probeRow = r.stdout.split("\n").find((l) => l.startsWith("| Waited updates/s ÷ floor: probe |"))!;
    expect(probeRow.split("|").slice(2, 5).map((c) => c.trim())).toEqual(["0.80×", "1.00×", `${own.toFixed(2)}×`]);
  });

  it("fails with one line naming a document it cannot use, gives usage when given none, and help when asked", () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ hello: 1 }));
    const nul = join(dir, "null.json");
    writeFileSync(nul, "null");
    // A run of other scenarios only (a TLS run, say): a results document with nothing issue 32 judges.
    const tlsOnly = join(dir, "tls-only.json");
    const none = run({ probe: 90 });
    writeFileSync(tlsOnly, JSON.stringify({ ...none, probe: [], latency: [], groupCommit: undefined, floor: { scale: [], recovery: [] } }));
    for (const [args, line] of [
      [[bad], `bench/medians: ${bad}: not a results document of bench/run.ts`],
      [[nul], `bench/medians: ${nul}: not a results document of bench/run.ts`],
      [[join(dir, "missing.json")], `bench/medians: ${join(dir, "missing.json")}: no such file (a committed document is REV:PATH)`],
      [["0000000:bench/results/full.json"], "bench/medians: 0000000:bench/results/full.json: invalid object name '0000000'."],
      [["HEAD:bench"], "bench/medians: HEAD:bench: not a file at that revision"],
      [["HEAD:"], "bench/medians: HEAD:: no path after the revision (REV:PATH)"],
      [[dir], `bench/medians: ${dir}: not a file`],
      [[tlsOnly], `bench/medians: ${tlsOnly}: measured none of the ratios issue 32 judges (a run of other scenarios?)`],
    ] as const) {
      const r = cli(...args);
      expect(r.status, line).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr.trim().split("\n")).toEqual([line]);
    }
    const bare = cli();
    expect(bare.status).toBe(2);
    expect(bare.stderr).toMatch(/^usage: /);
    const help = cli("--help");
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/^usage: npm run bench:medians -- FILE\|REV:PATH/);
  });
});
