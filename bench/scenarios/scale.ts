// Scenario 4, scale: S supervisor sessions on one gateway process (SQLite). Every supervisor
// process starts at once (each hosting up to 2,500 sandboxes over one HTTP/2 connection); measured:
// time from their spawn until every sandbox is READY (ListSandboxes paging), gateway memory per
// session, and the idle cost of keeping them connected (heartbeats) over a fixed window.
// When the at-once start does not get every sandbox READY in time, the database is reset to its
// state before the attempt and the sessions are connected again one supervisor process at a
// time (ramped), so memory and heartbeat cost are still measured at the full size.

import { cpuPercent, sampleProc, sleep } from "../lib/proc.js";
import { Stack } from "../lib/stack.js";
import { mb, round } from "../lib/stats.js";
import { bootstrapAll, createAll, groupsFor, type Context } from "./common.js";

export interface ScaleResult {
  readonly sessions: number;
  /** Sessions connected and READY when memory and idle CPU were measured (0: none measured). */
  readonly reached: number;
  readonly supervisorProcesses: number;
  readonly createMs: number;
  /** Supervisor processes spawned at once → every sandbox READY (undefined: not within the bound). */
  readonly bootstrapMs: number | undefined;
  /** Why the at-once bootstrap fell short, and how far it got. */
  readonly atOnceError?: string;
  readonly atOnceReached?: number;
  /** Session streams that ended and were reconnected during the at-once start, by reason. */
  readonly reconnects?: Record<string, number>;
  /**
   * CPU ms per session of the at-once bootstrap: the gateway's (from just before the supervisors'
   * spawn until all were READY, the READY watcher's ListSandboxes included) and the supervisor
   * processes' (their whole life until then, start-up included).
   */
  readonly bootstrapCpuMsPerSession?: { readonly gateway: number; readonly supervisors: number };
  /** Ramped instead (one supervisor process at a time): spawn of the first → all READY. */
  readonly rampedMs?: number;
  readonly rssBeforeMb: number;
  readonly rssAfterMb: number;
  readonly peakRssMb: number;
  readonly rssPerSessionKb: number | undefined;
  readonly idleWindowMs: number;
  readonly heartbeatMs: number;
  /** Gateway CPU, percent of one core, with every session connected and nothing else happening. */
  readonly idleCpuPercent: number | undefined;
  readonly error?: string;
}

/** Sandboxes per supervisor process (one HTTP/2 connection each; the gateway allows 10,000 streams per connection). */
const PER_PROCESS = 2_500;

const firstLine = (err: unknown) => (err as Error).message.split("\n")[0]!;

export async function scaleScenario(ctx: Context, sessions: number, o: { idleMs: number; ramp: boolean }): Promise<ScaleResult> {
  const groups = groupsFor("s", sessions, PER_PROCESS);
  const stack = await Stack.start({ backend: "sqlite", groups, label: `scale-${sessions}` });
  const heartbeatMs = 15_000; // the gateway's default
  const common: Pick<ScaleResult, "sessions" | "supervisorProcesses" | "heartbeatMs" | "reconnects"> = { sessions, supervisorProcesses: groups.length, heartbeatMs };
  try {
    const createMs = Math.round(await createAll(stack, groups, 2, 48));
    if (o.ramp) await stack.snapshotDb();
    await sleep(1000);
    let base = stack.gatewaySample();
    ctx.say(`scale: ${sessions} sessions from ${groups.length} supervisor process(es) started at once`);
    let bootstrapMs: number | undefined;
    let bootstrapCpu: ScaleResult["bootstrapCpuMsPerSession"];
    let atOnce: { atOnceError: string; atOnceReached: number } | undefined;
    let rampedMs: number | undefined;
    try {
      const g0 = stack.gatewaySample();
      const b = await bootstrapAll(stack, groups, Math.max(90_000, sessions * 15));
      const g1 = stack.gatewaySample();
      const sup = b.supervisors.reduce((a, c) => a + sampleProc(c.pid).cpuMs, 0);
      bootstrapMs = Math.round(b.ms);
      bootstrapCpu = { gateway: round((g1.cpuMs - g0.cpuMs) / sessions, 3), supervisors: round(sup / sessions, 3) };
    } catch (err) {
      atOnce = { atOnceError: firstLine(err), atOnceReached: Number(/only (\d+) of/.exec(firstLine(err))?.[1] ?? NaN) };
      ctx.say(`scale/${sessions}: at once: ${atOnce.atOnceError}`);
    }
    const reconnects = stack.supervisorReconnects();
    if (Object.keys(reconnects).length > 0) Object.assign(common, { reconnects });
    if (atOnce) {
      const peak = stack.gatewaySample();
      if (!o.ramp) {
        return { ...common, ...atOnce, reached: 0, createMs, bootstrapMs, rssBeforeMb: mb(base.rssBytes), rssAfterMb: mb(peak.rssBytes), peakRssMb: mb(peak.peakRssBytes), rssPerSessionKb: undefined, idleWindowMs: 0, idleCpuPercent: undefined, error: atOnce.atOnceError };
      }
      ctx.say(`scale/${sessions}: database reset; connecting again one supervisor process (≤ ${PER_PROCESS} sessions) at a time`);
      await stack.restoreDb();
      await sleep(1000);
      base = stack.gatewaySample();
      const t0 = performance.now();
      let ready = 0;
      try {
        for (const g of groups) {
          await bootstrapAll(stack, [g], 180_000, [], { alreadyReady: ready });
          ready += g.count;
        }
        rampedMs = Math.round(performance.now() - t0);
      } catch (err) {
        const s = stack.gatewaySample();
        return { ...common, ...atOnce, reached: 0, createMs, bootstrapMs, rssBeforeMb: mb(base.rssBytes), rssAfterMb: mb(s.rssBytes), peakRssMb: mb(s.peakRssBytes), rssPerSessionKb: undefined, idleWindowMs: 0, idleCpuPercent: undefined, error: `ramped, ${ready} READY: ${firstLine(err)}` };
      }
    }
    // Let the bootstrap's garbage settle, then watch the gateway do nothing but keep sessions.
    await sleep(2000);
    const idle0 = stack.gatewaySample();
    await sleep(o.idleMs);
    const idle1 = stack.gatewaySample();
    return {
      ...common,
      ...(atOnce ?? {}),
      ...(rampedMs !== undefined ? { rampedMs } : {}),
      ...(bootstrapCpu ? { bootstrapCpuMsPerSession: bootstrapCpu } : {}),
      reached: sessions,
      createMs,
      bootstrapMs,
      rssBeforeMb: mb(base.rssBytes),
      rssAfterMb: mb(idle1.rssBytes),
      peakRssMb: mb(idle1.peakRssBytes),
      rssPerSessionKb: round((idle1.rssBytes - base.rssBytes) / 1024 / sessions),
      idleWindowMs: o.idleMs,
      idleCpuPercent: round(cpuPercent(idle0, idle1)),
    };
  } catch (err) {
    throw stack.keepLogs(err);
  } finally {
    await stack.stop();
  }
}
