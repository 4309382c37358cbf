// The probe shape, ours and the floor alternated. On a shared machine whose load drifts over
// minutes, one run of ours and then one of the floor, each ~10 s, put the drift into the ratio:
// the same code read 0.58× to 0.93× the floor within an hour. Here every side's stack (ours per
// backend, the floor, the floor with the provider message) is started and bootstrapped first,
// then each of `rounds` rounds measures every side once, in an order that rotates by one each
// round, so that no side is always first or last. A side's figures are over all its rounds
// (updates/s = all updates ÷ all the timed wall time; CPU per update the mean of equal-sized
// parts); the per-round figures are kept, so that the report can show how far rounds spread.

import { checkStats, floorUpdatesOn, type FloorUpdatesResult } from "../floor/scenarios.js";
import { FloorStack } from "../floor/stack.js";
import type { Child } from "../lib/proc.js";
import { groupNames, Stack, type Backend, type Group } from "../lib/stack.js";
import { median, round, summarize } from "../lib/stats.js";
import { bootstrapAll, createAll, type Context } from "./common.js";
import { measureWaited, PROBE_SHAPE, PROBE_WARMUP_OPS, type ProbeResult, type WaitedMeasure } from "./probe.js";

export type ProbeSide = Backend | "floor" | "floor+provider";

/** One side's figures in one round. */
export interface ProbeRoundEntry {
  readonly side: ProbeSide;
  readonly completedPerSec: number;
  readonly cpuMsPerOp: { readonly gateway: number; readonly supervisors: number; readonly clients: number };
  readonly machineBusyPercent: number;
}

export interface ProbeRoundsResult {
  readonly rounds: number;
  readonly opsPerRound: number;
  /** Per round, in the order the sides ran. */
  readonly perRound: ProbeRoundEntry[][];
}

interface Side {
  readonly side: ProbeSide;
  run(ops: number, onLatencies: (ms: readonly number[]) => void): Promise<WaitedMeasure | FloorUpdatesResult>;
  stop(): Promise<void>;
}

/**
 * Numbers: the mean over `parts`; objects: the same, field by field over every part's fields (a
 * count one part lacks, such as a store call it never made, counts as 0 there).
 */
function meanOf<T>(parts: readonly T[]): T {
  const present = parts.filter((p) => p !== undefined);
  const first = present[0] as unknown;
  if (typeof first === "number") return round((present as readonly number[]).reduce((a, b) => a + b, 0) / parts.length, 3) as T;
  if (first === null || typeof first !== "object") return first as T;
  const out: Record<string, unknown> = {};
  const keys = new Set(present.flatMap((p) => Object.keys(p as object)));
  for (const k of keys) out[k] = meanOf(parts.map((p) => (p as Record<string, unknown> | undefined)?.[k]));
  return out as T;
}

/** Equal-sized runs of one side as one: sums of updates and wall time, latency over all, the rest averaged. */
function combine<T extends WaitedMeasure | FloorUpdatesResult>(parts: readonly T[], latencies: readonly number[]): T {
  const operations = parts.reduce((a, p) => a + p.operations, 0);
  const wallMs = parts.reduce((a, p) => a + p.wallMs, 0);
  const mean = meanOf(parts);
  return {
    ...mean,
    // As storeCounters has them: largest first.
    ...("store" in mean ? { store: { ...mean.store, byCall: Object.fromEntries(Object.entries(mean.store.byCall).sort((a, b) => b[1] - a[1])) } } : {}),
    operations,
    wallMs,
    completedPerSec: round((operations / wallMs) * 1000, 0),
    latencyMs: summarize(latencies),
    gatewayPeakRssMb: Math.max(...parts.map((p) => p.gatewayPeakRssMb)),
  };
}

/** `setUp` on a started stack; if it fails, the stack is stopped with its logs kept and `setUp`'s error thrown. */
async function settingUp<T>(stack: { keepLogs(err: unknown): unknown; stop(): Promise<unknown> }, setUp: () => Promise<T>): Promise<T> {
  try {
    return await setUp();
  } catch (err) {
    // Logs kept before the stop, which would remove them; the set-up's error, not the stop's.
    const kept = stack.keepLogs(err);
    await stack.stop().catch(() => undefined);
    throw kept;
  }
}

