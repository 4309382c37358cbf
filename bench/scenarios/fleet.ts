// Scenario 3, fleet throughput: N sandboxes hosted by supervisor processes, M waited updates from
// C client processes (each with L concurrent loops over disjoint sandboxes): policy and settings
// updates, invalid policies (endpoint protocol "ftp": failed) and superseded pairs (two updates
// back to back, the first not awaited). Completed/s, latency, gateway CPU and peak RSS.

import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { FleetResult } from "../client.js";
import { cpuPercent, machineBusyMs, machineBusyPercent, sampleMachine, sampleProc, type ProcSample } from "../lib/proc.js";
import { monotonicUs, topSelfTime, type ProfileEntry } from "../lib/profile.js";
import { groupNames, Stack, type Backend } from "../lib/stack.js";
import { addCounts, mb, round, summarize, type Summary } from "../lib/stats.js";
import { bootstrapAll, createAll, drained, groupsFor, IntegrityError, verify, type Context } from "./common.js";

export interface FleetOptions {
  readonly sandboxes: number;
  readonly supervisors: number;
  readonly ops: number;
  readonly clients: number;
  readonly loopsPerClient: number;
  /** Profile the gateway (`node --cpu-prof`) into this directory. */
  readonly cpuProfDir?: string;
  /** Valid policy updates only: the messages the floor's fleet sends, for a like-for-like ratio. */
  readonly policyOnly?: boolean;
}

export interface FleetScenarioResult {
  readonly backend: Backend;
  /** Valid policy updates only (FleetOptions.policyOnly); otherwise the mix in this file's first comment. */
  readonly policyOnly?: boolean;
  readonly sandboxes: number;
  readonly supervisorProcesses: number;
  readonly clientProcesses: number;
  readonly concurrency: number;
  readonly operations: number;
  readonly wallMs: number;
  readonly completedPerSec: number;
  readonly latencyMs: Summary;
  readonly byKind: Record<string, number>;
  readonly byState: Record<string, number>;
  readonly lost: number;
  readonly stuck: number;
  readonly gatewayCpuPercent: number;
  readonly gatewayCpuMsPerOp: number;
  readonly gatewayPeakRssMb: number;
  /** CPU ms per operation of the gateway, the supervisor processes and the client processes (summed). */
  readonly cpuMsPerOp: { readonly gateway: number; readonly supervisors: number; readonly clients: number };
  /** PostgreSQL: queries the gateway sent per update during the run (bench/lib/pg-count.mjs). */
  readonly pgQueriesPerOp?: number;
  /** Whole-machine CPU busy during the run, percent. */
  readonly machineBusyPercent: number;
  /** Where the machine's CPU went during the run, in percent of one core. */
  readonly cpuPercent: { readonly gateway: number; readonly supervisors: number; readonly clients: number; readonly rest: number };
  readonly bootstrapMs: number;
  readonly profile?: ProfileEntry[];
}

