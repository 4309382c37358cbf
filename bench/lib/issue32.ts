// The targets of issue 32 (performance by design) with "now" from a run: each judged on ratios
// measured back to back in that run (to the floor, or PostgreSQL to SQLite), except the
// sequential latency, which is held to what the last full run before the issue measured.
// Reported, never enforced.

import { div, fmt, times, type IssueTarget } from "./ratios.js";
import type { Results } from "./results.js";

/** Sequential commit→applied p50 on SQLite before issue 32: the full run of 2026-12-02 (bench/results/full.md at 35ada22). */
export const SEQUENTIAL_BEFORE = { ms: 5.64, ratio: 1.03 } as const;

type Named = { readonly what: string; readonly v: number | undefined };

const verdict = (ok: boolean | undefined): IssueTarget["verdict"] => (ok === undefined ? "n/a" : ok ? "met" : "not met");
/** undefined (n/a) when nothing was measured or a side is missing; else whether every value passes. */
const every = (xs: readonly Named[], ok: (v: number) => boolean) => (xs.length === 0 || xs.some((x) => x.v === undefined) ? undefined : xs.every((x) => ok(x.v!)));
const list = (xs: readonly Named[]) => (xs.length === 0 ? "–" : xs.map((x) => `${x.what} ${times(x.v)}`).join(", "));

export function issue32Targets(r: Results): IssueTarget[] {
  const f = r.floor;
  const out: IssueTarget[] = [];
  const probeSql = r.probe.find((p) => p.backend === "sqlite");
  const probePg = r.probe.find((p) => p.backend === "postgres");
  const fleetSql = r.fleet.find((x) => x.backend === "sqlite");
  const fleetPg = r.fleet.find((x) => x.backend === "postgres");
  const levels = r.groupCommit?.levels ?? [];
  const gc = (of: (l: (typeof levels)[number]) => number | undefined): Named[] => levels.map((l) => ({ what: `group commit ${l.inFlight}`, v: of(l) })).filter((x) => x.v !== undefined);

  // Waited updates/s against the floor, SQLite, at every shape measured with a floor.
  const tput: Named[] = [
    ...(probeSql && f.probe ? [{ what: "probe", v: div(probeSql.completedPerSec, f.probe.completedPerSec) }] : []),
    ...(fleetSql && f.fleet ? [{ what: "fleet", v: div(fleetSql.completedPerSec, f.fleet.completedPerSec) }] : []),
    ...gc((l) => (l.sqlite && l.floor ? div(l.sqlite.completedPerSec, l.floor.completedPerSec) : undefined)),
  ];
  // The fleet judged is ours with its whole mix against the floor's policy updates; the same shape
  // with policy updates alone, as the floor sends, is shown beside it.
  const like = r.fleetPolicyOnly && f.fleet ? div(r.fleetPolicyOnly.completedPerSec, f.fleet.completedPerSec) : undefined;
  out.push({
    measure: "Waited updates/s (SQLite), probe, fleet and group-commit shapes",
    now: `${list(tput)}${like === undefined ? "" : ` (fleet with policy updates only, the floor's own messages, not judged: ${times(like)})`}`,
    target: "≥ 0.8× floor",
    verdict: verdict(every(tput, (v) => v >= 0.8)),
  });

  // Gateway CPU per update: the shapes that do only what the floor does (waited policy updates); the fleet's also has settings, invalid policies and supersession.
  const gw: Named[] = [
    ...(probeSql && f.probe ? [{ what: "probe", v: div(probeSql.cpuMsPerOp.gateway, f.probe.cpuMsPerOp.gateway) }] : []),
    ...gc((l) => (l.sqlite && l.floor ? div(l.sqlite.cpuMsPerOp.gateway, l.floor.cpuMsPerOp.gateway) : undefined)),
  ];
  const gwFleet = fleetSql?.cpuMsPerOp && f.fleet ? div(fleetSql.cpuMsPerOp.gateway, f.fleet.cpuMsPerOp.gateway) : undefined;
  out.push({
    measure: "Gateway CPU per update (SQLite), probe and group-commit shapes",
    now: `${list(gw)}${gwFleet === undefined ? "" : ` (fleet, not judged: ${times(gwFleet)})`}`,
    target: "≤ 1.3× floor",
    verdict: verdict(every(gw, (v) => v <= 1.3)),
  });

  const fp = f.probeProviderToo;
  const sup = probeSql && fp ? div(probeSql.cpuMsPerOp.supervisors, fp.cpuMsPerOp.supervisors) : undefined;
  const supOne = probeSql && f.probe ? div(probeSql.cpuMsPerOp.supervisors, f.probe.cpuMsPerOp.supervisors) : undefined;
  out.push({
    measure: "Supervisor CPU per apply (reference supervisor, simulated runtime), probe shape",
    now: sup === undefined ? "–" : `${times(sup)} the floor with the provider message${supOne === undefined ? "" : ` (${times(supOne)} the floor itself)`}`,
    target: "≤ 1.3× the floor with the provider message",
    verdict: verdict(sup === undefined ? undefined : sup <= 1.3),
  });

  const pg: Named[] = [
    ...(probePg && probeSql ? [{ what: "probe", v: div(probePg.completedPerSec, probeSql.completedPerSec) }] : []),
    ...(fleetPg && fleetSql ? [{ what: "fleet", v: div(fleetPg.completedPerSec, fleetSql.completedPerSec) }] : []),
    ...gc((l) => (l.postgres && l.sqlite ? div(l.postgres.completedPerSec, l.sqlite.completedPerSec) : undefined)),
  ];
  out.push({ measure: "PostgreSQL waited updates/s against SQLite's (same run)", now: list(pg), target: "≥ 0.6× SQLite", verdict: verdict(every(pg, (v) => v >= 0.6)) });

  const lat = r.latency.find((l) => l.backend === "sqlite");
  const latRatio = lat && f.latency ? div(lat.waitedMs.p50, f.latency.waitedMs.p50) : undefined;
  out.push({
    measure: "Sequential commit→applied p50, SQLite",
    now: lat ? `${times(latRatio)}: ${fmt(lat.waitedMs.p50)} ms${f.latency ? ` (floor ${fmt(f.latency.waitedMs.p50)} ms)` : ""}` : "–",
    target: `no worse than before: ${times(SEQUENTIAL_BEFORE.ratio)} floor (${SEQUENTIAL_BEFORE.ms} ms, full run of 2026-12-02)`,
    // Judged on the ratio, which the machine moves far less than the milliseconds.
    verdict: verdict(latRatio === undefined ? undefined : Math.round(latRatio * 100) / 100 <= SEQUENTIAL_BEFORE.ratio),
  });

  const top = levels.find((l) => l.inFlight === 128);
  const stretch = top?.sqlite && top.floor ? div(top.sqlite.completedPerSec, top.floor.completedPerSec) : undefined;
  const stretchPg = top?.postgres && top.floor ? div(top.postgres.completedPerSec, top.floor.completedPerSec) : undefined;
  out.push({
    measure: "Stretch: waited updates/s at 128 in flight (SQLite) above the floor's own",
    now: stretch === undefined ? "–" : `${times(stretch)} floor${stretchPg === undefined ? "" : ` (PostgreSQL ${times(stretchPg)})`}`,
    target: "> 1× floor",
    verdict: verdict(stretch === undefined ? undefined : stretch > 1),
  });
  return out;
}
