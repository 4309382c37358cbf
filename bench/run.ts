// `npm run bench` (a short run of every scenario) and `npm run bench:full`. Runs the scenarios
// one after another on loopback, writes bench/results/latest.json and latest.md after each, and
// exits 1 when any scenario failed or any operation was lost, stuck or ended in the wrong state.
//
// Each scenario with a floor (bench/floor: the same processes and messages on the same libraries,
// doing nothing else) runs it right after, and the report leads with ours ÷ floor.
//
//   node --import tsx bench/run.ts [--full] [--only latency,probe,group-commit,fleet,scale,recovery,tls,size]
//                                  [--cpu-prof] [--fleet-sandboxes N] [--fleet-ops N] [--probe-ops N] [--probe-rounds N]
//                                  [--inflight 1,8,32,128] [--scale N,N] [--recovery N]
//                                  [--backend sqlite,postgres] [--no-floor] [--out NAME]
//
// --out NAME writes bench/results/NAME.{json,md} instead of latest.* and quick.*/full.* (a partial
// run, e.g. --only tls, that should not replace the last whole one).

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, release, tmpdir, totalmem, type } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { floorLatency, floorRecovery, floorScale, floorSmoke, floorUpdates } from "./floor/scenarios.js";
import { FloorStack } from "./floor/stack.js";
import { runBuiltPrograms } from "./lib/build.js";
import { measureFsync } from "./lib/fsync.js";
import { issue32Targets } from "./lib/issue32.js";
import { issue15Targets, ratioRows, times } from "./lib/ratios.js";
import { renderMarkdown } from "./lib/report.js";
import type { Results } from "./lib/results.js";
import { machineBusyPercent, ROOT, sampleMachine, settleMachine } from "./lib/proc.js";
import { Stack } from "./lib/stack.js";
import type { Context } from "./scenarios/common.js";
import { fleetScenario } from "./scenarios/fleet.js";
import { DEFAULT_INFLIGHT, groupCommitScenario, newGroupCommitResult } from "./scenarios/group-commit.js";
import { latencyScenario } from "./scenarios/latency.js";
import { probeRoundsScenario } from "./scenarios/probe-rounds.js";
import { recoveryScenario } from "./scenarios/recovery.js";
import { scaleScenario } from "./scenarios/scale.js";
import { sizeScenario } from "./scenarios/size.js";
import { tlsRatios, tlsScenario } from "./scenarios/tls.js";

const SCENARIOS = ["latency", "probe", "group-commit", "fleet", "scale", "recovery", "tls", "size"] as const;

const { values } = parseArgs({
  options: {
    full: { type: "boolean" },
    only: { type: "string" },
    "cpu-prof": { type: "boolean" },
    "fleet-sandboxes": { type: "string" },
    "fleet-ops": { type: "string" },
    "probe-ops": { type: "string" },
    "probe-rounds": { type: "string" },
    inflight: { type: "string" },
    "no-floor": { type: "boolean" },
    scale: { type: "string" },
    recovery: { type: "string" },
    backend: { type: "string" },
    out: { type: "string" },
  },
});
if (values.out !== undefined && !/^[a-z0-9-]+$/.test(values.out)) throw new Error(`--out: use lower-case letters, digits and '-' (got ${values.out})`);
const full = values.full === true;
const only = new Set((values.only ?? SCENARIOS.join(",")).split(",").map((s) => s.trim()));
for (const s of only) if (!(SCENARIOS as readonly string[]).includes(s)) throw new Error(`--only: unknown scenario ${s} (${SCENARIOS.join(", ")})`);
const backends = (values.backend ?? "sqlite,postgres").split(",").map((b) => b.trim()) as ("sqlite" | "postgres")[];
for (const b of backends) if (b !== "sqlite" && b !== "postgres") throw new Error(`--backend: unknown backend ${b} (sqlite, postgres)`);
const int = (v: string | undefined, d: number) => (v === undefined ? d : Number.parseInt(v, 10));
const withFloor = values["no-floor"] !== true;
const inFlight = (values.inflight ?? DEFAULT_INFLIGHT.join(",")).split(",").map((v) => Number(v.trim()));
for (const v of inFlight) if (!Number.isInteger(v) || v < 1) throw new Error(`--inflight: a comma-separated list of positive integers (got ${values.inflight})`);

