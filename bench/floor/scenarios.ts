// The floor runs, each the shape of one real scenario with the floor stack (bench/floor/*): the
// same process layout, messages, libraries and transport settings, none of the work. Run back to
// back with the real scenario; the report divides ours by these.

import { cpuPercent, machineBusyPercent, sampleProc, sampleSpan, sleep } from "../lib/proc.js";
import { groupNames, type Group } from "../lib/stack.js";
import { mb, round, summarize, type Summary } from "../lib/stats.js";
import { groupsFor, IntegrityError, type Context } from "../scenarios/common.js";
import type { UpdatesResult } from "./client.js";
import { FloorStack, type FloorStats } from "./stack.js";

/** Waited updates at one shape (the probe's or the fleet's). */
export interface FloorUpdatesResult {
  readonly sandboxes: number;
  readonly supervisorProcesses: number;
  readonly clientProcesses: number;
  readonly concurrency: number;
  readonly operations: number;
  readonly wallMs: number;
  readonly completedPerSec: number;
  readonly latencyMs: Summary;
  /** CPU ms per update of each kind of process (supervisors and clients summed over their processes). */
  readonly cpuMsPerOp: { readonly gateway: number; readonly supervisors: number; readonly clients: number };
  readonly gatewayCpuPercent: number;
  readonly gatewayPeakRssMb: number;
  /** Whole-machine CPU busy during the timed part, percent. */
  readonly machineBusyPercent: number;
}

export interface FloorLatencyResult {
  readonly updates: number;
  readonly waitedMs: Summary;
}

export interface FloorScaleResult {
  readonly sessions: number;
  readonly supervisorProcesses: number;
  /** Supervisor processes spawned → every sandbox READY, seen by paging ListSandboxes like the real scale run. */
  readonly bootstrapMs: number;
  /** CPU ms per session until all were READY (as ScaleResult.bootstrapCpuMsPerSession). */
  readonly bootstrapCpuMsPerSession: { readonly gateway: number; readonly supervisors: number };
  readonly rssBeforeMb: number;
  readonly rssAfterMb: number;
  readonly rssPerSessionKb: number;
}

export interface FloorRecoveryResult {
  readonly sessions: number;
  readonly supervisorProcesses: number;
  /** Gateway spawned → listening. */
  readonly startToListeningMs: number;
  /** Gateway spawned → every session re-opened and bootstrapped (supervisors started when it listened). */
  readonly startToAllReadyMs: number;
  /** CPU ms per session until then: the gateway's (start-up included) and the supervisor processes'. */
  readonly cpuMsPerSession: { readonly gateway: number; readonly supervisors: number };
}

const PER_PROCESS = 2_500;

export function checkStats(what: string, stats: FloorStats | undefined, sessions: number): void {
  if (!stats) throw new IntegrityError(`${what}: the floor gateway did not report its counters`);
  if (stats.unmatched > 0) throw new IntegrityError(`${what}: ${stats.unmatched} supervisor result(s) matched no update in flight`);
  if (stats.ready !== sessions) throw new IntegrityError(`${what}: ${stats.ready} of ${sessions} sessions bootstrapped at the end`);
}

function checkUpdates(what: string, rs: readonly UpdatesResult[], ops: number): void {
  const lost = rs.flatMap((r) => r.lost);
  const wrong = rs.flatMap((r) => r.mismatches);
  const done = rs.reduce((a, r) => a + r.completed, 0);
  if (lost.length > 0 || wrong.length > 0 || done !== ops) {
    throw new IntegrityError(`${what}: ${done} of ${ops} completed, ${lost.length} lost, ${wrong.length} wrong: ${[...lost, ...wrong].slice(0, 5).join("; ")}`);
  }
}

/** Runs `fn` on a started floor stack; stops it, checks its counters, keeps its logs on failure. */
async function withFloor<T>(what: string, sessions: number, fn: (s: FloorStack) => Promise<T>, o: { providerToo?: boolean; created?: readonly Group[] } = {}): Promise<T> {
  const stack = await FloorStack.start({ expectReady: sessions, ...(o.providerToo ? { providerToo: true } : {}), ...(o.created ? { created: o.created } : {}) });
  let result: T;
  try {
    result = await fn(stack);
  } catch (err) {
    await stack.stop().catch(() => undefined);
    throw stack.keepLogs(err);
  }
  checkStats(what, await stack.stop(), sessions);
  return result;
}