export async function fleetScenario(ctx: Context, backend: Backend, o: FleetOptions): Promise<FleetScenarioResult> {
  const groups = groupsFor("f", o.sandboxes, Math.ceil(o.sandboxes / o.supervisors));
  const names = groups.flatMap(groupNames);
  const countPg = backend === "postgres";
  const stack = await Stack.start({ backend, groups, label: `fleet-${backend}`, countPgQueries: countPg, ...(o.cpuProfDir ? { cpuProfDir: o.cpuProfDir } : {}) });
  let result: FleetScenarioResult;
  const window = { fromUs: 0, toUs: 0 };
  try {
    await createAll(stack, groups);
    const boot = await bootstrapAll(stack, groups, 300_000);
    const tag = o.cpuProfDir ? "prof" : "run";
    ctx.say(`fleet/${backend}${o.cpuProfDir ? " (profiled)" : ""}${o.policyOnly ? " (policy updates only)" : ""}: ${o.ops} waited updates over ${o.sandboxes} sandboxes, ${o.clients} clients × ${o.loopsPerClient} loops`);
    // Sandboxes are dealt to clients round-robin, so no two clients update the same one.
    const tasks = Array.from({ length: o.clients }, (_, c) => ({
      kind: "fleet" as const,
      sandboxes: names.filter((_, i) => i % o.clients === c),
      loops: o.loopsPerClient,
      ops: Math.floor(o.ops / o.clients) + (c < o.ops % o.clients ? 1 : 0),
      tag: `${tag}-c${c}`,
      timeoutMs: 120_000,
      ...(o.policyOnly ? { policyOnly: true } : {}),
    }));
    const supervisorCpu = () => boot.supervisors.reduce((a, c) => a + sampleProc(c.pid).cpuMs, 0);
    let before: ProcSample = stack.gatewaySample();
    let sup0 = 0;
    let m0 = sampleMachine();
    let pg0: Promise<number> = Promise.resolve(0);
    const { results, goAt } = await stack.runTogether(tasks, () => {
      // Asked at the start (SIGUSR2 goes out now; the answer is read later).
      if (countPg) pg0 = stack.pgQueries();
      window.fromUs = monotonicUs();
      before = stack.gatewaySample();
      sup0 = supervisorCpu();
      m0 = sampleMachine();
    });
    window.toUs = monotonicUs();
    const after = stack.gatewaySample();
    const sup1 = supervisorCpu();
    const m1 = sampleMachine();
    const pgQueries = countPg ? (await stack.pgQueries()) - (await pg0) : 0;
    const wallMs = Math.max(...results.map((r) => r.endAt)) - goAt;
    const share = (cpuMs: number) => round((cpuMs / (after.at - before.at)) * 100);
    const clientMs = results.reduce((a, r) => a + r.cpuMs, 0);
    const merged = merge(results);
    const operations = merged.ids.length;
    const problems = [
      ...merged.lost.map((l) => `lost: ${l}`),
      ...merged.stuck.map((s) => `stuck: ${s}`),
      ...merged.mismatches.map((m) => `unexpected: ${m}`),
    ];
    if (problems.length > 0) throw new IntegrityError(`fleet/${backend}: ${problems.length} problem(s): ${problems.slice(0, 5).join("; ")}`);
    if (operations !== o.ops) throw new IntegrityError(`fleet/${backend}: ${o.ops - operations} operation(s) without an id (lost)`);
    await drained(stack, 30_000, `fleet/${backend}`);
    const check = await verify(stack, merged, `fleet/${backend}`);
    result = {
      backend,
      ...(o.policyOnly ? { policyOnly: true } : {}),
      sandboxes: o.sandboxes,
      supervisorProcesses: groups.length,
      clientProcesses: o.clients,
      concurrency: o.clients * o.loopsPerClient,
      operations,
      wallMs: Math.round(wallMs),
      completedPerSec: round((operations / wallMs) * 1000, 0),
      latencyMs: summarize(merged.latencyMs),
      byKind: merged.byKind,
      byState: check.byState,
      lost: 0,
      stuck: 0,
      gatewayCpuPercent: round(cpuPercent(before, after)),
      gatewayCpuMsPerOp: round((after.cpuMs - before.cpuMs) / operations, 2),
      gatewayPeakRssMb: mb(after.peakRssBytes),
      ...(countPg ? { pgQueriesPerOp: round(pgQueries / operations, 2) } : {}),
      cpuMsPerOp: { gateway: round((after.cpuMs - before.cpuMs) / operations, 3), supervisors: round((sup1 - sup0) / operations, 3), clients: round(clientMs / operations, 3) },
      machineBusyPercent: round(machineBusyPercent(m0, m1)),
      cpuPercent: {
        gateway: share(after.cpuMs - before.cpuMs),
        supervisors: share(sup1 - sup0),
        clients: share(clientMs),
        rest: share(Math.max(0, machineBusyMs(m0, m1) - (after.cpuMs - before.cpuMs) - (sup1 - sup0) - clientMs)),
      },
      bootstrapMs: Math.round(boot.ms),
    };
  } catch (err) {
    throw stack.keepLogs(err);
  } finally {
    await stack.stop();
  }
  if (o.cpuProfDir) {
    const files = readdirSync(o.cpuProfDir).filter((f) => f.endsWith(".cpuprofile"));
    if (files.length > 0) return { ...result, profile: topSelfTime(files.map((f) => join(o.cpuProfDir!, f)), 15, window) };
  }
  return result;
}

function merge(rs: readonly FleetResult[]): FleetResult {
  return {
    ids: rs.flatMap((r) => r.ids),
    expect: rs.flatMap((r) => r.expect),
    latencyMs: rs.flatMap((r) => r.latencyMs),
    byKind: rs.reduce((a, r) => addCounts(a, r.byKind), {} as Record<string, number>),
    byState: rs.reduce((a, r) => addCounts(a, r.byState), {} as Record<string, number>),
    mismatches: rs.flatMap((r) => r.mismatches),
    lost: rs.flatMap((r) => r.lost),
    stuck: rs.flatMap((r) => r.stuck),
    endAt: Math.max(...rs.map((r) => r.endAt)),
    cpuMs: rs.reduce((a, r) => a + r.cpuMs, 0),
  };
}
