// Sending one wave: a pool of `concurrency` workers commits each sandbox's change with a key
// derived from the rollout id and waits for that exact revision's outcome in the same request.
// Once the wave's gate limit is reached (or the signal fires, or the state cannot be recorded)
// no new sandbox is sent; changes already sent are still awaited. Resending a recorded sandbox
// replays its original operation: never a second revision.

import type { ConfigClient } from "../client.js";
import { CompletionTimeoutError, toSdkError } from "../errors.js";
import { createHandle } from "../refs.js";
import { isOperationHandle, type OperationHandle } from "../handle.js";
import { buildRequest } from "../update.js";
import { rolloutKey } from "./state.js";
import { isFailure, type SandboxRolloutResult } from "./result.js";
import { failsGate, limitReached } from "./gate.js";
import type { RolloutEvent } from "./events.js";
import type { Plan } from "./plan.js";
import type { Gate } from "./waves.js";
import { mapLimit } from "./map-limit.js";

/** Counters shared by every wave of one run. */
export interface Tally {
  done: number;
  total: number;
  /** Results that count against `maxFailures` (failed, cancelled, error). */
  failures: number;
  /** Results that counted against their wave's gate, over the whole rollout. */
  gateFailures: number;
}

/** What a wave's pool needs besides the plan. */
export interface WaveContext {
  readonly index: number;
  readonly label: string;
  readonly gate: Gate;
  readonly tally: Tally;
  readonly signal: AbortSignal | undefined;
  readonly emit: (e: RolloutEvent) => void;
  /** True once nothing more may be committed (the state could not be recorded). */
  readonly stopped: () => boolean;
  /** Called after each send is recorded in `p.refs` (the run persists at most every 250 ms). */
  readonly onSent: () => void;
  /** Only re-send what an earlier run sent (awaiting it); skip the rest as halted. */
  readonly replayOnly: boolean;
  /** Sandboxes that must not be sent, with why (their before-state could not be read). */
  readonly refused: ReadonlyMap<string, Error>;
}

/** Commits and awaits the wave's sandboxes, at most `p.concurrency` in flight; results in order. */
export async function runWave(
  client: ConfigClient,
  p: Plan,
  sandboxes: readonly string[],
  w: WaveContext,
): Promise<{ results: SandboxRolloutResult[]; halted: boolean }> {
  const results: SandboxRolloutResult[] = new Array(sandboxes.length);
  let waveFailures = 0;
  let halted = false;
  const wave = w.index;

  const finish = (i: number, r: SandboxRolloutResult) => {
    results[i] = r;
    const t = w.tally;
    t.done++;
    if (isFailure(r)) t.failures++;
    if (failsGate(r, w.gate)) {
      waveFailures++;
      t.gateFailures++;
    }
    w.emit({ type: "result", result: r, progress: { done: t.done, total: t.total, failures: t.failures } });
    if (!halted && limitReached(w.gate, waveFailures, t.gateFailures, sandboxes.length, w.label) !== undefined) {
      halted = true;
      const byWave = w.gate.maxFailures !== null && waveFailures >= w.gate.maxFailures;
      w.emit({ type: "halted", failures: byWave ? waveFailures : t.gateFailures, maxFailures: byWave ? w.gate.maxFailures! : w.gate.maxTotalFailures! });
    }
  };

  const one = async (i: number) => {
    const sandbox = sandboxes[i]!;
    const sentBefore = p.refs[sandbox] !== undefined;
    const signal = w.signal;
    if (!sentBefore && (halted || w.replayOnly || signal?.aborted || w.stopped())) {
      return finish(i, { status: "skipped", sandbox, wave, reason: signal?.aborted || w.stopped() ? "aborted" : "halted" });
    }
    if (signal?.aborted || (sentBefore && w.stopped())) {
      return finish(i, { status: "pending", sandbox, wave, handle: p.refs[sandbox]!, reason: "aborted", durationMs: 0 });
    }
    const refused = sentBefore ? undefined : w.refused.get(sandbox);
    if (refused) return finish(i, { status: "error", sandbox, wave, error: refused, handle: undefined, durationMs: 0 });
    // Recorded before sending: from here on a resume re-sends this sandbox's change (with the same
    // key, so at most one revision) even after a halt, as this run meant to commit it.
    const sent = p.refs[sandbox] ?? sentHandle(p, sandbox);
    p.refs[sandbox] = sent;
    w.emit({ type: "sent", sandbox, handle: sent });
    w.onSent();
    const t0 = Date.now();
    try {
      const { completion, handle } = await commitAndWait(client, p, sandbox, signal);
      p.refs[sandbox] = handle;
      finish(i, { status: "completed", sandbox, wave, completion, handle, durationMs: Date.now() - t0 });
    } catch (err) {
      const durationMs = Date.now() - t0;
      if (err instanceof CompletionTimeoutError) {
        if (isOperationHandle(err.ref)) p.refs[sandbox] = err.ref;
        return finish(i, { status: "pending", sandbox, wave, handle: p.refs[sandbox]!, reason: err.reason, durationMs });
      }
      // Refused by the gateway (e.g. no such sandbox): nothing was committed by this send.
      if (!sentBefore) delete p.refs[sandbox];
      finish(i, { status: "error", sandbox, wave, error: toSdkError(err), handle: p.refs[sandbox], durationMs });
    }
  };

  await mapLimit(sandboxes, p.concurrency, (_, i) => one(i));
  return { results, halted };
}

/** A handle for a change about to be sent: re-sending it replays (or makes) the one commit. */
function sentHandle(p: Plan, sandbox: string): OperationHandle {
  const request = buildRequest(
    { sandbox, idempotencyKey: rolloutKey(p.id, sandbox), workspace: p.workspace, annotations: p.annotations },
    p.change,
  );
  return createHandle(request, { operationId: undefined, workspace: p.workspace, policyVersion: undefined });
}

/**
 * Commits one sandbox's change and waits for its outcome in one request (the gateway's own wait),
 * or replays the commit made by an earlier run. One unary call per sandbox: no stream per
 * sandbox, whose cancellation a server could count as a reset flood. Without `wait` it only
 * commits (or replays), which tells the committed policy version.
 */
export function commitAndWait(client: ConfigClient, p: Plan, sandbox: string, signal: AbortSignal | undefined) {
  const common = {
    sandbox,
    idempotencyKey: rolloutKey(p.id, sandbox),
    ...(p.workspace !== undefined ? { workspace: p.workspace } : {}),
    ...(p.annotations !== undefined ? { annotations: p.annotations } : {}),
    wait: { ...(p.waitTimeoutMs !== undefined ? { timeoutMs: p.waitTimeoutMs } : {}), ...(signal ? { signal } : {}) },
  };
  const c = p.change;
  if ("key" in c && c.key !== undefined) return client.updateSettings({ ...common, ...c } as Parameters<ConfigClient["updateSettings"]>[0] & { wait: object });
  return client.updatePolicy({ ...common, ...c } as Parameters<ConfigClient["updatePolicy"]>[0] & { wait: object });
}
