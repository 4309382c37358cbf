// Scenario 5, recovery: P operations left pending by a crash. The sandboxes are bootstrapped,
// their supervisors stopped, one policy update committed to each (no supervisor connected, so
// each stays PENDING), then the gateway is killed with SIGKILL and a new one started on the same
// database. The supervisor processes are started the moment it answers /healthz, so the figure
// holds no reconnect backoff (supervisors that were retrying during the outage add up to their
// backoff ceiling: 250 ms doubling to 30 s, full jitter). Measured: restart → no operation
// pending; then every operation is read back and must be applied.

import { sleep, type Child } from "../lib/proc.js";
import { groupNames, Stack, type Backend } from "../lib/stack.js";
import { bootstrapAll, createAll, groupsFor, IntegrityError, verify, type Context } from "./common.js";

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
}

const PER_PROCESS = 2_500;

export async function recoveryScenario(ctx: Context, backend: Backend, pending: number): Promise<RecoveryResult> {
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
    const boundMs = Math.max(120_000, pending * 15);
    const end = performance.now() + boundMs;
    let left = pending;
    while ((left = await stack.pendingOperations()) > 0) {
      const dead = supervisors.find((c) => !c.running);
      if (dead) throw new IntegrityError(`recovery/${backend}: ${left} of ${pending} still pending; ${dead.name} exited: ${dead.recent().split("\n").slice(-8).join(" | ")}`);
      if (performance.now() > end) throw new IntegrityError(`recovery/${backend}: ${left} of ${pending} operation(s) still pending ${boundMs / 1000} s after the restart (stuck)`);
      await sleep(50);
    }
    const restartToAllTerminalMs = performance.now() - gateway.spawnedAt;
    const supervisorsToAllTerminalMs = performance.now() - supervisorsAt;
    const check = await verify(stack, ops, `recovery/${backend}`);
    return {
      backend,
      pending,
      supervisorProcesses: groups.length,
      restartToHealthyMs: Math.round(restartToHealthyMs),
      restartToAllTerminalMs: Math.round(restartToAllTerminalMs),
      supervisorsToAllTerminalMs: Math.round(supervisorsToAllTerminalMs),
      byState: check.byState,
    };
  } catch (err) {
    throw stack.keepLogs(err);
  } finally {
    await stack.stop();
  }
}