const probeOps = int(values["probe-ops"], full ? 5000 : 2000);
const probeRounds = int(values["probe-rounds"], full ? 5 : 2);
if (!Number.isInteger(probeRounds) || probeRounds < 1 || probeRounds > probeOps) throw new Error(`--probe-rounds: an integer from 1 to the probe's updates, ${probeOps} (got ${values["probe-rounds"]})`);

const plan = {
  latency: full ? { n: 1000, warmup: 50 } : { n: 200, warmup: 20 },
  // Quick: the supervisor polls every 1 s (the report scales to the 10 s default); full: the real 10 s.
  poll: full ? { n: 20, intervalMs: 10_000 } : { n: 8, intervalMs: 1000 },
  fleet: {
    sandboxes: int(values["fleet-sandboxes"], full ? 1000 : 100),
    supervisors: 2,
    ops: int(values["fleet-ops"], full ? 20_000 : 2000),
    clients: full ? 4 : 2,
    loopsPerClient: full ? 32 : 25,
  },
  // Each side's updates in rounds of 1,000, alternated with the other sides'.
  probe: { ops: probeOps, rounds: probeRounds },
  // Quick: about a minute on 2 cores (200 updates at 1 and 8 in flight, 640 at 32, 1,000 at 128;
  // PostgreSQL at 128 in flight is the slowest side); full: 1,000 to 10,000.
  groupCommit: {
    inFlight,
    opsAt: (l: number) => (full ? Math.min(10_000, Math.max(1000, 100 * l)) : Math.min(1000, Math.max(200, 20 * l))),
    warmupAt: (l: number) => (full ? Math.max(200, 8 * l) : Math.max(50, 2 * l)),
    primeOps: full ? 2000 : 200,
    commitOnly: full ? { n: 1000, warmup: 50 } : { n: 100, warmup: 10 },
  },
  scale: (values.scale ?? (full ? "2500,10000" : "2500")).split(",").map(Number),
  recovery: int(values.recovery, full ? 10_000 : 1000),
  tls: { ops: int(values["probe-ops"], full ? 5000 : 2000) },
};

const resultsDir = join(ROOT, "bench/results");
const started = performance.now();
const say = (msg: string) => console.log(`[${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s] ${msg}`);
const ctx: Context = { full, say };
// Ours and the floor alike run as built programs (bench/lib/build.ts), unless OSC_BENCH_FROM_SOURCE=1.
const programs = await runBuiltPrograms();

function gitCommit(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { cwd: ROOT, encoding: "utf8" }).trim() !== "";
    return dirty ? `${head}+changes` : head;
  } catch {
    return "unknown";
  }
}

const results: Results = {
  meta: {
    date: new Date().toISOString(),
    mode: full ? "full" : "quick",
    node: process.version,
    cores: cpus().length,
    cpu: cpus()[0]?.model.trim() ?? "unknown",
    memoryGb: Math.round(totalmem() / 2 ** 30),
    os: `${type()} ${release()}`,
    commit: gitCommit(),
    notes: [
      `Every process runs on this machine over loopback: the gateway (one Node process), supervisor processes hosting many sandboxes each, and SDK client processes (gRPC over HTTP/2 cleartext). They share the cores listed above. ${programs === "built" ? "Ours and the floor's programs alike run built by one esbuild configuration (bench/lib/build.ts) with plain node, as the shipped gateway and supervisor run (tsup, dist/cli.js)." : "Ours and the floor's programs alike run from source under tsx (OSC_BENCH_FROM_SOURCE=1)."}`,
      "SQLite: a file on local disk (WAL; every acknowledged write is on disk first: concurrent transactions share one COMMIT and one fsync). PostgreSQL 15 on 127.0.0.1, a fresh database per run. Supervisor state directories are on tmpfs (/dev/shm) when available.",
      "Latencies are wall-clock times of SDK calls measured in the client process; percentiles are nearest-rank.",
      // Experiments' Node options change what the figures measure: a run made with them says so.
      ...["OSC_BENCH_GATEWAY_NODE_ARGS", "OSC_BENCH_SUPERVISOR_NODE_ARGS", "OSC_BENCH_PROF_ALL"]
        .filter((v) => process.env[v])
        .map((v) => `${v} was set (${JSON.stringify(process.env[v])}): processes of this run had extra Node options, so their figures are an experiment's.`),
    ],
    load: [],
  },
  latency: [],
  probe: [],
  fleet: [],
  scale: [],
  recovery: [],
  floor: { scale: [], recovery: [] },
  profiles: [],
  failures: [],
};

