// Group commit: how waited policy updates/s grow with the updates in flight (1, 8, 32 and 128 by
// default, `--inflight`), ours on SQLite and PostgreSQL beside the floor at the same count, the
// sides of each count back to back. With one update in flight every COMMIT carries one update;
// with many, concurrent transactions share a COMMIT (SQLite) or run side by side on the pool
// (PostgreSQL), and the store's counters on /metrics say how many COMMITs and transactions each
// update took. Also: the commit-only latency at one in flight (the commit's round trip, as
// scenario 1 measures it), beside the waited latency at one in flight, ours and the floor's.
//
// One stack per side stays up for the whole scenario (a SQLite gateway, a PostgreSQL gateway,
// the floor), each with groupCommitSandboxes() sandboxes on one supervisor process, so that at
// the largest count every loop owns two sandboxes; each count runs a new client process per side
// (its own warm-up first, untimed), in an order that alternates from one count to the next.

import { checkStats, floorUpdatesOn, type FloorUpdatesResult } from "../floor/scenarios.js";
import { FloorStack } from "../floor/stack.js";
import type { Child } from "../lib/proc.js";
import { groupNames, Stack, type Backend } from "../lib/stack.js";
import { summarize, type Summary } from "../lib/stats.js";
import { bootstrapAll, createAll, groupsFor, IntegrityError, type Context } from "./common.js";
import { measureWaited, type WaitedMeasure } from "./probe.js";

export const DEFAULT_INFLIGHT = [1, 8, 32, 128] as const;

/** Sandboxes on each side: two per loop at the largest count, at least 256. */
export const groupCommitSandboxes = (inFlight: readonly number[]) => Math.max(256, 2 * Math.max(...inFlight));

export interface GroupCommitPlan {
  readonly inFlight: readonly number[];
  /** Timed waited updates at a count. */
  readonly opsAt: (inFlight: number) => number;
  /** Untimed updates the measured client process runs first, at the same count. */
  readonly warmupAt: (inFlight: number) => number;
  /** Untimed updates at 32 in flight on each stack once it is up, before anything is measured. */
  readonly primeOps: number;
  /** Sequential commit-only updates (after `warmup` untimed ones). */
  readonly commitOnly: { readonly n: number; readonly warmup: number };
}

export interface GroupCommitLevel {
  readonly inFlight: number;
  /** The sides in the order they ran. */
  readonly order: string[];
  sqlite?: WaitedMeasure;
  postgres?: WaitedMeasure;
  floor?: FloorUpdatesResult;
}

export interface GroupCommitResult {
  readonly sandboxes: number;
  readonly levels: GroupCommitLevel[];
  /** Sequential commit-only calls (updatePolicy without wait; each outcome awaited, untimed, before the next). */
  readonly commitOnly: { readonly backend: Backend; readonly updates: number; readonly commitMs: Summary }[];
}

export function newGroupCommitResult(inFlight: readonly number[]): GroupCommitResult {
  return { sandboxes: groupCommitSandboxes(inFlight), levels: [], commitOnly: [] };
}

type Step = (name: string, fn: () => Promise<void>) => Promise<void>;