/**
 * Waited policy updates: `sandboxes` on `supervisors` processes, `clients` processes × `loops`,
 * `ops` in all; `warmupOps`: that many untimed updates first, in the measured client processes
 * (split among them), before they say ready;
 * `providerToo`: each update also delivers a provider-environment update (two messages and two
 * results per policy change, as the protocol has it; the gateway's --provider-too).
 */
export async function floorUpdates(
  ctx: Context,
  what: string,
  o: { sandboxes: number; supervisors: number; clients: number; loopsPerClient: number; ops: number; warmupOps: number; providerToo?: boolean },
): Promise<FloorUpdatesResult> {
  const groups = groupsFor("f", o.sandboxes, Math.ceil(o.sandboxes / o.supervisors));
  const names = groups.flatMap(groupNames);
  return withFloor(what, o.sandboxes, async (stack) => {
    await stack.bootstrap(groups, 300_000);
    ctx.say(`${what}: ${o.ops} waited updates over ${o.sandboxes} sandboxes, ${o.clients} clients × ${o.loopsPerClient} loops (floor${o.providerToo ? ", with the provider message" : ""})`);
    return floorUpdatesOn(stack, what, names, o);
  }, o.providerToo ? { providerToo: true } : {});
}

/**
 * One timed run of waited updates on a floor stack whose sessions are bootstrapped (`names`, on
 * its supervisor processes): `clients` processes × `loopsPerClient`, `ops` in all, after
 * `warmupOps` untimed ones in the measured processes. Throws IntegrityError on anything lost or wrong.
 */
export async function floorUpdatesOn(
  stack: FloorStack,
  what: string,
  names: readonly string[],
  o: { clients: number; loopsPerClient: number; ops: number; warmupOps: number; onLatencies?: (ms: readonly number[]) => void },
): Promise<FloorUpdatesResult> {
  const tasks = Array.from({ length: o.clients }, (_, c) => ({
    kind: "updates" as const,
    sandboxes: names.filter((_, i) => i % o.clients === c),
    loops: o.loopsPerClient,
    ops: Math.floor(o.ops / o.clients) + (c < o.ops % o.clients ? 1 : 0),
    tag: `run-c${c}`,
    timeoutMs: 120_000,
    ...(o.warmupOps > 0 ? { warmupOps: Math.ceil(o.warmupOps / o.clients) } : {}),
  }));
  const span = () => sampleSpan(stack.gateway.pid!, stack.supervisors.map((c) => c.pid));
  let s0 = span();
  const { results, goAt } = await stack.runTogether(tasks, () => {
    s0 = span();
  });
  const s1 = span();
  checkUpdates(what, results, o.ops);
  const wallMs = Math.max(...results.map((r) => r.endAt)) - goAt;
  o.onLatencies?.(results.flatMap((r) => r.latencyMs));
  return {
    sandboxes: names.length,
    supervisorProcesses: stack.supervisors.length,
    clientProcesses: o.clients,
    concurrency: o.clients * o.loopsPerClient,
    operations: o.ops,
    wallMs: Math.round(wallMs),
    completedPerSec: round((o.ops / wallMs) * 1000, 0),
    latencyMs: summarize(results.flatMap((r) => r.latencyMs)),
    cpuMsPerOp: {
      gateway: round((s1.gateway.cpuMs - s0.gateway.cpuMs) / o.ops, 3),
      supervisors: round((s1.supervisorsCpuMs - s0.supervisorsCpuMs) / o.ops, 3),
      clients: round(results.reduce((a, r) => a + r.cpuMs, 0) / o.ops, 3),
    },
    gatewayCpuPercent: round(cpuPercent(s0.gateway, s1.gateway)),
    gatewayPeakRssMb: mb(s1.gateway.peakRssBytes),
    machineBusyPercent: round(machineBusyPercent(s0.machine, s1.machine)),
  };
}

/** Sequential waited updates of one sandbox (the latency scenario's shape). */
export async function floorLatency(ctx: Context, o: { n: number; warmup: number }): Promise<FloorLatencyResult> {
  const group: Group = { prefix: "lat-", count: 1 };
  return withFloor("latency/floor", 1, async (stack) => {
    await stack.bootstrap([group], 60_000);
    ctx.say(`latency/floor: ${o.n} waited updates (floor)`);
    const r = await stack.run({ kind: "latency", sandbox: groupNames(group)[0]!, n: o.n, warmup: o.warmup });
    if (r.mismatches.length > 0) throw new IntegrityError(`latency/floor: ${r.mismatches.length} wrong: ${r.mismatches.slice(0, 5).join("; ")}`);
    return { updates: o.n, waitedMs: summarize(r.waitedMs) };
  });
}

