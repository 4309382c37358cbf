// The targets of issue 32 (performance by design) with "now" from a run: each judged on ratios
// measured back to back in that run (to the floor, or PostgreSQL to SQLite), except the
// sequential latency, which is held to what the last full run before the issue measured.
// Reported, never enforced. The values each target judges come from issue32Judged, which the
// medians over several runs (bench/medians.ts) read as well.

import { div, fmt, times, type IssueTarget } from "./ratios.js";
import type { Results } from "./results.js";

/** Sequential commit→applied p50 on SQLite before issue 32: the full run of 2026-12-02 (bench/results/full.md at 35ada22). */
export const SEQUENTIAL_BEFORE = { ms: 5.64, ratio: 1.03 } as const;

export type Named = { readonly what: string; readonly v: number | undefined };

/** One target: the ratios it judges in a run and the test each must pass. */
export interface JudgedTarget {
  readonly measure: string;
  /** The measure in a few words, for a row per ratio (bench/medians.ts). */
  readonly short: string;
  readonly target: string;
  readonly items: readonly Named[];
  readonly ok: (v: number) => boolean;
}

const verdict = (ok: boolean | undefined): IssueTarget["verdict"] => (ok === undefined ? "n/a" : ok ? "met" : "not met");
/** undefined (n/a) when nothing was measured or a side is missing; else whether every value passes. */
const everyPasses = (t: Pick<JudgedTarget, "items" | "ok">) => (t.items.length === 0 || t.items.some((x) => x.v === undefined) ? undefined : t.items.every((x) => t.ok(x.v!)));
/** A ratio as printed: two decimals, or three where two would read as the other side of its target (0.798 is not 0.80). */
export function shown(v: number | undefined, ok: (v: number) => boolean): string {
  if (v === undefined || !Number.isFinite(v) || v >= 10) return times(v);
  return ok(Number(v.toFixed(2))) === ok(v) ? times(v) : `${v.toFixed(3)}×`;
}
const list = (t: JudgedTarget) => (t.items.length === 0 ? "–" : t.items.map((x) => `${x.what} ${shown(x.v, t.ok)}`).join(", "));
// The sequential ratio is judged as the report prints it (two decimals): the machine moves the milliseconds far more.
const sequentialOk = (v: number) => Math.round(v * 100) / 100 <= SEQUENTIAL_BEFORE.ratio;

/** The ratios each of issue 32's targets judges in run `r`, in the report's order. */
export function issue32Judged(r: Results): JudgedTarget[] {
  const f = r.floor;
  const probeSql = r.probe.find((p) => p.backend === "sqlite");
  const probePg = r.probe.find((p) => p.backend === "postgres");
  const fleetSql = r.fleet.find((x) => x.backend === "sqlite");
  const fleetPg = r.fleet.find((x) => x.backend === "postgres");
  const levels = r.groupCommit?.levels ?? [];
  const gc = (of: (l: (typeof levels)[number]) => number | undefined): Named[] => levels.map((l) => ({ what: `group commit ${l.inFlight}`, v: of(l) })).filter((x) => x.v !== undefined);
  const lat = r.latency.find((l) => l.backend === "sqlite");
  const top = levels.find((l) => l.inFlight === 128);
  return [
    {
      measure: "Waited updates/s (SQLite), probe, fleet and group-commit shapes",
      short: "Waited updates/s ÷ floor",
      target: "≥ 0.8× floor",
      items: [
        ...(probeSql && f.probe ? [{ what: "probe", v: div(probeSql.completedPerSec, f.probe.completedPerSec) }] : []),
        ...(fleetSql && f.fleet ? [{ what: "fleet", v: div(fleetSql.completedPerSec, f.fleet.completedPerSec) }] : []),
        ...gc((l) => (l.sqlite && l.floor ? div(l.sqlite.completedPerSec, l.floor.completedPerSec) : undefined)),
      ],
      ok: (v) => v >= 0.8,
    },
    {
      // The shapes that do only what the floor does (waited policy updates); the fleet's also has settings, invalid policies and supersession.
      measure: "Gateway CPU per update (SQLite), probe and group-commit shapes",
      short: "Gateway CPU per update ÷ floor",
      target: "≤ 1.3× floor",
      items: [
        ...(probeSql && f.probe ? [{ what: "probe", v: div(probeSql.cpuMsPerOp.gateway, f.probe.cpuMsPerOp.gateway) }] : []),
        ...gc((l) => (l.sqlite && l.floor ? div(l.sqlite.cpuMsPerOp.gateway, l.floor.cpuMsPerOp.gateway) : undefined)),
      ],
      ok: (v) => v <= 1.3,
    },
    {
      measure: "Supervisor CPU per apply (reference supervisor, simulated runtime), probe shape",
      short: "Supervisor CPU per apply ÷ floor with the provider message",
      target: "≤ 1.3× the floor with the provider message",
      items: probeSql && f.probeProviderToo ? [{ what: "probe", v: div(probeSql.cpuMsPerOp.supervisors, f.probeProviderToo.cpuMsPerOp.supervisors) }] : [],
      ok: (v) => v <= 1.3,
    },
    {
      measure: "PostgreSQL waited updates/s against SQLite's (same run)",
      short: "PostgreSQL ÷ SQLite updates/s",
      target: "≥ 0.6× SQLite",
      items: [
        ...(probePg && probeSql ? [{ what: "probe", v: div(probePg.completedPerSec, probeSql.completedPerSec) }] : []),
        ...(fleetPg && fleetSql ? [{ what: "fleet", v: div(fleetPg.completedPerSec, fleetSql.completedPerSec) }] : []),
        ...gc((l) => (l.postgres && l.sqlite ? div(l.postgres.completedPerSec, l.sqlite.completedPerSec) : undefined)),
      ],
      ok: (v) => v >= 0.6,
    },
    {
      measure: "Sequential commit→applied p50, SQLite",
      short: "Sequential commit→applied p50 ÷ floor",
      target: `no worse than before: ${times(SEQUENTIAL_BEFORE.ratio)} floor (${SEQUENTIAL_BEFORE.ms} ms, full run of 2026-12-02)`,
      items: lat && f.latency ? [{ what: "sequential", v: div(lat.waitedMs.p50, f.latency.waitedMs.p50) }] : [],
      ok: sequentialOk,
    },
    {
      measure: "Stretch: waited updates/s at 128 in flight (SQLite) above the floor's own",
      short: "Stretch: waited updates/s ÷ floor",
      target: "> 1× floor",
      items: top?.sqlite && top.floor ? [{ what: "group commit 128", v: div(top.sqlite.completedPerSec, top.floor.completedPerSec) }] : [],
      ok: (v) => v > 1,
    },
  ];
}

