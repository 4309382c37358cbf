// The probe shape as a scenario: 64 sandboxes on one supervisor process, one SDK client process
// with 32 waited policy updates in flight (each loop owns two sandboxes), N updates after
// PROBE_WARMUP_OPS untimed ones in the same client process. Measured: updates/s, latency, and CPU per update of the
// gateway, the supervisor and the client (utime + stime), plus the store work per update from the
// gateway's /metrics (and, on PostgreSQL, the queries it sent). The floor runs the same shape
// (bench/floor/scenarios.ts floorUpdates).

import { machineBusyPercent, sampleSpan, type Child } from "../lib/proc.js";
import { groupNames, Stack, type Backend, type Group } from "../lib/stack.js";
import { storeCounters, type StoreCounters } from "../lib/store-counters.js";
import { mb, round, summarize, type Summary } from "../lib/stats.js";
import { bootstrapAll, createAll, drained, IntegrityError, type Context } from "./common.js";

export const PROBE_SHAPE = { sandboxes: 64, inFlight: 32 } as const;
/**
 * Untimed updates the measured client process runs first, ours and the floor's alike: with one
 * warm-up update per sandbox in another process (until 2026-12-01), a 2,000-update run read
 * 0.2–0.3× lower than a 5,000-update one, start-up and compilation weighing more in it.
 */
export const PROBE_WARMUP_OPS = 1_000;

export interface ProbeResult extends WaitedMeasure {
  readonly backend: Backend;
  /** The gateway served TLS (clients and supervisors verifying its certificate). */
  readonly tls?: boolean;
  readonly sandboxes: number;
  readonly concurrency: number;
}

/** What one timed run of waited updates measured (the probe's, and each level of the group-commit scenario). */
export interface WaitedMeasure {
  readonly operations: number;
  readonly wallMs: number;
  readonly completedPerSec: number;
  readonly latencyMs: Summary;
  readonly cpuMsPerOp: { readonly gateway: number; readonly supervisors: number; readonly clients: number };
  readonly gatewayPeakRssMb: number;
  readonly machineBusyPercent: number;
  readonly store: StoreCounters;
  /** PostgreSQL with `countPg`: queries the gateway sent per update. */
  readonly pgQueriesPerOp?: number;
}

/**
 * `ops` waited policy updates from one client process with `loops` in flight over `names` (each
 * loop owns its own sandboxes), after `warmupOps` untimed ones in that process; every counter is
 * read once the client has warmed up, so the warm-up's store calls and queries are not the run's.
 * Throws IntegrityError when an update is lost, stuck or not applied, or one is left pending.
 */
export async function measureWaited(
  stack: Stack,
  supervisors: readonly Child[],
  label: string,
  o: {
    readonly names: readonly string[];
    readonly loops: number;
    readonly ops: number;
    readonly warmupOps: number;
    readonly countPg?: boolean;
    /** Given every update's latency, ms (to summarize several runs as one: probe-rounds.ts). */
    readonly onLatencies?: (ms: readonly number[]) => void;
  },
): Promise<WaitedMeasure> {
  const task = { kind: "waited" as const, sandboxes: o.names, loops: o.loops, timeoutMs: 60_000 };
  const span = () => sampleSpan(stack.gateway.pid!, supervisors.map((c) => c.pid));
  let metrics0 = new Map<string, number>();
  let pg0 = 0;
  let s0 = span();
  const { results, goAt } = await stack.runTogether([{ ...task, ops: o.ops, tag: "run", ...(o.warmupOps > 0 ? { warmupOps: o.warmupOps } : {}) }], async () => {
    metrics0 = await stack.metrics();
    if (o.countPg) pg0 = await stack.pgQueries();
    s0 = span();
  });
  const s1 = span();
  const r = results[0]!;
  const problems = [...r.lost.map((l) => `lost: ${l}`), ...r.stuck.map((s) => `stuck: ${s}`), ...r.mismatches];
  if (problems.length > 0 || r.ids.length !== o.ops) throw new IntegrityError(`${label}: ${r.ids.length} of ${o.ops} with an outcome; ${problems.length} problem(s): ${problems.slice(0, 5).join("; ")}`);
  const pg1 = o.countPg ? await stack.pgQueries() : 0;
  const metrics1 = await stack.metrics();
  await drained(stack, 30_000, label);
  const wallMs = r.endAt - goAt;
  o.onLatencies?.(r.latencyMs);
  return {
    operations: o.ops,
    wallMs: Math.round(wallMs),
    completedPerSec: round((o.ops / wallMs) * 1000, 0),
    latencyMs: summarize(r.latencyMs),
    cpuMsPerOp: { gateway: round((s1.gateway.cpuMs - s0.gateway.cpuMs) / o.ops, 3), supervisors: round((s1.supervisorsCpuMs - s0.supervisorsCpuMs) / o.ops, 3), clients: round(r.cpuMs / o.ops, 3) },
    gatewayPeakRssMb: mb(s1.gateway.peakRssBytes),
    machineBusyPercent: round(machineBusyPercent(s0.machine, s1.machine)),
    store: storeCounters(metrics0, metrics1, o.ops),
    ...(o.countPg ? { pgQueriesPerOp: round((pg1 - pg0) / o.ops, 2) } : {}),
  };
}

export async function probeScenario(ctx: Context, backend: Backend, ops: number, options: { readonly tls?: boolean } = {}): Promise<ProbeResult> {
  const group: Group = { prefix: "p-", count: PROBE_SHAPE.sandboxes };
  const names = groupNames(group);
  const tls = options.tls === true;
  const label = `probe/${backend}${tls ? "+tls" : ""}`;
  const stack = await Stack.start({ backend, groups: [group], label: `probe-${backend}${tls ? "-tls" : ""}`, countPgQueries: backend === "postgres", tls });
  try {
    await createAll(stack, [group]);
    const boot = await bootstrapAll(stack, [group], 60_000);
    ctx.say(`${label}: ${ops} waited updates, ${PROBE_SHAPE.inFlight} in flight on ${PROBE_SHAPE.sandboxes} sandboxes`);
    const m = await measureWaited(stack, boot.supervisors, label, { names, loops: PROBE_SHAPE.inFlight, ops, warmupOps: PROBE_WARMUP_OPS, countPg: backend === "postgres" });
    return { backend, ...(tls ? { tls } : {}), sandboxes: names.length, concurrency: PROBE_SHAPE.inFlight, ...m };
  } catch (err) {
    throw stack.keepLogs(err);
  } finally {
    await stack.stop();
  }
}
