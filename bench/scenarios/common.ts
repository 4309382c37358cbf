// What every scenario shares: its context, sandbox setup (create + supervisors + READY), and the
// final check that every operation reached an expected terminal state.

import type { CheckResult, Ops } from "../client.js";
import { groupNames, splitGroups, type Group, type Stack } from "../lib/stack.js";
import type { Child } from "../lib/proc.js";

export interface Context {
  readonly full: boolean;
  /** Progress lines for the console. */
  readonly say: (msg: string) => void;
}

/** Thrown for a run that lost, stuck or mis-resolved operations: the run fails (exit 1). */
export class IntegrityError extends Error {
  override readonly name = "IntegrityError";
}

/** One supervisor process per `perProcess` sandboxes (at least `min`). */
export function groupsFor(base: string, sandboxes: number, perProcess: number, min = 1): Group[] {
  return splitGroups(base, sandboxes, Math.max(min, Math.ceil(sandboxes / perProcess)));
}

/** Creates every sandbox of `groups` from `workers` client processes. */
export async function createAll(stack: Stack, groups: readonly Group[], workers = 2, concurrency = 32): Promise<number> {
  const names = groups.flatMap(groupNames);
  const t0 = performance.now();
  const n = Math.max(1, Math.min(workers, Math.ceil(names.length / 500)));
  await Promise.all(
    Array.from({ length: n }, (_, k) => stack.run({ kind: "create", names: names.filter((_, i) => i % n === k), concurrency })),
  );
  return performance.now() - t0;
}

/**
 * Starts one supervisor process per group when the READY watcher is released and waits until
 * every sandbox is READY. Returns ms from the supervisors' spawn until all were READY.
 */
export async function bootstrapAll(
  stack: Stack,
  groups: readonly Group[],
  timeoutMs: number,
  args: readonly string[] = [],
  opts: { alreadyReady?: number } = {},
): Promise<{ ms: number; supervisors: Child[] }> {
  const count = groups.reduce((a, g) => a + g.count, 0) + (opts.alreadyReady ?? 0);
  const supervisors: Child[] = [];
  let crashed: ((err: Error) => void) | undefined;
  const crash = new Promise<never>((_, reject) => (crashed = reject));
  void crash.catch(() => {});
  const ready = stack.runTogether([{ kind: "ready", count, intervalMs: count > 2000 ? 250 : 100, timeoutMs }], () => {
    for (const g of groups) {
      const c = stack.startSupervisor(g, args);
      supervisors.push(c);
      // A supervisor process that dies ends the wait at once, with its last words.
      void c.exited.then(({ code, signal }) => {
        if (!c.stopping) crashed?.(new Error(`${c.name} exited (${code ?? signal}) during the bootstrap: ${c.recent().split("\n").slice(-12).join(" | ")}`));
      });
    }
  });
  const { results, goAt } = await Promise.race([ready, crash]);
  return { ms: results[0]!.readyAt - goAt, supervisors };
}

/** Reads every operation back; throws IntegrityError when one is not in an expected terminal state. */
export async function verify(stack: Stack, ops: Ops, what: string): Promise<CheckResult> {
  const n = Math.max(1, Math.min(2, Math.ceil(ops.ids.length / 2000)));
  const parts = await Promise.all(
    Array.from({ length: n }, (_, k) =>
      stack.run({ kind: "check", ids: ops.ids.filter((_, i) => i % n === k), expect: ops.expect.filter((_, i) => i % n === k), concurrency: 32 }),
    ),
  );
  const byState: Record<string, number> = {};
  for (const p of parts) for (const [s, c] of Object.entries(p.byState)) byState[s] = (byState[s] ?? 0) + c;
  const mismatches = parts.flatMap((p) => p.mismatches);
  const pending = parts.reduce((a, p) => a + p.pending, 0);
  if (mismatches.length > 0) {
    throw new IntegrityError(`${what}: ${mismatches.length} operation(s) not in the expected terminal state (${pending} still pending): ${mismatches.slice(0, 5).join("; ")}`);
  }
  return { byState, mismatches, pending };
}

/** Waits until the gateway reports no pending operation; throws IntegrityError after `timeoutMs`. */
export async function drained(stack: Stack, timeoutMs: number, what: string): Promise<void> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const pending = await stack.pendingOperations();
    if (pending === 0) return;
    if (performance.now() > end) throw new IntegrityError(`${what}: ${pending} operation(s) still pending after ${timeoutMs} ms (stuck)`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
