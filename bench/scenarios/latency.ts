// Scenario 1, latency: one sandbox, sequential updates through the SDK over gRPC (h2c). Commit
// latency (commit-only calls) and commit→applied latency of waited calls (`wait: true`).
// Scenario 2, the polling baseline, in the same run: a second sandbox whose supervisor polls
// GetSandboxConfig (`--poll-interval`) and reports ReportPolicyStatus, and a client that commits
// and polls GetSandboxPolicyStatus every second until LOADED.

import { Stack, type Backend } from "../lib/stack.js";
import { summarize, type Summary } from "../lib/stats.js";
import { bootstrapAll, createAll, IntegrityError, type Context } from "./common.js";

export interface LatencyResult {
  readonly backend: Backend;
  readonly updates: number;
  /** Commit-only calls: commit round trip. */
  readonly commitMs: Summary;
  /** Waited calls: commit → applied at the sandbox, as the SDK sees it. */
  readonly waitedMs: Summary;
  /** The same, by the gateway's own clock (operation created → completed). */
  readonly serverMs: Summary;
  readonly byState: Record<string, number>;
}

export interface PollingResult {
  readonly updates: number;
  readonly supervisorIntervalMs: number;
  readonly clientIntervalMs: number;
  /** Commit → LOADED seen by the client. */
  readonly measuredMs: Summary;
  /** Revision created → reported loaded (gateway timestamps): the supervisor's share. */
  readonly supervisorMs: Summary;
  /** The same model at the upstream default interval (10 s), when measured at a shorter one. */
  readonly expectedAt10sMs: Summary | undefined;
  readonly byStatus: Record<string, number>;
}

export const UPSTREAM_POLL_MS = 10_000;

/**
 * Polling latency at `intervalMs` by a model: the change lands at a uniformly random point of
 * the supervisor's poll cycle, then waits for the client's next 1 s status poll.
 */
export function modelPolling(intervalMs: number, clientMs: number, applyMs: number, n = 200_000): Summary {
  const xs: number[] = [];
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let i = 0; i < n; i++) xs.push(Math.ceil((rand() * intervalMs + applyMs) / clientMs) * clientMs);
  return summarize(xs);
}

export async function latencyScenario(ctx: Context, backend: Backend, o: { n: number; warmup: number; poll?: { n: number; intervalMs: number } }): Promise<{ latency: LatencyResult; polling: PollingResult | undefined }> {
  const push = { prefix: "lat-", count: 1 };
  const polled = { prefix: "poll-", count: 1 };
  const stack = await Stack.start({ backend, groups: o.poll ? [push, polled] : [push], label: `latency-${backend}` });
  try {
    await createAll(stack, o.poll ? [push, polled] : [push]);
    await bootstrapAll(stack, [push], 60_000);
    ctx.say(`latency/${backend}: ${o.n} commit-only + ${o.n} waited updates`);
    const r = await stack.run({ kind: "latency", sandbox: "lat-0000", n: o.n, warmup: o.warmup });
    if (r.mismatches.length > 0) throw new IntegrityError(`latency/${backend}: ${r.mismatches.length} update(s) not applied: ${r.mismatches.slice(0, 5).join("; ")}`);
    const latency: LatencyResult = {
      backend,
      updates: o.n,
      commitMs: summarize(r.commitMs),
      waitedMs: summarize(r.waitedMs),
      serverMs: summarize(r.serverMs),
      byState: r.byState,
    };
    let polling: PollingResult | undefined;
    if (o.poll) {
      ctx.say(`polling/${backend}: ${o.poll.n} updates, supervisor polls every ${o.poll.intervalMs} ms, client every 1000 ms`);
      stack.startSupervisor(polled, ["--poll-interval", `${o.poll.intervalMs}ms`]);
      const p = await stack.run({ kind: "poll", sandbox: "poll-0000", n: o.poll.n, pollMs: 1000, phaseMs: o.poll.intervalMs });
      if (p.latencyMs.length !== o.poll.n || (p.byStatus.LOADED ?? 0) !== o.poll.n) {
        throw new IntegrityError(`polling: expected ${o.poll.n} LOADED, got ${JSON.stringify(p.byStatus)}`);
      }
      const measured = summarize(p.latencyMs);
      polling = {
        updates: o.poll.n,
        supervisorIntervalMs: o.poll.intervalMs,
        clientIntervalMs: 1000,
        measuredMs: measured,
        supervisorMs: summarize(p.supervisorMs),
        expectedAt10sMs: o.poll.intervalMs === UPSTREAM_POLL_MS ? undefined : modelPolling(UPSTREAM_POLL_MS, 1000, latency.waitedMs.p50),
        byStatus: p.byStatus,
      };
    }
    return { latency, polling };
  } catch (err) {
    throw stack.keepLogs(err);
  } finally {
    await stack.stop();
  }
}