async function ourSide(ctx: Context, backend: Backend): Promise<Side> {
  const group: Group = { prefix: "p-", count: PROBE_SHAPE.sandboxes };
  const names = groupNames(group);
  const stack = await Stack.start({ backend, groups: [group], label: `probe-${backend}`, countPgQueries: backend === "postgres" });
  const supervisors: readonly Child[] = await settingUp(stack, async () => {
    await createAll(stack, [group]);
    return (await bootstrapAll(stack, [group], 60_000)).supervisors;
  });
  ctx.say(`probe/${backend}: ready (${names.length} sandboxes)`);
  return {
    side: backend,
    run: (ops, onLatencies) =>
      measureWaited(stack, supervisors, `probe/${backend}`, { names, loops: PROBE_SHAPE.inFlight, ops, warmupOps: PROBE_WARMUP_OPS, countPg: backend === "postgres", onLatencies }).catch((err: unknown) => {
        throw stack.keepLogs(err);
      }),
    stop: () => stack.stop(),
  };
}

async function floorSide(ctx: Context, providerToo: boolean): Promise<Side> {
  const side: ProbeSide = providerToo ? "floor+provider" : "floor";
  const group: Group = { prefix: "f-", count: PROBE_SHAPE.sandboxes };
  const stack = await FloorStack.start({ expectReady: PROBE_SHAPE.sandboxes, ...(providerToo ? { providerToo } : {}) });
  await settingUp(stack, () => stack.bootstrap([group], 300_000));
  ctx.say(`probe/${side}: ready (${PROBE_SHAPE.sandboxes} sandboxes)`);
  return {
    side,
    run: (ops, onLatencies) =>
      floorUpdatesOn(stack, `probe/${side}`, groupNames(group), { clients: 1, loopsPerClient: PROBE_SHAPE.inFlight, ops, warmupOps: PROBE_WARMUP_OPS, onLatencies }).catch((err: unknown) => {
        throw stack.keepLogs(err);
      }),
    stop: async () => checkStats(`probe/${side}`, await stack.stop(), PROBE_SHAPE.sandboxes),
  };
}

/**
 * `ops` waited updates per side in `rounds` equal parts, the sides alternated. Returns ours per
 * backend as ProbeResults and the floors as FloorUpdatesResults, as the separate runs did.
 */
export async function probeRoundsScenario(
  ctx: Context,
  o: { readonly backends: readonly Backend[]; readonly withFloor: boolean; readonly ops: number; readonly rounds: number },
): Promise<{ probe: ProbeResult[]; floor?: FloorUpdatesResult; floorProviderToo?: FloorUpdatesResult; rounds: ProbeRoundsResult }> {
  const sides: Side[] = [];
  let result: Awaited<ReturnType<typeof alternate>>;
  try {
    result = await alternate(ctx, o, sides);
  } catch (err) {
    // The run's own failure is the one to report, not a stop's after it.
    await Promise.allSettled(sides.map((s) => s.stop()));
    throw err;
  }
  const stopped = await Promise.allSettled(sides.map((s) => s.stop()));
  const failed = stopped.find((r): r is PromiseRejectedResult => r.status === "rejected");
  // A floor whose counters are wrong at the end makes every ratio to it meaningless.
  if (failed) throw failed.reason;
  return result;
}

