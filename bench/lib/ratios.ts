// Ours ÷ floor: every figure that has a floor, divided by the floor measured back to back in the
// same run (bench/floor), and the targets of issue 15 judged on those ratios (issue 32's are in
// issue32.ts). Reported, never enforced.

import type { Results } from "./results.js";

export interface RatioRow {
  readonly measure: string;
  /** ours ÷ floor (undefined: one side missing). */
  readonly ratio: number | undefined;
  readonly ours: string;
  readonly floor: string;
  /** Whole-machine CPU busy during ours / during the floor, percent, when known. */
  readonly busy?: string;
}

export interface IssueTarget {
  readonly measure: string;
  readonly now: string;
  readonly target: string;
  readonly verdict: "met" | "not met" | "n/a";
}

export const fmt = (v: number, digits = 2) => (v >= 100 ? Math.round(v).toLocaleString("en-US") : String(Math.round(v * 10 ** digits) / 10 ** digits));
export const times = (r: number | undefined) => (r === undefined || !Number.isFinite(r) ? "–" : `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}×`);
export const div = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b <= 0 ? undefined : a / b);
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const n = (v: number) => v.toLocaleString("en-US");

function busyOf(r: Results, ours: string, floor: string): string | undefined {
  const a = r.meta.load.find((l) => l.step === ours);
  const b = r.meta.load.find((l) => l.step === floor);
  return a && b ? `${Math.round(a.machineBusyPercent)}% / ${Math.round(b.machineBusyPercent)}%` : undefined;
}

/**
 * Why the second probe floor: the protocol (shared/contract/UPSTREAM.md) puts the policy hash in
 * the provider environment's fingerprint, so every policy change delivers a sandbox-config AND a
 * provider-environment update, each answered by the supervisor; the floor sends one.
 */
export const PROVIDER_FLOOR_NOTE =
  "The rows \"against the floor with the provider message\" divide by the same probe floor with two ConfigUpdates per waited update (the sandbox config and an empty provider environment with the new policy hash, each answered by the supervisor; the floor gateway's --provider-too): upstream's provider-environment fingerprint includes the policy hash, so the protocol delivers both messages on every policy change, as our gateway does, while the floor sends one.";

type Cpu = { readonly gateway: number; readonly supervisors: number; readonly clients: number };

/**
 * Gateway + supervisors + clients: what one update costs the machine. With every core busy, the
 * updates/s ratio tends to the inverse of this one; it moves far less with other work on the
 * machine than updates/s do.
 */
function totalCpu(shape: string, ours: Cpu, floor: Cpu): RatioRow {
  const a = ours.gateway + ours.supervisors + ours.clients;
  const b = floor.gateway + floor.supervisors + floor.clients;
  return { measure: `All processes' CPU per update (gateway + supervisor + client), ${shape}`, ratio: div(a, b), ours: `${fmt(a)} ms`, floor: `${fmt(b)} ms` };
}

