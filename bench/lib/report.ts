// The results document (latest.json) and its markdown rendering (latest.md), with the targets
// of the benchmark issue reported against, never enforced.

import { renderGroupCommit } from "../scenarios/group-commit.js";
import { renderTls } from "../scenarios/tls.js";
import { PROBE_WARMUP_OPS } from "../scenarios/probe.js";
import { renderProbeRounds } from "../scenarios/probe-rounds.js";
import { SETTLE } from "./proc.js";
import { issue32Targets } from "./issue32.js";
import { issue15Targets, PROVIDER_FLOOR_NOTE, ratioRows, times } from "./ratios.js";
import type { Results } from "./results.js";
import type { Summary } from "./stats.js";


const ms = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? "–" : v >= 100 ? `${Math.round(v)}` : `${Math.round(v * 100) / 100}`);
const n = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? "–" : v.toLocaleString("en-US"));
const row = (cells: readonly (string | number)[]) => `| ${cells.join(" | ")} |`;
const table = (head: readonly string[], rows: readonly (readonly (string | number)[])[]) =>
  [row(head), row(head.map(() => "---")), ...rows.map(row)].join("\n");
/** MiB → decimal GB. */
const gb = (mib: number) => ((mib * 1024 * 1024) / 1e9).toFixed(2);
const pct = (s: Summary) => [ms(s.p50), ms(s.p95), ms(s.p99)];
const reasons = (m: Record<string, number>) =>
  Object.entries(m)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${n(v)} × "${k}"`)
    .join(", ");

interface Target {
  what: string;
  target: string;
  measured: string;
  verdict: string;
}

export function targets(r: Results): Target[] {
  const out: Target[] = [];
  const lat = r.latency.find((l) => l.backend === "sqlite");
  if (lat) {
    out.push({ what: "Latency commit→applied, SQLite, p50", target: "≤ 3 ms", measured: `${ms(lat.waitedMs.p50)} ms`, verdict: lat.waitedMs.p50 <= 3 ? "met" : "not met" });
    out.push({ what: "Latency commit→applied, SQLite, p99", target: "≤ 15 ms", measured: `${ms(lat.waitedMs.p99)} ms`, verdict: lat.waitedMs.p99 <= 15 ? "met" : "not met" });
  }
  if (lat && r.polling) {
    const at10 = r.polling.expectedAt10sMs ?? r.polling.measuredMs;
    const ratio = at10.p50 / lat.waitedMs.p50;
    const how = r.polling.expectedAt10sMs ? "expected at 10 s" : "measured at 10 s";
    out.push({ what: `Faster than polling (p50, ${how})`, target: "≥ 1000×", measured: `${Math.round(ratio)}×`, verdict: ratio >= 1000 ? "met" : "not met" });
  }
  for (const f of r.fleet) {
    const goal = f.backend === "sqlite" ? 1500 : 1000;
    const scaled = f.sandboxes === 1000;
    out.push({
      what: `Fleet ${f.backend}, ${n(f.sandboxes)} sandboxes`,
      target: `≥ ${n(goal)}/s at 1,000 sandboxes, 0 lost, 0 stuck`,
      measured: `${n(f.completedPerSec)}/s, ${f.lost} lost, ${f.stuck} stuck`,
      verdict: !scaled ? "n/a" : f.completedPerSec >= goal && f.lost === 0 && f.stuck === 0 ? "met" : "not met",
    });
  }
  const big = r.scale.find((s) => s.sessions === 10_000);
  const any = big ?? r.scale[r.scale.length - 1];
  if (any) {
    const projected = any.rssPerSessionKb === undefined ? undefined : (any.rssBeforeMb + (any.rssPerSessionKb * 10_000) / 1024) / 1024;
    const held = big !== undefined && big.reached === 10_000;
    out.push({
      what: big ? "10,000 sessions: gateway RSS (peak)" : `10,000 sessions: RSS projected from ${n(any.sessions)}`,
      target: "≤ 1.5 GB",
      measured: big
        ? held
          ? `peak ${n(Math.round(big.peakRssMb))} MiB = ${gb(big.peakRssMb)} GB (held idle ${n(Math.round(big.rssAfterMb))} MiB)${big.rampedMs !== undefined ? ", ramped" : ""}`
          : `not held: ${big.error ?? "?"}`
        : projected === undefined
          ? "–"
          : `≈ ${gb(projected * 1024)} GB`,
      // 1.5 GB = 1,430.5 MiB; 1.5 GiB = 1,536 MiB.
      verdict: held ? (big.peakRssMb <= 1430.5 ? "met" : big.peakRssMb <= 1536 ? "met as 1.5 GiB, not as 1.5 GB" : "not met") : big ? "not met" : "n/a",
    });
    out.push({
      what: big ? "10,000 sessions bootstrapped (all at once)" : `${n(any.sessions)} sessions bootstrapped (all at once)`,
      target: "≤ 30 s (10,000)",
      measured: any.bootstrapMs !== undefined ? `${(any.bootstrapMs / 1000).toFixed(1)} s` : `not within the bound: ${n(any.atOnceReached)} READY (${any.atOnceError ?? any.error ?? "?"})`,
      verdict: big ? (big.bootstrapMs !== undefined && big.bootstrapMs <= 30_000 ? "met" : "not met") : "n/a",
    });
  }
  for (const rec of r.recovery) {
    const full = rec.pending >= 10_000;
    out.push({
      what: `${n(rec.pending)} pending terminal after restart (${rec.backend})`,
      target: "≤ 5 s (10,000)",
      measured: rec.error ? `not all terminal: ${rec.error}` : `${(rec.restartToAllTerminalMs / 1000).toFixed(1)} s`,
      verdict: full ? (!rec.error && rec.restartToAllTerminalMs <= 5000 ? "met" : "not met") : "n/a",
    });
  }
  if (r.size?.createConfigClient) {
    const c = r.size.createConfigClient;
    out.push({ what: "Browser bundle, createConfigClient (brotli)", target: `≤ ${(c.limitBytes / 1000).toFixed(1)} kB`, measured: `${(c.bytes / 1000).toFixed(1)} kB`, verdict: c.passed ? "met" : "not met" });
  }
  return out;
}

export function renderMarkdown(r: Results): string {
  const m = r.meta;
  const parts: string[] = [
    `# Benchmark results (${m.mode})`,
    "",
    `${m.date} · ${m.cores} cores (${m.cpu}) · ${m.memoryGb} GB · Node ${m.node} · ${m.os} · commit ${m.commit}${m.durationS === undefined ? "" : ` · run took ${m.durationS} s`}`,
    "",
    ...m.notes.map((x) => `- ${x}`),
    `- Each step, ours and the floor's alike, first waits (at most ${SETTLE.maxMs / 1000} s) until the whole machine is under ${SETTLE.busyPercent}% busy for ${SETTLE.windowMs} ms.`,
    `- Machine load per step (1-min load average at its start; whole-machine CPU busy during it; the wait for a quiet machine before it, when over 1 s): ${m.load.map((l) => `${l.step} ${l.loadAvg1.toFixed(1)} / ${Math.round(l.machineBusyPercent)}%${l.settledMs !== undefined && l.settledMs > 1000 ? ` (waited ${(l.settledMs / 1000).toFixed(1)} s${l.busyBeforePercent !== undefined && l.busyBeforePercent >= SETTLE.busyPercent ? `, still ${l.busyBeforePercent}% busy` : ""})` : ""}`).join(", ")}.`,
    "",
  ];
  if (r.failures.length > 0) parts.push("## FAILURES", "", ...r.failures.map((f) => `- ${f}`), "");
  const ratios = ratioRows(r);
  if (ratios.length > 0) {
    parts.push(
      "## Ours ÷ floor (measured back to back in this run)",
      "",
      "The floor (`bench/floor/`) is the same processes and messages on the same libraries (connect-node, protobuf-es; gRPC over h2c, no compression) doing nothing else: a gateway that pushes each update's policy to the sandbox's stream and answers when the result is back, a supervisor that answers at once, clients without the SDK. No storage, validation, logging, metrics or auth. Above 1× means ours takes more time, CPU or memory; for updates/s, below 1× means ours completes fewer. Machine busy: whole-machine CPU during the step of ours / of the floor (other work on the machine skews both).",
      "",
      table(["measure", "ours ÷ floor", "ours", "floor", "machine busy"], ratios.map((x) => [x.measure, `**${times(x.ratio)}**`, x.ours, x.floor, x.busy ?? ""])),
      "",
      ...(r.floor.probeProviderToo ? [PROVIDER_FLOOR_NOTE, ""] : []),
      "## Targets of the performance issue, #32 (ratios measured in this run; reported, never enforced)",
      "",
      table(["measure", "now", "target", ""], issue32Targets(r).map((t) => [t.measure, t.now, t.target, t.verdict])),
      "",
      "## Targets of issue 15 (ratios to the floor; still reported)",
      "",
      table(["measure", "now", "target", ""], issue15Targets(r).map((t) => [t.measure, t.now, t.target, t.verdict])),
      "",
    );
  }
  parts.push("## Absolute targets of the benchmark issue (reported, not enforced)", "", table(["", "target", "measured", ""], targets(r).map((t) => [t.what, t.target, t.measured, t.verdict])), "");
  if (r.latency.length > 0) {
    parts.push(
      "## 1. Latency: one sandbox, sequential updates (SDK, gRPC h2c), ms",
      "",
      table(
        ["backend", "updates", "commit p50", "p95", "p99", "commit→applied p50", "p95", "p99", "gateway-side p50", "p99"],
        [
          ...r.latency.map((l) => [l.backend, l.updates, ...pct(l.commitMs), ...pct(l.waitedMs), ms(l.serverMs.p50), ms(l.serverMs.p99)]),
          ...(r.floor.latency ? [["floor", r.floor.latency.updates, "–", "–", "–", ...pct(r.floor.latency.waitedMs), "–", "–"]] : []),
        ],
      ),
      "",
      ...(r.fsyncMs ? [`One fsync (4 KiB appended) on the file system of the SQLite databases: p50 ${ms(r.fsyncMs.p50)} ms, p95 ${ms(r.fsyncMs.p95)} ms.`, ""] : []),
    );
  }
  if (r.polling) {
    const p = r.polling;
    const push = r.latency.find((l) => l.backend === "sqlite");
    const ratio = (s: Summary) => (push ? `${Math.round(s.p50 / push.waitedMs.p50)}×` : "–");
    const rows: (string | number)[][] = [[`measured, supervisor polls every ${p.supervisorIntervalMs / 1000} s`, p.updates, ...pct(p.measuredMs), ratio(p.measuredMs)]];
    if (p.expectedAt10sMs) rows.push(["expected at the upstream default 10 s (model)", "–", ...pct(p.expectedAt10sMs), ratio(p.expectedAt10sMs)]);
    parts.push(
      "## 2. Polling baseline (SQLite): commit → LOADED seen by a client polling GetSandboxPolicyStatus every 1 s, ms",
      "",
      table(["", "updates", "p50", "p95", "p99", "p50 ÷ push p50"], rows),
      "",
      `Supervisor share (revision created → reported loaded): p50 ${ms(p.supervisorMs.p50)} ms, p99 ${ms(p.supervisorMs.p99)} ms.` +
        (p.expectedAt10sMs ? " The 10 s row is a model, not a measurement: the change lands at a uniformly random point of the 10 s poll cycle (plus the measured push p50 for the apply), then waits for the client's next 1 s poll." : ""),
      "",
    );
  }
  if (r.probe.length > 0 || r.floor.probe) {
    const fp = r.floor.probe;
    const fpp = r.floor.probeProviderToo;
    parts.push(
      "## Probe shape: 32 waited policy updates in flight on 64 sandboxes (one supervisor process, one client process)",
      "",
      table(
        ["", "ops", "updates/s", "p50 ms", "p95", "p99", "CPU ms/update: gateway", "supervisor", "client", "store calls/update", "transactions", "COMMITs", "PostgreSQL queries/update", "machine busy"],
        [
          ...r.probe.map((p) => [p.backend, n(p.operations), n(p.completedPerSec), ...pct(p.latencyMs), p.cpuMsPerOp.gateway, p.cpuMsPerOp.supervisors, p.cpuMsPerOp.clients, p.store.calls, p.store.transactions, p.store.commits, p.pgQueriesPerOp ?? "–", `${Math.round(p.machineBusyPercent)}%`]),
          ...(fp ? [["floor", n(fp.operations), n(fp.completedPerSec), ...pct(fp.latencyMs), fp.cpuMsPerOp.gateway, fp.cpuMsPerOp.supervisors, fp.cpuMsPerOp.clients, "–", "–", "–", "–", `${Math.round(fp.machineBusyPercent)}%`]] : []),
          ...(fpp ? [["floor with the provider message", n(fpp.operations), n(fpp.completedPerSec), ...pct(fpp.latencyMs), fpp.cpuMsPerOp.gateway, fpp.cpuMsPerOp.supervisors, fpp.cpuMsPerOp.clients, "–", "–", "–", "–", `${Math.round(fpp.machineBusyPercent)}%`]] : []),
        ],
      ),
      "",
      `${PROBE_WARMUP_OPS.toLocaleString("en-US")} untimed updates first, in the measured client process (the floor's probe alike${r.probeRounds ? "; in every round" : ""}); every counter is read after them. ` +
        "CPU = utime + stime from /proc over the timed part (the client's own process.cpuUsage). Store calls count the calls on the store (a transaction counts once; the calls inside it are not timed separately): " +
        r.probe.map((p) => `${p.backend} ${Object.entries(p.store.byCall).map(([k, v]) => `${k} ${v}`).join(", ")}`).join("; ") +
        ". PostgreSQL queries are counted in the gateway's pg client (bench/lib/pg-count.mjs).",
      "",
      ...renderProbeRounds(r.probeRounds),
    );
  }
  parts.push(...renderGroupCommit(r.groupCommit));
  if (r.fleet.length > 0) {
    parts.push(
      "## 3. Fleet: concurrent waited updates (policy, settings, invalid → failed, superseded pairs)",
      "",
      table(
        ["backend", "sandboxes", "sup. procs", "clients × loops", "ops", "completed/s", "p50 ms", "p95", "p99", "lost", "stuck", "gateway CPU", "CPU ms/op", "gateway peak RSS"],
        r.fleet.map((f) => [f.backend, n(f.sandboxes), f.supervisorProcesses, `${f.clientProcesses} × ${f.concurrency / f.clientProcesses}`, n(f.operations), n(f.completedPerSec), ...pct(f.latencyMs), f.lost, f.stuck, `${f.gatewayCpuPercent}%`, f.gatewayCpuMsPerOp, `${f.gatewayPeakRssMb} MiB`]),
      ),
      "",
      ...r.fleet.map(
        (f) =>
          `- ${f.backend}: kinds ${JSON.stringify(f.byKind)}; final states ${JSON.stringify(f.byState)}; CPU during the run (% of one core): gateway ${f.cpuPercent.gateway}, supervisors ${f.cpuPercent.supervisors}, clients ${f.cpuPercent.clients}, everything else on the machine (the PostgreSQL server, other work) ${f.cpuPercent.rest}${f.cpuMsPerOp ? `; CPU ms per operation: gateway ${f.cpuMsPerOp.gateway}, supervisors ${f.cpuMsPerOp.supervisors}, clients ${f.cpuMsPerOp.clients}` : ""}${f.pgQueriesPerOp !== undefined ? `; PostgreSQL queries per update ${f.pgQueriesPerOp}` : ""}; bootstrap of ${n(f.sandboxes)} sandboxes ${ms(f.bootstrapMs)} ms`,
      ),
      ...(r.fleetPolicyOnly
        ? [
            `- sqlite, the same shape with valid policy updates only (the floor's own messages), run right after the floor's: ${n(r.fleetPolicyOnly.completedPerSec)}/s, p50 ${ms(r.fleetPolicyOnly.latencyMs.p50)} ms, p99 ${ms(r.fleetPolicyOnly.latencyMs.p99)} ms; final states ${JSON.stringify(r.fleetPolicyOnly.byState)}${r.fleetPolicyOnly.cpuMsPerOp ? `; CPU ms per operation: gateway ${r.fleetPolicyOnly.cpuMsPerOp.gateway}, supervisors ${r.fleetPolicyOnly.cpuMsPerOp.supervisors}, clients ${r.fleetPolicyOnly.cpuMsPerOp.clients}` : ""}`,
          ]
        : []),
      ...(r.floor.fleet
        ? [
            `- floor, the same shape (${n(r.floor.fleet.sandboxes)} sandboxes on ${r.floor.fleet.supervisorProcesses} supervisor processes, ${r.floor.fleet.clientProcesses} clients × ${r.floor.fleet.concurrency / r.floor.fleet.clientProcesses} loops, ${n(r.floor.fleet.operations)} waited updates, policy updates only: the floor has no settings, validation or supersession): ${n(r.floor.fleet.completedPerSec)}/s, p50 ${ms(r.floor.fleet.latencyMs.p50)} ms, p99 ${ms(r.floor.fleet.latencyMs.p99)} ms; CPU ms per operation: gateway ${r.floor.fleet.cpuMsPerOp.gateway}, supervisors ${r.floor.fleet.cpuMsPerOp.supervisors}, clients ${r.floor.fleet.cpuMsPerOp.clients}; gateway peak RSS ${r.floor.fleet.gatewayPeakRssMb} MiB`,
          ]
        : []),
      "",
    );
  }
  if (r.scale.length > 0) {
    const secs = (v: number | undefined) => (v === undefined ? "–" : `${(v / 1000).toFixed(1)} s`);
    parts.push(
      "## 4. Scale: supervisor sessions on one gateway process (SQLite)",
      "",
      table(
        ["sessions", "sup. procs", "all at once: spawn → all READY", "ramped (one process at a time)", "held", "RSS before", "RSS held", "peak RSS", "RSS/session", "idle CPU (heartbeats)"],
        r.scale.map((s) => [
          n(s.sessions),
          s.supervisorProcesses,
          s.bootstrapMs !== undefined ? secs(s.bootstrapMs) : `not within the bound: ${n(s.atOnceReached)} READY`,
          secs(s.rampedMs),
          s.reached === s.sessions ? n(s.reached) : `no: ${s.error ?? "?"}`,
          `${s.rssBeforeMb} MiB`,
          `${s.rssAfterMb} MiB`,
          `${s.peakRssMb} MiB`,
          s.rssPerSessionKb === undefined ? "–" : `${s.rssPerSessionKb} kB`,
          s.idleCpuPercent === undefined ? "–" : `${s.idleCpuPercent}% over ${s.idleWindowMs / 1000} s`,
        ]),
      ),
      "",
      "Each supervisor process hosts up to 2,500 sandboxes over one HTTP/2 connection. Heartbeats: the gateway's default interval (15 s), both directions. RSS before = the gateway with every sandbox created and no session; peak RSS = VmHWM of the gateway process holding the sessions (after a ramped start, of the restarted process).",
      ...r.scale.filter((s) => s.bootstrapCpuMsPerSession).map((s) => `- ${n(s.sessions)} at once, CPU per session until all were READY: gateway ${s.bootstrapCpuMsPerSession!.gateway} ms (the READY watcher's ListSandboxes included), supervisor processes ${s.bootstrapCpuMsPerSession!.supervisors} ms (their start-up included)`),
      ...r.floor.scale.map((f) => `- floor, ${n(f.sessions)} sessions from ${f.supervisorProcesses} floor supervisor process(es) at once: all READY in ${secs(f.bootstrapMs)} (the same ListSandboxes paging); CPU per session gateway ${f.bootstrapCpuMsPerSession.gateway} ms, supervisors ${f.bootstrapCpuMsPerSession.supervisors} ms; gateway RSS ${f.rssBeforeMb} → ${f.rssAfterMb} MiB = ${f.rssPerSessionKb} kB per session (sampled after the same wait as ours)`),
      ...r.scale.filter((s) => s.atOnceError).map((s) => `- ${n(s.sessions)} at once: ${s.atOnceError}`),
      ...r.scale.filter((s) => s.reconnects).map((s) => `- ${n(s.sessions)} at once, session streams that ended and reconnected: ${reasons(s.reconnects!)}`),
      "",
    );
  }
  if (r.recovery.length > 0) {
    parts.push(
      "## 5. Recovery: pending operations after a SIGKILL of the gateway",
      "",
      table(
        ["backend", "pending", "sup. procs", "restart → healthy", "supervisors started → all terminal", "restart → all terminal", "final states"],
        r.recovery.map((x) => [
          x.backend,
          n(x.pending),
          x.supervisorProcesses,
          `${ms(x.restartToHealthyMs)} ms`,
          x.error ? "–" : `${ms(x.supervisorsToAllTerminalMs)} ms`,
          x.error ? `NOT ALL TERMINAL: ${x.error}` : `${ms(x.restartToAllTerminalMs)} ms`,
          JSON.stringify(x.byState),
        ]),
      ),
      "",
      ...r.recovery.map((x) => `- ${x.backend}: ${x.cpuMsPerOp ? `CPU per pending operation until all were terminal: gateway ${x.cpuMsPerOp.gateway} ms (its start-up included), supervisors ${x.cpuMsPerOp.supervisors} ms; ` : ""}pending after the restart (s → count): ${x.progress.map(([t, c]) => `${t} → ${n(c)}`).join(", ") || "none left at the first look"}${Object.keys(x.reconnects).length > 0 ? `; session streams that ended and reconnected: ${reasons(x.reconnects)}` : ""}`),
      "",
      "The supervisor processes start when the restarted gateway answers /healthz (their own start-up, about a second, is inside the figure; reconnect backoff is not). Restart = spawning the new gateway process, which includes Node + tsx start-up and opening the store.",
      ...r.floor.recovery.map((f) => `- floor: a new floor gateway spawned → listening ${ms(f.startToListeningMs)} ms → ${n(f.sessions)} sessions from ${f.supervisorProcesses} floor supervisor process(es) (started when it listened) re-opened and bootstrapped: ${ms(f.startToAllReadyMs)} ms after the spawn; CPU per session gateway ${f.cpuMsPerSession.gateway} ms, supervisors ${f.cpuMsPerSession.supervisors} ms`),
      "",
    );
  }
  parts.push(...renderTls(r.tls));
  if (r.size) {
    const wf = r.size.floor;
    parts.push(
      "## 6. Browser bundle (size-limit, brotli)",
      "",
      table(["entry", "size", "limit", ""], r.size.entries.map((e) => [e.name, `${(e.bytes / 1000).toFixed(1)} kB`, `${(e.limitBytes / 1000).toFixed(1)} kB`, e.passed ? "ok" : "over"])),
      "",
      ...(wf
        ? [
            `connect-web's own floor, bundled the same way as ours (esbuild, minified, brotli): the same five methods (src/rpc.ts) over connect-web's Connect transport ${(wf.floorBytes / 1000).toFixed(1)} kB; createConfigClient ${(wf.oursBytes / 1000).toFixed(1)} kB: ${((wf.oursBytes - wf.floorBytes) / 1000).toFixed(1)} kB above the floor (${times(wf.oursBytes / wf.floorBytes)}).`,
            "",
          ]
        : []),
    );
  }
  for (const p of r.profiles) {
    parts.push(
      `## Gateway CPU profile, fleet scenario on ${p.backend} (separate run under node --cpu-prof: ${n(p.operations)} ops at ${n(p.completedPerSec)}/s): top self time during the run`,
      "",
      table(["function (TypeScript source line)", "self ms", "% of busy"], p.top.map((e) => [`\`${e.fn}\``, e.selfMs, `${e.percent}%`])),
      "",
      "V8 samples the main thread by wall-clock time: a synchronous call that blocks (better-sqlite3's COMMIT waiting for fsync) counts as self time of its caller although the process is not on a CPU.",
      "",
    );
  }
  return `${parts.join("\n").trim()}\n`;
}