// Console: each ratio once, as soon as both sides of it are in.
const printed = new Set<string>();
function sayRatios(): void {
  for (const row of ratioRows(results)) {
    if (printed.has(row.measure)) continue;
    printed.add(row.measure);
    say(`  ${times(row.ratio).padStart(6)} floor  ${row.measure}: ours ${row.ours}, floor ${row.floor}${row.busy ? ` (machine busy ${row.busy})` : ""}`);
  }
}

function write(): void {
  mkdirSync(resultsDir, { recursive: true });
  results.meta.durationS = Math.round((performance.now() - started) / 1000);
  const json = `${JSON.stringify(results, null, 2)}\n`;
  const md = renderMarkdown(results);
  // latest.* is the last run of either kind; quick.* / full.* keep the last of each.
  for (const name of values.out !== undefined ? [values.out] : ["latest", results.meta.mode]) {
    writeFileSync(join(resultsDir, `${name}.json`), json);
    writeFileSync(join(resultsDir, `${name}.md`), md);
  }
}

async function step(name: string, fn: () => Promise<void> | void): Promise<void> {
  // Every step, ours and the floor's alike, starts on a quiet machine (or after 20 s of trying).
  const settled = await settleMachine();
  const loadAvg1 = loadavg()[0]!;
  const m0 = sampleMachine();
  try {
    await fn();
  } catch (err) {
    const msg = `${name}: ${(err as Error).message}`;
    results.failures.push(msg);
    say(`FAILED ${msg}`);
  }
  results.meta.load.push({ step: name, loadAvg1, machineBusyPercent: machineBusyPercent(m0, sampleMachine()), settledMs: settled.waitedMs, busyBeforePercent: settled.busyPercent });
  write();
  sayRatios();
}