export function ratioRows(r: Results): RatioRow[] {
  const f = r.floor;
  const rows: RatioRow[] = [];
  const push = (row: RatioRow) => rows.push(row);
  for (const p of r.probe) {
    const shape = `probe shape (${p.concurrency} in flight, ${p.sandboxes} sandboxes), ${p.backend}`;
    if (f.probe) {
      const busy = `${Math.round(p.machineBusyPercent)}% / ${Math.round(f.probe.machineBusyPercent)}%`;
      push({ measure: `Waited updates/s, ${shape}`, ratio: div(p.completedPerSec, f.probe.completedPerSec), ours: `${n(p.completedPerSec)}/s`, floor: `${n(f.probe.completedPerSec)}/s`, busy });
      push({ measure: `Gateway CPU per update, ${shape}`, ratio: div(p.cpuMsPerOp.gateway, f.probe.cpuMsPerOp.gateway), ours: `${fmt(p.cpuMsPerOp.gateway)} ms`, floor: `${fmt(f.probe.cpuMsPerOp.gateway)} ms` });
      push({ measure: `Supervisor CPU per update, ${shape}`, ratio: div(p.cpuMsPerOp.supervisors, f.probe.cpuMsPerOp.supervisors), ours: `${fmt(p.cpuMsPerOp.supervisors)} ms`, floor: `${fmt(f.probe.cpuMsPerOp.supervisors)} ms` });
      push({ measure: `Client (SDK) CPU per update, ${shape}`, ratio: div(p.cpuMsPerOp.clients, f.probe.cpuMsPerOp.clients), ours: `${fmt(p.cpuMsPerOp.clients)} ms`, floor: `${fmt(f.probe.cpuMsPerOp.clients)} ms` });
      push(totalCpu(shape, p.cpuMsPerOp, f.probe.cpuMsPerOp));
    }
    const fp = f.probeProviderToo;
    if (fp && p.backend === "sqlite") {
      const vs = "against the floor with the provider message";
      const busy2 = `${Math.round(p.machineBusyPercent)}% / ${Math.round(fp.machineBusyPercent)}%`;
      push({ measure: `Waited updates/s, ${shape} — ${vs}`, ratio: div(p.completedPerSec, fp.completedPerSec), ours: `${n(p.completedPerSec)}/s`, floor: `${n(fp.completedPerSec)}/s`, busy: busy2 });
      push({ measure: `Gateway CPU per update, ${shape} — ${vs}`, ratio: div(p.cpuMsPerOp.gateway, fp.cpuMsPerOp.gateway), ours: `${fmt(p.cpuMsPerOp.gateway)} ms`, floor: `${fmt(fp.cpuMsPerOp.gateway)} ms` });
      push({ measure: `Supervisor CPU per update, ${shape} — ${vs}`, ratio: div(p.cpuMsPerOp.supervisors, fp.cpuMsPerOp.supervisors), ours: `${fmt(p.cpuMsPerOp.supervisors)} ms`, floor: `${fmt(fp.cpuMsPerOp.supervisors)} ms` });
      const t = totalCpu(shape, p.cpuMsPerOp, fp.cpuMsPerOp);
      push({ ...t, measure: `${t.measure} — ${vs}` });
    }
  }
  for (const l of r.groupCommit?.levels ?? []) {
    const fl = l.floor;
    if (!fl) continue;
    for (const backend of ["sqlite", "postgres"] as const) {
      const m = l[backend];
      if (!m) continue;
      const shape = `group commit, ${l.inFlight} in flight (${n(r.groupCommit!.sandboxes)} sandboxes), ${backend}`;
      const busy = `${Math.round(m.machineBusyPercent)}% / ${Math.round(fl.machineBusyPercent)}%`;
      push({ measure: `Waited updates/s, ${shape}`, ratio: div(m.completedPerSec, fl.completedPerSec), ours: `${n(m.completedPerSec)}/s`, floor: `${n(fl.completedPerSec)}/s`, busy });
      push({ measure: `Gateway CPU per update, ${shape}`, ratio: div(m.cpuMsPerOp.gateway, fl.cpuMsPerOp.gateway), ours: `${fmt(m.cpuMsPerOp.gateway)} ms`, floor: `${fmt(fl.cpuMsPerOp.gateway)} ms` });
    }
  }
  const fleetRuns = [...r.fleet.map((x) => ({ x, step: `fleet/${x.backend}`, what: "" })), ...(r.fleetPolicyOnly ? [{ x: r.fleetPolicyOnly, step: "fleet/sqlite, policy updates only", what: ", policy updates only (the floor's own messages)" }] : [])];
  for (const { x, step, what } of fleetRuns) {
    if (!f.fleet) break;
    const busy = busyOf(r, step, "fleet/floor");
    const shape = `fleet shape (${n(x.sandboxes)} sandboxes, ${x.clientProcesses} × ${x.concurrency / x.clientProcesses}), ${x.backend}${what}`;
    push({ measure: `Waited updates/s, ${shape}`, ratio: div(x.completedPerSec, f.fleet.completedPerSec), ours: `${n(x.completedPerSec)}/s`, floor: `${n(f.fleet.completedPerSec)}/s`, ...(busy ? { busy } : {}) });
    if (x.cpuMsPerOp) {
      push({ measure: `Gateway CPU per update, ${shape}`, ratio: div(x.cpuMsPerOp.gateway, f.fleet.cpuMsPerOp.gateway), ours: `${fmt(x.cpuMsPerOp.gateway)} ms`, floor: `${fmt(f.fleet.cpuMsPerOp.gateway)} ms` });
      push({ measure: `Supervisor CPU per update, ${shape}`, ratio: div(x.cpuMsPerOp.supervisors, f.fleet.cpuMsPerOp.supervisors), ours: `${fmt(x.cpuMsPerOp.supervisors)} ms`, floor: `${fmt(f.fleet.cpuMsPerOp.supervisors)} ms` });
      push({ measure: `Client (SDK) CPU per update, ${shape}`, ratio: div(x.cpuMsPerOp.clients, f.fleet.cpuMsPerOp.clients), ours: `${fmt(x.cpuMsPerOp.clients)} ms`, floor: `${fmt(f.fleet.cpuMsPerOp.clients)} ms` });
      push(totalCpu(shape, x.cpuMsPerOp, f.fleet.cpuMsPerOp));
    }
  }
  for (const l of r.latency) {
    if (!f.latency) break;
    const busy = busyOf(r, l.backend === "sqlite" ? "latency/sqlite + polling" : `latency/${l.backend}`, "latency/floor");
    push({ measure: `Sequential commit→applied p50, ${l.backend}`, ratio: div(l.waitedMs.p50, f.latency.waitedMs.p50), ours: `${fmt(l.waitedMs.p50)} ms`, floor: `${fmt(f.latency.waitedMs.p50)} ms`, ...(busy ? { busy } : {}) });
  }
  for (const s of r.scale) {
    const fs = f.scale.find((x) => x.sessions === s.sessions);
    if (!fs) continue;
    const busy = busyOf(r, `scale/${s.sessions}`, `scale/${s.sessions}/floor`);
    push({
      measure: `Sessions: open → all READY, ${n(s.sessions)}`,
      ratio: div(s.bootstrapMs, fs.bootstrapMs),
      ours: s.bootstrapMs === undefined ? `not within the bound (${s.atOnceError ?? s.error ?? "?"})` : secs(s.bootstrapMs),
      floor: secs(fs.bootstrapMs),
      ...(busy ? { busy } : {}),
    });
    if (s.bootstrapCpuMsPerSession) {
      push({ measure: `Gateway CPU per session bootstrap, ${n(s.sessions)} at once`, ratio: div(s.bootstrapCpuMsPerSession.gateway, fs.bootstrapCpuMsPerSession.gateway), ours: `${fmt(s.bootstrapCpuMsPerSession.gateway)} ms`, floor: `${fmt(fs.bootstrapCpuMsPerSession.gateway)} ms` });
      push({ measure: `Supervisor CPU per session bootstrap, ${n(s.sessions)} at once`, ratio: div(s.bootstrapCpuMsPerSession.supervisors, fs.bootstrapCpuMsPerSession.supervisors), ours: `${fmt(s.bootstrapCpuMsPerSession.supervisors)} ms`, floor: `${fmt(fs.bootstrapCpuMsPerSession.supervisors)} ms` });
    }
    push({ measure: `Gateway memory per held session, ${n(s.sessions)}`, ratio: div(s.rssPerSessionKb, fs.rssPerSessionKb), ours: s.rssPerSessionKb === undefined ? "–" : `${fmt(s.rssPerSessionKb, 1)} kB`, floor: `${fmt(fs.rssPerSessionKb, 1)} kB` });
  }
  for (const x of r.recovery) {
    const fr = f.recovery.find((y) => y.sessions === x.pending);
    if (!fr) continue;
    const busy = busyOf(r, `recovery/${x.backend}`, "recovery/floor");
    push({
      measure: `${n(x.pending)} pending at SIGKILL → all terminal after restart (floor: ${n(fr.sessions)} sessions re-opened on a new gateway)`,
      ratio: x.error ? undefined : div(x.restartToAllTerminalMs, fr.startToAllReadyMs),
      ours: x.error ? `not all terminal: ${x.error}` : secs(x.restartToAllTerminalMs),
      floor: secs(fr.startToAllReadyMs),
      ...(busy ? { busy } : {}),
    });
    if (x.cpuMsPerOp) {
      push({ measure: `Gateway CPU per pending operation, restart → all terminal, ${n(x.pending)} (start-up included)`, ratio: div(x.cpuMsPerOp.gateway, fr.cpuMsPerSession.gateway), ours: `${fmt(x.cpuMsPerOp.gateway)} ms`, floor: `${fmt(fr.cpuMsPerSession.gateway)} ms` });
      push({ measure: `Supervisor CPU per pending operation, restart → all terminal, ${n(x.pending)} (start-up included)`, ratio: div(x.cpuMsPerOp.supervisors, fr.cpuMsPerSession.supervisors), ours: `${fmt(x.cpuMsPerOp.supervisors)} ms`, floor: `${fmt(fr.cpuMsPerSession.supervisors)} ms` });
    }
  }
  return rows;
}