/** Runs the scenario through `step` (the runner's: settles the machine, records failures and load), filling `out` as it goes. */
export async function groupCommitScenario(ctx: Context, o: { backends: readonly Backend[]; withFloor: boolean; plan: GroupCommitPlan }, step: Step, out: GroupCommitResult): Promise<void> {
  const n = out.sandboxes;
  const ours = new Map<Backend, { stack: Stack; supervisors: Child[]; names: string[] }>();
  let floor: { stack: FloorStack; names: string[] } | undefined;
  const teardown = async () => {
    const problems: string[] = [];
    for (const { stack } of ours.values()) await stack.stop().catch((e: Error) => problems.push(e.message));
    ours.clear();
    if (floor) {
      const f = floor.stack;
      floor = undefined;
      try {
        checkStats("group-commit/floor", await f.stop(), n);
      } catch (e) {
        problems.push((e as Error).message);
      }
    }
    if (problems.length > 0) throw new IntegrityError(`group-commit, stopping: ${problems.join("; ")}`);
  };

  let up = false;
  await step("group-commit/setup + commit-only", async () => {
    try {
      for (const backend of o.backends) {
        const groups = groupsFor("g", n, 2_500);
        const stack = await Stack.start({ backend, groups, label: `group-commit-${backend}` });
        const names = groups.flatMap(groupNames);
        const entry = { stack, supervisors: [] as Child[], names };
        ours.set(backend, entry);
        await createAll(stack, groups);
        entry.supervisors = (await bootstrapAll(stack, groups, 120_000)).supervisors;
        await measureWaited(stack, entry.supervisors, `group-commit/${backend} (priming)`, { names, loops: 32, ops: o.plan.primeOps, warmupOps: 0 });
        ctx.say(`group-commit/${backend}: ${n} sandboxes READY, primed with ${o.plan.primeOps} updates`);
      }
      if (o.withFloor) {
        const groups = groupsFor("f", n, 2_500);
        const stack = await FloorStack.start({ expectReady: n });
        floor = { stack, names: groups.flatMap(groupNames) };
        await stack.bootstrap(groups, 120_000);
        await floorUpdatesOn(stack, "group-commit/floor (priming)", floor.names, { clients: 1, loopsPerClient: 32, ops: o.plan.primeOps, warmupOps: 0 });
        ctx.say(`group-commit/floor: ${n} sessions bootstrapped, primed with ${o.plan.primeOps} updates`);
      }
      ctx.say(`group-commit: ${o.plan.commitOnly.n} sequential commit-only updates on ${[...ours.keys()].join(", ")}`);
      for (const [backend, { stack, names }] of ours) {
        const r = await stack.run({ kind: "latency", sandbox: names[0]!, n: o.plan.commitOnly.n, warmup: o.plan.commitOnly.warmup, commitOnly: true });
        if (r.mismatches.length > 0) throw new IntegrityError(`group-commit/${backend} commit-only: ${r.mismatches.length} update(s) not applied: ${r.mismatches.slice(0, 5).join("; ")}`);
        out.commitOnly.push({ backend, updates: o.plan.commitOnly.n, commitMs: summarize(r.commitMs) });
      }
      up = true;
    } catch (err) {
      for (const { stack } of ours.values()) stack.keepLogs(err);
      floor?.stack.keepLogs(err);
      await teardown().catch(() => undefined);
      throw err;
    }
  });
  if (!up) return;

  for (const [k, inFlight] of o.plan.inFlight.entries()) {
    await step(`group-commit/${inFlight}`, async () => {
      const ops = o.plan.opsAt(inFlight);
      const warmupOps = o.plan.warmupAt(inFlight);
      const sides: string[] = [...o.backends];
      if (floor) sides.splice(1, 0, "floor");
      // Alternate the order from one count to the next: on a shared machine the side that runs
      // first of a pair tends to read differently from the one that runs second.
      if (k % 2 === 1) sides.reverse();
      const level: GroupCommitLevel = { inFlight, order: sides };
      out.levels.push(level);
      const failed: string[] = [];
      for (const side of sides) {
        const label = `group-commit/${side}/${inFlight}`;
        try {
          if (side === "floor") {
            level.floor = await floorUpdatesOn(floor!.stack, label, floor!.names, { clients: 1, loopsPerClient: inFlight, ops, warmupOps });
            ctx.say(`${label}: ${level.floor.completedPerSec}/s, p50 ${level.floor.latencyMs.p50} ms`);
          } else {
            const s = ours.get(side as Backend)!;
            const m = await measureWaited(s.stack, s.supervisors, label, { names: s.names, loops: inFlight, ops, warmupOps });
            level[side as Backend] = m;
            ctx.say(`${label}: ${m.completedPerSec}/s, p50 ${m.latencyMs.p50} ms, ${m.store.commits} COMMITs and ${m.store.transactions} transactions per update`);
          }
        } catch (err) {
          failed.push((err as Error).message);
        }
      }
      if (k === o.plan.inFlight.length - 1) await teardown().catch((e: Error) => failed.push(e.message));
      if (failed.length > 0) throw new IntegrityError(failed.join("; "));
    });
  }
}

const ms = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? "–" : v >= 100 ? `${Math.round(v)}` : `${Math.round(v * 100) / 100}`);
const num = (v: number) => v.toLocaleString("en-US");
const x = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || b <= 0 ? "–" : `${(a / b).toFixed(2)}×`);

/** The report's section (markdown lines). */
export function renderGroupCommit(r: GroupCommitResult | undefined): string[] {
  if (!r || (r.levels.length === 0 && r.commitOnly.length === 0)) return [];
  const rows: string[] = [];
  for (const l of r.levels) {
    const f = l.floor;
    for (const side of l.order) {
      const m = side === "floor" ? f : l[side as Backend];
      if (!m) continue;
      const store = side === "floor" ? undefined : (m as WaitedMeasure).store;
      const c = m.cpuMsPerOp;
      rows.push(
        `| ${l.inFlight} | ${side} | ${num(m.operations)} | ${num(m.completedPerSec)} | ${side === "floor" ? "" : `**${x(m.completedPerSec, f?.completedPerSec)}**`} | ${ms(m.latencyMs.p50)} | ${ms(m.latencyMs.p99)} | ${c.gateway} | ${c.supervisors} | ${c.clients} | ${store?.transactions ?? "–"} | ${store?.commits ?? "–"} | ${Math.round(m.machineBusyPercent)}% |`,
      );
    }
  }
  const at1 = r.levels.find((l) => l.inFlight === 1);
  return [
    `## Group commit: waited policy updates at ${r.levels.map((l) => l.inFlight).join(", ")} in flight (${num(r.sandboxes)} sandboxes on one supervisor process, one client process)`,
    "",
    "Each count runs ours and the floor back to back (the order alternates by count); ÷ floor is updates/s against the floor at the same count. Transactions and COMMITs per update come from the gateway's /metrics over the timed part: with several updates in flight, SQLite's concurrent transactions share one COMMIT (and one fsync); on PostgreSQL every transaction is its own COMMIT.",
    "",
    "| in flight | side | ops | updates/s | ÷ floor | p50 ms | p99 | CPU ms/update: gateway | supervisor | client | transactions/update | COMMITs/update | machine busy |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
    "",
    ...(r.commitOnly.length > 0
      ? [
          "One update in flight, ms: commit-only calls (updatePolicy without wait: the commit's round trip; each outcome awaited, untimed, before the next) and waited calls (commit → applied) at 1 in flight. The floor has no commit-only call (its gateway answers once the supervisor has), so its waited p50 is the nearest figure: our commit alone against its whole round trip.",
          "",
          "| backend | commit-only updates | commit-only p50 | p99 | waited p50 at 1 in flight | floor waited p50 at 1 in flight |",
          "| --- | --- | --- | --- | --- | --- |",
          ...r.commitOnly.map((c) => `| ${c.backend} | ${num(c.updates)} | ${ms(c.commitMs.p50)} | ${ms(c.commitMs.p99)} | ${ms(at1?.[c.backend]?.latencyMs.p50)} | ${ms(at1?.floor?.latencyMs.p50)} |`),
          "",
        ]
      : []),
  ];
}