export function issue32Targets(r: Results): IssueTarget[] {
  const f = r.floor;
  const [tput, gw, sup, pg, seq, stretch] = issue32Judged(r) as [JudgedTarget, JudgedTarget, JudgedTarget, JudgedTarget, JudgedTarget, JudgedTarget];
  const probeSql = r.probe.find((p) => p.backend === "sqlite");
  const fleetSql = r.fleet.find((x) => x.backend === "sqlite");
  const row = (t: JudgedTarget, now: string): IssueTarget => ({ measure: t.measure, now, target: t.target, verdict: verdict(everyPasses(t)) });
  // The fleet judged is ours with its whole mix against the floor's policy updates; the same shape
  // with policy updates alone, as the floor sends, is shown beside it.
  const like = r.fleetPolicyOnly && f.fleet ? div(r.fleetPolicyOnly.completedPerSec, f.fleet.completedPerSec) : undefined;
  const gwFleet = fleetSql?.cpuMsPerOp && f.fleet ? div(fleetSql.cpuMsPerOp.gateway, f.fleet.cpuMsPerOp.gateway) : undefined;
  const supOne = probeSql && f.probe ? div(probeSql.cpuMsPerOp.supervisors, f.probe.cpuMsPerOp.supervisors) : undefined;
  const lat = r.latency.find((l) => l.backend === "sqlite");
  const top = r.groupCommit?.levels.find((l) => l.inFlight === 128);
  const stretchPg = top?.postgres && top.floor ? div(top.postgres.completedPerSec, top.floor.completedPerSec) : undefined;
  const one = (t: JudgedTarget) => t.items[0]?.v;
  return [
    row(tput, `${list(tput)}${like === undefined ? "" : ` (fleet with policy updates only, the floor's own messages, not judged: ${times(like)})`}`),
    row(gw, `${list(gw)}${gwFleet === undefined ? "" : ` (fleet, not judged: ${times(gwFleet)})`}`),
    row(sup, one(sup) === undefined ? "–" : `${shown(one(sup), sup.ok)} the floor with the provider message${supOne === undefined ? "" : ` (${times(supOne)} the floor itself)`}`),
    row(pg, list(pg)),
    row(seq, lat ? `${shown(one(seq), seq.ok)}: ${fmt(lat.waitedMs.p50)} ms${f.latency ? ` (floor ${fmt(f.latency.waitedMs.p50)} ms)` : ""}` : "–"),
    row(stretch, one(stretch) === undefined ? "–" : `${shown(one(stretch), stretch.ok)} floor${stretchPg === undefined ? "" : ` (PostgreSQL ${times(stretchPg)})`}`),
  ];
}