async function alternate(
  ctx: Context,
  o: { readonly backends: readonly Backend[]; readonly withFloor: boolean; readonly ops: number; readonly rounds: number },
  sides: Side[],
): Promise<{ probe: ProbeResult[]; floor?: FloorUpdatesResult; floorProviderToo?: FloorUpdatesResult; rounds: ProbeRoundsResult }> {
  const perRound: ProbeRoundEntry[][] = [];
  const opsPerRound = Math.ceil(o.ops / o.rounds);
  for (const b of o.backends) sides.push(await ourSide(ctx, b));
  if (o.withFloor) {
    sides.push(await floorSide(ctx, false));
    if (o.backends.includes("sqlite")) sides.push(await floorSide(ctx, true));
  }
  const parts = new Map<ProbeSide, { measures: (WaitedMeasure | FloorUpdatesResult)[]; latencies: number[] }>(sides.map((s) => [s.side, { measures: [], latencies: [] }]));
  for (let r = 0; r < o.rounds; r++) {
    const order = sides.map((_, i) => sides[(i + r) % sides.length]!);
    ctx.say(`probe round ${r + 1}/${o.rounds}: ${opsPerRound} waited updates each, ${PROBE_SHAPE.inFlight} in flight: ${order.map((s) => s.side).join(", ")}`);
    const entries: ProbeRoundEntry[] = [];
    for (const s of order) {
      const p = parts.get(s.side)!;
      const m = await s.run(opsPerRound, (xs) => p.latencies.push(...xs));
      p.measures.push(m);
      entries.push({ side: s.side, completedPerSec: m.completedPerSec, cpuMsPerOp: m.cpuMsPerOp, machineBusyPercent: m.machineBusyPercent });
    }
    perRound.push(entries);
  }
  const of = (side: ProbeSide) => {
    const p = parts.get(side);
    return p ? combine(p.measures, p.latencies) : undefined;
  };
  const probe = o.backends.map((backend): ProbeResult => ({ backend, sandboxes: PROBE_SHAPE.sandboxes, concurrency: PROBE_SHAPE.inFlight, ...(of(backend) as WaitedMeasure) }));
  const floor = of("floor") as FloorUpdatesResult | undefined;
  const floorProviderToo = of("floor+provider") as FloorUpdatesResult | undefined;
  return { probe, ...(floor ? { floor } : {}), ...(floorProviderToo ? { floorProviderToo } : {}), rounds: { rounds: o.rounds, opsPerRound, perRound } };
}

/** The probe's per-round ratios: each round's ours ÷ floor, and their median and range. */
export function renderProbeRounds(r: ProbeRoundsResult | undefined): string[] {
  if (!r || r.perRound.length === 0) return [];
  const at = (entries: readonly ProbeRoundEntry[], side: ProbeSide) => entries.find((e) => e.side === side);
  const columns: { head: string; of: (e: readonly ProbeRoundEntry[]) => number | undefined }[] = [];
  const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b === 0 ? undefined : a / b);
  const has = (side: ProbeSide) => r.perRound[0]!.some((e) => e.side === side);
  if (has("sqlite") && has("floor")) {
    columns.push({ head: "SQLite updates/s ÷ floor", of: (e) => ratio(at(e, "sqlite")?.completedPerSec, at(e, "floor")?.completedPerSec) });
    columns.push({ head: "SQLite gateway CPU ÷ floor", of: (e) => ratio(at(e, "sqlite")?.cpuMsPerOp.gateway, at(e, "floor")?.cpuMsPerOp.gateway) });
  }
  if (has("sqlite") && has("floor+provider")) {
    columns.push({ head: "SQLite supervisor CPU ÷ floor with the provider message", of: (e) => ratio(at(e, "sqlite")?.cpuMsPerOp.supervisors, at(e, "floor+provider")?.cpuMsPerOp.supervisors) });
  }
  if (has("postgres") && has("sqlite")) columns.push({ head: "PostgreSQL ÷ SQLite updates/s", of: (e) => ratio(at(e, "postgres")?.completedPerSec, at(e, "sqlite")?.completedPerSec) });
  if (columns.length === 0) return [];
  const cell = (v: number | undefined) => (v === undefined ? "–" : `${v.toFixed(2)}×`);
  const rows = r.perRound.map((e, i) => `| ${i + 1} | ${e.map((x) => x.side).join(", ")} | ${columns.map((c) => cell(c.of(e))).join(" | ")} |`);
  const spread = columns.map((c) => {
    const xs = r.perRound.map(c.of).filter((v): v is number => v !== undefined);
    return xs.length === 0 ? "–" : `**${median(xs).toFixed(2)}×** (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)})`;
  });
  return [
    `### The probe's rounds: ${r.rounds} of ${r.opsPerRound.toLocaleString("en-US")} waited updates per side, the sides alternated`,
    "",
    "Every side's stack runs through the whole step; each round measures each side once, the order rotating by one per round, and each run's client process does its own untimed warm-up first. The figures above are over all rounds; here each round's own ratios, then their median and range.",
    "",
    `| round | order | ${columns.map((c) => c.head).join(" | ")} |`,
    `| --- | --- | ${columns.map(() => "---").join(" | ")} |`,
    ...rows,
    `| median (range) | | ${spread.join(" | ")} |`,
    "",
  ];
}