/** `sessions` sessions opened at once (2,500 per supervisor process) → all READY; gateway memory per held session. */
export async function floorScale(ctx: Context, sessions: number, o: { idleMs: number }): Promise<FloorScaleResult> {
  const groups = groupsFor("s", sessions, PER_PROCESS);
  return withFloor(`scale/${sessions}/floor`, sessions, async (stack) => {
    // As the real run: settle, sample, release a READY watcher and the supervisors together.
    await sleep(1000);
    const base = stack.gatewaySample();
    ctx.say(`scale/${sessions}/floor: ${sessions} sessions from ${groups.length} floor supervisor process(es) started at once`);
    let g0 = stack.gatewaySample();
    const { results, goAt } = await stack.runTogether([{ kind: "ready", count: sessions, intervalMs: sessions > 2000 ? 250 : 100, timeoutMs: Math.max(90_000, sessions * 15) }], () => {
      g0 = stack.gatewaySample();
      for (const g of groups) stack.startSupervisor(g);
    });
    const g1 = stack.gatewaySample();
    const sup = stack.supervisors.reduce((a, c) => a + sampleProc(c.pid).cpuMs, 0);
    const bootstrapMs = results[0]!.readyAt - goAt;
    // The same wait as the real run before its memory sample (2 s settle + the idle window).
    await sleep(2000 + o.idleMs);
    const held = stack.gatewaySample();
    return {
      sessions,
      supervisorProcesses: groups.length,
      bootstrapMs: Math.round(bootstrapMs),
      bootstrapCpuMsPerSession: { gateway: round((g1.cpuMs - g0.cpuMs) / sessions, 3), supervisors: round(sup / sessions, 3) },
      rssBeforeMb: mb(base.rssBytes),
      rssAfterMb: mb(held.rssBytes),
      rssPerSessionKb: round((held.rssBytes - base.rssBytes) / 1024 / sessions),
    };
    // The real run creates every sandbox before its supervisors start, and its watcher pages
    // through all of them from the first poll: the floor lists the same sandboxes.
  }, { created: groups });
}

/** The recovery scenario's floor: a gateway started, and `sessions` sessions re-opened on it as soon as it listens. */
export async function floorRecovery(ctx: Context, sessions: number): Promise<FloorRecoveryResult> {
  const groups = groupsFor("r", sessions, PER_PROCESS);
  ctx.say(`recovery/floor: gateway start → ${sessions} sessions re-opened and bootstrapped (floor)`);
  return withFloor("recovery/floor", sessions, async (stack) => {
    await stack.bootstrap(groups, 600_000);
    const startToAllReadyMs = Math.round(performance.now() - stack.gateway.spawnedAt);
    return {
      sessions,
      supervisorProcesses: groups.length,
      startToListeningMs: Math.round(stack.gatewayStartMs),
      startToAllReadyMs,
      cpuMsPerSession: { gateway: round(stack.gatewaySample().cpuMs / sessions, 3), supervisors: round(stack.supervisors.reduce((a, c) => a + sampleProc(c.pid).cpuMs, 0) / sessions, 3) },
    };
  });
}

/** The --provider-too variant's self-check: 64 sessions, 600 waited updates each delivering both messages; throws on anything lost, wrong or unmatched. */
export async function floorSmokeProviderToo(ctx: Context): Promise<{ updates: number; perSec: number }> {
  const r = await floorUpdates(ctx, "floor/smoke+provider", { sandboxes: 64, supervisors: 1, clients: 1, loopsPerClient: 16, ops: 600, warmupOps: 64, providerToo: true });
  return { updates: r.operations, perSec: r.completedPerSec };
}

/** The floor stack's self-check: 64 sessions, 600 waited updates, 20 sequential; throws on anything lost or wrong. */
export async function floorSmoke(ctx: Context): Promise<{ updates: number; perSec: number }> {
  const r = await floorUpdates(ctx, "floor/smoke", { sandboxes: 64, supervisors: 1, clients: 1, loopsPerClient: 16, ops: 600, warmupOps: 64 });
  await floorLatency({ ...ctx, say: () => {} }, { n: 20, warmup: 2 });
  return { updates: r.operations, perSec: r.completedPerSec };
}
