// Scenario 5, recovery: P operations left pending by a crash. The sandboxes are bootstrapped,
// their supervisors stopped, one policy update committed to each (no supervisor connected, so
// each stays PENDING), then the gateway is killed with SIGKILL and a new one started on the same
// database. The supervisor processes are started the moment it answers /healthz, so the figure
// holds no reconnect backoff (supervisors that were retrying during the outage add up to their
// backoff ceiling: 250 ms doubling to 30 s, full jitter). Measured: restart → no operation
// pending; then every operation is read back and must be applied.

import { sampleProc, sleep, type Child } from "../lib/proc.js";
import { round } from "../lib/stats.js";
import { groupNames, Stack, type Backend } from "../lib/stack.js";
import { bootstrapAll, createAll, groupsFor, verify, type Context } from "./common.js";

export interface RecoveryResult {
  readonly backend: Backend;
  readonly pending: number;
  readonly supervisorProcesses: number;
  /** New gateway spawned → /healthz answers. */
  readonly restartToHealthyMs: number;
  /** New gateway spawned → no operation pending. */
  readonly restartToAllTerminalMs: number;
  /** Supervisor processes started (when the gateway became healthy) → no operation pending. */
  readonly supervisorsToAllTerminalMs: number;
  readonly byState: Record<string, number>;
  /** CPU ms until all were terminal, per pending operation: the new gateway's (start-up included) and the supervisor processes'. */
  readonly cpuMsPerOp?: { readonly gateway: number; readonly supervisors: number };
  /** Pending operations every 5 s after the restart (s, pending). */
  readonly progress: [number, number][];
  /** Session streams that ended and were reconnected after the restart, by reason. */
  readonly reconnects: Record<string, number>;
  /** Not all terminal within the bound: what it reached. */
  readonly error?: string;
}

const PER_PROCESS = 2_500;

/** `boundMs`: how long after the restart every operation must be terminal (else: stuck). */
export async function recoveryScenario(ctx: Context, backend: Backend, pending: number, boundMs: number): Promise<RecoveryResult> {
  const groups = groupsFor("r", pending, PER_PROCESS);
  const stack = await Stack.start({ backend, groups, label: `recovery-${backend}` });
  try {
    await createAll(stack, groups, 2, 48);
    // Setup: bootstrap one supervisor process at a time, then stop them all.
    const first: Child[] = [];
    let ready = 0;
    for (const g of groups) {
      first.push(...(await bootstrapAll(stack, [g], 180_000, [], { alreadyReady: ready })).supervisors);
      ready += g.count;
    }
    await Promise.all(first.map((s) => s.kill("SIGTERM")));
    ctx.say(`recovery/${backend}: committing ${pending} updates with no supervisor connected`);
    const parts = await Promise.all(
      [0, 1].map((k) => stack.run({ kind: "commit", sandboxes: groups.flatMap(groupNames).filter((_, i) => i % 2 === k), concurrency: 32, tag: `rec${k}` })),
    );
    const ops = { ids: parts.flatMap((p) => p.ids), expect: parts.flatMap((p) => p.expect) };
    const before = await stack.pendingOperations();
    if (before !== pending) throw new Error(`recovery/${backend}: expected ${pending} pending operations before the crash, the gateway reports ${before}`);
    await stack.killGateway("SIGKILL");
    ctx.say(`recovery/${backend}: gateway killed (SIGKILL) with ${pending} pending; restarting it`);
    const gateway = await stack.startGateway();
    const restartToHealthyMs = stack.gatewayStartMs;
    // The supervisors come back as soon as the gateway answers (no reconnect backoff in the figure).
    const supervisorsAt = performance.now();
    const supervisors = groups.map((g) => stack.startSupervisor(g));
    const end = performance.now() + boundMs;
    const progress: [number, number][] = [];
    let left = pending;
    let error: string | undefined;
    while ((left = await stack.pendingOperations()) > 0) {
      const s = (performance.now() - gateway.spawnedAt) / 1000;
      if (s >= progress.length * 5) progress.push([Math.round(s), left]);
      const dead = supervisors.find((c) => !c.running);
      if (dead) error = `${dead.name} exited: ${dead.recent().split("\n").slice(-8).join(" | ")}`;
      else if (performance.now() > end) error = `${pending - left} of ${pending} terminal ${boundMs / 1000} s after the restart, ${left} still pending`;
      if (error) break;
      await sleep(50);
    }
    const restartToAllTerminalMs = performance.now() - gateway.spawnedAt;
    const supervisorsToAllTerminalMs = performance.now() - supervisorsAt;
    const cpuMsPerOp = error
      ? undefined
      : { gateway: round(sampleProc(gateway.pid).cpuMs / pending, 3), supervisors: round(supervisors.reduce((a, c) => a + sampleProc(c.pid).cpuMs, 0) / pending, 3) };
    const common = {
      backend,
      pending,
      supervisorProcesses: groups.length,
      restartToHealthyMs: Math.round(restartToHealthyMs),
      progress,
      reconnects: stack.supervisorReconnects(),
    };
    if (error) {
      // Reported with what it reached; the runner fails the run (operations stuck past the bound).
      return { ...common, restartToAllTerminalMs: NaN, supervisorsToAllTerminalMs: NaN, byState: { pending: left, terminal: pending - left }, error };
    }
    const check = await verify(stack, ops, `recovery/${backend}`);
    return {
      ...common,
      restartToAllTerminalMs: Math.round(restartToAllTerminalMs),
      supervisorsToAllTerminalMs: Math.round(supervisorsToAllTerminalMs),
      ...(cpuMsPerOp ? { cpuMsPerOp } : {}),
      byState: check.byState,
    };
  } catch (err) {
    throw stack.keepLogs(err);
  } finally {
    await stack.stop();
  }
}
