// Issue 32's targets judged on the median of several runs (bench/medians.ts): the ratios each run
// measured, their median, and the verdict on the median rather than on any one run.

import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { median, medianRows, renderMedians } from "../../bench/medians.js";
import { issue32Targets } from "../../bench/lib/issue32.js";
import type { Results } from "../../bench/lib/results.js";

const ROOT = join(import.meta.dirname, "../..");

/** A side of a shape: updates/s and CPU per update of the gateway and supervisors. */
const side = (perSec: number, gateway = 1, supervisors = 0.3) => ({ completedPerSec: perSec, cpuMsPerOp: { gateway, supervisors, clients: 0.5 } });

/** A results document holding what issue 32's targets read, with our SQLite probe at `probe` updates/s against a floor of 100. */
function run(o: { probe: number; fleet?: number; gc?: Record<number, number>; seq?: number; commit?: string }): Results {
  const levels = Object.entries(o.gc ?? {}).map(([n, v]) => ({ inFlight: Number(n), sqlite: side(v), postgres: side(v * 0.7), floor: side(100) }));
  return {
    meta: { date: "2026-12-06T00:00:00.000Z", mode: "full", node: "v20", cores: 2, cpu: "test", memoryGb: 24, os: "linux", commit: o.commit ?? "unknown", notes: [], load: [] },
    latency: o.seq === undefined ? [] : [{ backend: "sqlite", waitedMs: { p50: o.seq } }],
    probe: [{ backend: "sqlite", ...side(o.probe, 1.2, 0.3) }, { backend: "postgres", ...side(o.probe * 0.75) }],
    groupCommit: { levels },
    fleet: o.fleet === undefined ? [] : [{ backend: "sqlite", ...side(o.fleet) }],
    scale: [],
    recovery: [],
    floor: {
      probe: side(100, 1, 0.15),
      probeProviderToo: side(90, 1.1, 0.3),
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

describe("npm run bench:medians", () => {
  const dir = mkdtempSync(join(tmpdir(), "osc-medians-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const cli = (...args: string[]) => spawnSync(process.execPath, ["--import", "tsx", "bench/medians.ts", ...args], { cwd: ROOT, encoding: "utf8" });

  it("reads results documents from files and from git, and says whether the product's sources differ between the runs' commits", () => {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    const files = [80, 90, 100].map((p, i) => {
      const f = join(dir, `run${i}.json`);
      writeFileSync(f, JSON.stringify(run({ probe: p, commit: head })));
      return f;
    });
    const r = cli(...files);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain("| Waited updates/s ÷ floor: probe | 0.80× | 0.90× | 1.00× | **0.90×** | ≥ 0.8× floor | met |");
    expect(r.stdout).toContain("Product sources (one build): src, gateway/src, supervisor/src: the same at every run's commit.");
  });

  it("fails with one line naming a file that is not a results document, and with usage when given none", () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ hello: 1 }));
    const r = cli(bad);
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.trim().split("\n")).toEqual([`bench/medians: ${bad}: not a results document of bench/run.ts`]);
    const none = cli();
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/^usage: /);
  });
});