async function main(): Promise<void> {
  say(`benchmarks (${results.meta.mode}) on ${results.meta.cores} cores, Node ${process.version}`);
  if (withFloor) {
    // The floor stack must work before any ratio to it means anything.
    await step("floor/smoke", async () => {
      results.floor.smoke = await floorSmoke(ctx);
      say(`floor/smoke: ${results.floor.smoke.updates} waited updates, all applied and matched`);
    });
  }
  if (only.has("latency")) {
    results.fsyncMs = measureFsync();
    await step("latency/sqlite + polling", async () => {
      const r = await latencyScenario(ctx, "sqlite", { ...plan.latency, poll: plan.poll });
      results.latency.push(r.latency);
      if (r.polling) results.polling = r.polling;
    });
    if (withFloor) {
      await step("latency/floor", async () => {
        results.floor.latency = await floorLatency(ctx, plan.latency);
      });
    }
    if (backends.includes("postgres")) {
      await step("latency/postgres", async () => {
        results.latency.push((await latencyScenario(ctx, "postgres", plan.latency)).latency);
      });
    }
  }
  if (only.has("probe")) {
    // Ours per backend and the floors alternated in rounds (bench/scenarios/probe-rounds.ts).
    await step("probe (ours and the floor alternated)", async () => {
      const r = await probeRoundsScenario(ctx, { backends, withFloor, ops: plan.probe.ops, rounds: plan.probe.rounds });
      results.probe.push(...r.probe);
      if (r.floor) results.floor.probe = r.floor;
      if (r.floorProviderToo) results.floor.probeProviderToo = r.floorProviderToo;
      results.probeRounds = r.rounds;
    });
  }
  if (only.has("group-commit")) {
    results.groupCommit = newGroupCommitResult(plan.groupCommit.inFlight);
    await groupCommitScenario(ctx, { backends, withFloor, plan: plan.groupCommit }, step, results.groupCommit);
  }
  if (only.has("fleet")) {
    for (const backend of backends) {
      await step(`fleet/${backend}`, async () => {
        results.fleet.push(await fleetScenario(ctx, backend, plan.fleet));
      });
      if (withFloor && !results.floor.fleet) {
        await step("fleet/floor", async () => {
          const { sandboxes, supervisors, clients, loopsPerClient, ops } = plan.fleet;
          results.floor.fleet = await floorUpdates(ctx, "fleet/floor", { sandboxes, supervisors, clients, loopsPerClient, ops, warmupOps: 0 });
        });
        // Like for like: the floor's fleet sends valid policy updates only, so SQLite runs the
        // same shape once more with those alone, right after the floor's run (whichever backend
        // came first), and only when there is a floor to divide by.
        if (results.floor.fleet && backends.includes("sqlite")) {
          await step("fleet/sqlite, policy updates only", async () => {
            results.fleetPolicyOnly = await fleetScenario(ctx, "sqlite", { ...plan.fleet, policyOnly: true });
          });
        }
      }
    }
    if (values["cpu-prof"]) {
      for (const backend of backends) {
        await step(`fleet/${backend} (profiled)`, async () => {
          // OSC_BENCH_KEEP_PROF=DIR keeps the raw .cpuprofile files there for a closer look.
          const keep = process.env.OSC_BENCH_KEEP_PROF;
          const dir = keep ? join(keep, backend) : mkdtempSync(join(tmpdir(), "openshell-bench-prof-"));
          mkdirSync(dir, { recursive: true });
          try {
            const r = await fleetScenario(ctx, backend, { ...plan.fleet, cpuProfDir: dir });
            results.profiles.push({ backend, operations: r.operations, completedPerSec: r.completedPerSec, top: r.profile ?? [] });
          } finally {
            if (!keep) rmSync(dir, { recursive: true, force: true });
          }
        });
      }
    }
  }
  if (only.has("scale")) {
    for (const sessions of plan.scale) {
      await step(`scale/${sessions}`, async () => {
        // Full runs fall back to a ramped start when the at-once start falls short, and report it.
        const r = await scaleScenario(ctx, sessions, { idleMs: 10_000, ramp: full });
        results.scale.push(r);
        if (r.atOnceError) results.meta.notes.push(`Scale ${sessions}: the at-once bootstrap fell short (${r.atOnceReached} READY): ${r.atOnceError}.`);
        if (r.error) throw new Error(`reached ${r.reached} of ${sessions} sessions: ${r.error}`);
      });
      if (withFloor) {
        await step(`scale/${sessions}/floor`, async () => {
          results.floor.scale.push(await floorScale(ctx, sessions, { idleMs: 10_000 }));
        });
      }
    }
  }
  if (only.has("recovery")) {
    await step(`recovery/sqlite`, async () => {
      const r = await recoveryScenario(ctx, "sqlite", plan.recovery, full ? 600_000 : 120_000);
      results.recovery.push(r);
      if (r.error) throw new Error(`stuck: ${r.error}`);
    });
    if (withFloor) {
      await step("recovery/floor", async () => {
        results.floor.recovery.push(await floorRecovery(ctx, plan.recovery));
      });
    }
  }
  if (only.has("tls")) {
    results.tls = await tlsScenario(ctx, plan.tls.ops, step);
    for (const x of tlsRatios(results.tls)) say(`  ${x.ratio.toFixed(2).padStart(5)}× plaintext  ${x.measure} over TLS: ${x.tls.toFixed(3)}${x.unit}, plaintext ${x.plain.toFixed(3)}${x.unit}`);
  }
  if (only.has("size")) {
    await step("size", () => {
      results.size = sizeScenario(ctx);
    });
  }
  write();
  const rows = ratioRows(results);
  if (rows.length > 0) {
    say("ours ÷ floor (same run, back to back):");
    for (const row of rows) console.log(`  ${times(row.ratio).padStart(6)}  ${row.measure}: ours ${row.ours}, floor ${row.floor}`);
    say("targets of the performance issue, #32 (reported, not enforced):");
    for (const t of issue32Targets(results)) console.log(`  ${t.verdict.padEnd(7)}  ${t.measure}: ${t.now} (target ${t.target})`);
    say("targets of issue 15, still reported:");
    for (const t of issue15Targets(results)) console.log(`  ${t.verdict.padEnd(7)}  ${t.measure}: ${t.now} (target ${t.target})`);
  }
  say(`wrote bench/results/${values.out ?? "latest"}.md and ${values.out ?? "latest"}.json${results.failures.length > 0 ? `; ${results.failures.length} FAILURE(S)` : ""}`);
}

// Interrupted: stop every stack (processes, databases) before leaving.
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    say(`${signal}: stopping`);
    void Promise.allSettled([...[...Stack.live].map((s) => s.stop()), ...[...FloorStack.live].map((s) => s.stop())]).then(() => process.exit(130));
  });
}

// A bug in the harness itself still leaves the results so far on disk, and fails the run.
process.on("uncaughtException", (err) => {
  results.failures.push(`harness: ${err.stack ?? err.message}`);
  write();
  console.error(err);
  process.exit(1);
});

main().then(
  () => process.exit(results.failures.length > 0 ? 1 : 0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