/** The targets table of issue 15 with "now" from this run. */
export function issue15Targets(r: Results): IssueTarget[] {
  const f = r.floor;
  const out: IssueTarget[] = [];
  const verdict = (ok: boolean | undefined): IssueTarget["verdict"] => (ok === undefined ? "n/a" : ok ? "met" : "not met");
  const all = (xs: (number | undefined)[], ok: (x: number) => boolean) => (xs.length === 0 || xs.some((x) => x === undefined) ? undefined : xs.every((x) => ok(x!)));

  const probeSql = r.probe.find((p) => p.backend === "sqlite");
  const fleetSql = r.fleet.find((x) => x.backend === "sqlite");
  const tput = [
    fleetSql && f.fleet ? { what: "fleet", v: div(fleetSql.completedPerSec, f.fleet.completedPerSec) } : undefined,
    probeSql && f.probe ? { what: "probe", v: div(probeSql.completedPerSec, f.probe.completedPerSec) } : undefined,
  ].filter((x) => x !== undefined);
  const sum = (c: Cpu) => c.gateway + c.supervisors + c.clients;
  const cpuAll = [
    fleetSql?.cpuMsPerOp && f.fleet ? `fleet ${times(div(sum(fleetSql.cpuMsPerOp), sum(f.fleet.cpuMsPerOp)))}` : undefined,
    probeSql && f.probe ? `probe ${times(div(sum(probeSql.cpuMsPerOp), sum(f.probe.cpuMsPerOp)))}` : undefined,
  ].filter((x) => x !== undefined);
  out.push({
    measure: "Waited updates/s (SQLite), fleet and probe shapes",
    now:
      (tput.length === 0 ? "–" : tput.map((t) => `${t.what} ${times(t.v)}`).join(", ")) +
      (cpuAll.length === 0 ? "" : ` (CPU per update of all processes, which updates/s follow on a saturated machine: ${cpuAll.join(", ")})`),
    target: "≥ 0.8× floor",
    verdict: verdict(all(tput.map((t) => t.v), (x) => x >= 0.8)),
  });
  const cpu = (k: "gateway" | "supervisors" | "clients") => {
    const probe = probeSql && f.probe ? div(probeSql.cpuMsPerOp[k], f.probe.cpuMsPerOp[k]) : undefined;
    const fleet = fleetSql?.cpuMsPerOp && f.fleet ? div(fleetSql.cpuMsPerOp[k], f.fleet.cpuMsPerOp[k]) : undefined;
    return { probe, fleet, now: probe === undefined ? "–" : `${times(probe)} (probe)${fleet === undefined ? "" : `; fleet ${times(fleet)}`}` };
  };
  const g = cpu("gateway");
  out.push({ measure: "Gateway CPU per update", now: g.now, target: "≤ 1.3×", verdict: verdict(g.probe === undefined ? undefined : g.probe <= 1.3) });
  const s = cpu("supervisors");
  out.push({ measure: "Supervisor CPU per apply (reference supervisor, simulated runtime)", now: s.now, target: "≤ 1.3×", verdict: verdict(s.probe === undefined ? undefined : s.probe <= 1.3) });
  const c = cpu("clients");
  out.push({ measure: "SDK CPU per waited update (the product itself)", now: c.now, target: "≤ 1.1×", verdict: verdict(c.probe === undefined ? undefined : c.probe <= 1.1) });

  const lat = r.latency.find((l) => l.backend === "sqlite");
  if (lat && f.latency) {
    const fsync = r.fsyncMs?.p50;
    const bound = fsync === undefined ? undefined : 1.5 * f.latency.waitedMs.p50 + 2 * fsync;
    out.push({
      measure: "Sequential commit→applied p50, SQLite",
      now: `${times(div(lat.waitedMs.p50, f.latency.waitedMs.p50))}: ${fmt(lat.waitedMs.p50)} ms${bound === undefined ? "" : ` against a bound of ${fmt(bound)} ms (1.5 × ${fmt(f.latency.waitedMs.p50)} + 2 × ${fmt(fsync!)} ms fsync)`}`,
      target: "≤ 1.5× floor plus two fsyncs",
      verdict: verdict(bound === undefined ? undefined : lat.waitedMs.p50 <= bound),
    });
  } else out.push({ measure: "Sequential commit→applied p50, SQLite", now: "–", target: "≤ 1.5× floor plus two fsyncs", verdict: "n/a" });

  const boots = r.scale.map((x) => ({ x, fl: f.scale.find((y) => y.sessions === x.sessions) })).filter((p) => p.fl !== undefined);
  const bootRatios = boots.map((p) => div(p.x.bootstrapMs, p.fl!.bootstrapMs));
  const targetSizes = boots.some((p) => p.x.sessions === 2_500) && boots.some((p) => p.x.sessions === 10_000);
  out.push({
    measure: "Sessions: open → all READY, 2,500 and 10,000",
    now: boots.length === 0 ? "–" : boots.map((p, i) => `${n(p.x.sessions)}: ${times(bootRatios[i])}`).join(", "),
    target: "≤ 1.5×",
    // Any measured size over the bound is "not met"; all within it counts only with both sizes.
    verdict: bootRatios.some((x) => x === undefined || x > 1.5) ? "not met" : verdict(targetSizes ? all(bootRatios, (x) => x <= 1.5) : undefined),
  });
  const mem = boots.map((p) => div(p.x.rssPerSessionKb, p.fl!.rssPerSessionKb));
  out.push({
    measure: "Gateway memory per held session",
    now: boots.length === 0 ? "–" : boots.map((p, i) => `${n(p.x.sessions)}: ${times(mem[i])}`).join(", "),
    target: "≤ 1.3×",
    verdict: verdict(all(mem, (x) => x <= 1.3)),
  });
  const rec = r.recovery.map((x) => ({ x, fl: f.recovery.find((y) => y.sessions === x.pending) })).filter((p) => p.fl !== undefined);
  const recRatios = rec.map((p) => (p.x.error ? Number.POSITIVE_INFINITY : div(p.x.restartToAllTerminalMs, p.fl!.startToAllReadyMs)));
  out.push({
    measure: "10,000 pending at SIGKILL → all terminal after restart",
    now: rec.length === 0 ? "–" : rec.map((p, i) => `${n(p.x.pending)}: ${p.x.error ? "not all terminal" : times(recRatios[i])} the floor's ${n(p.fl!.sessions)} re-opened sessions`).join(", "),
    target: "≤ 1.5×",
    verdict: verdict(rec.some((p) => p.x.pending >= 10_000) ? all(recRatios.filter((_, i) => rec[i]!.x.pending >= 10_000), (x) => x <= 1.5) : undefined),
  });

  const probePg = r.probe.find((p) => p.backend === "postgres");
  const fleetPg = r.fleet.find((x) => x.backend === "postgres");
  const pgVsSql = [
    probePg && probeSql ? `probe ${times(div(probePg.completedPerSec, probeSql.completedPerSec))}` : undefined,
    fleetPg && fleetSql ? `fleet ${times(div(fleetPg.completedPerSec, fleetSql.completedPerSec))}` : undefined,
  ].filter((x) => x !== undefined);
  const pgRatios = [probePg && probeSql ? div(probePg.completedPerSec, probeSql.completedPerSec) : undefined, fleetPg && fleetSql ? div(fleetPg.completedPerSec, fleetSql.completedPerSec) : undefined].filter((x) => x !== undefined);
  out.push({
    measure: "PostgreSQL: round trips per waited update; throughput",
    now: `${probePg?.pgQueriesPerOp === undefined ? "–" : `${fmt(probePg.pgQueriesPerOp, 1)} queries`}; ${pgVsSql.length === 0 ? "–" : `${pgVsSql.join(", ")} SQLite`}`,
    target: "≤ 6; ≥ 0.6× SQLite",
    verdict: verdict(probePg?.pgQueriesPerOp === undefined || pgRatios.length === 0 ? undefined : probePg.pgQueriesPerOp <= 6 && pgRatios.every((x) => x! >= 0.6)),
  });
  const b = r.size?.createConfigClient;
  const webFloor = r.size?.floor;
  out.push({
    measure: "Browser bundle `createConfigClient`",
    now: b ? `${(b.bytes / 1000).toFixed(1)} kB${webFloor ? `; connect-web's own floor ${(webFloor.floorBytes / 1000).toFixed(1)} kB, ours ${(webFloor.oursBytes / 1000).toFixed(1)} kB by the same measure (${times(div(webFloor.oursBytes, webFloor.floorBytes))})` : ""}` : "–",
    target: "≤ 40 kB, and say what is left above connect-web's own floor",
    verdict: verdict(b ? b.bytes <= 40_000 : undefined),
  });
  return out;
}
