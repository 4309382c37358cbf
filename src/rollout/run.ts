// The rollout engine: one change to many sandboxes through the SDK's public client, wave by wave.
// Each wave's before-state is read and made durable, its sandboxes are sent (pool.ts), and its
// gate is judged (gate.ts): passed (then an optional pause), failed (nothing more is sent; with
// `rollback: "on-halt"` everything changed goes back, undo.ts), or pending (resume to judge).
// Resuming (the saved state, or the same id and change) re-sends the same keys, so a committed
// sandbox replays its original operation and never gets a second revision.

import type { ConfigClient } from "../client.js";
import { ROLLOUT_KIND, type RolloutState } from "./state.js";
import { plan, type Plan, type RolloutOptions } from "./plan.js";
import { selectByLabels } from "./select.js";
import { planWaves } from "./waves.js";
import { judgeWave, waveLabel, type GateVerdict } from "./gate.js";
import { captureBefore } from "./before.js";
import { runWave, type Tally } from "./pool.js";
import { runUndo } from "./undo.js";
import {
  countResults,
  isFailure,
  slowestOf,
  summarizeRollback,
  type RolloutPhase,
  type RolloutResult,
  type SandboxRollback,
  type SandboxRolloutResult,
  type WaveResult,
} from "./result.js";
import { failsGate } from "./gate.js";
import { createEventLog } from "./events.js";
import type { RolloutEvent } from "./events.js";
import { createRecordSync } from "./record-sync.js";
import type { RunTally, SharedRollout } from "./shared-rollout.js";

export type { RolloutOptions } from "./plan.js";

/**
 * A running rollout: await it for the result, or iterate it for events (ending with
 * `finished`). Starts as soon as it is created.
 */
export interface RolloutRun extends PromiseLike<RolloutResult>, AsyncIterable<RolloutEvent> {
  /** The rollout id. */
  readonly id: string;
  /** The result; rejects only when the targets could not be chosen (e.g. ListSandboxes failed) or the waves do not fit them. */
  readonly result: Promise<RolloutResult>;
  /** The state so far, plain JSON: save it to resume in another process. */
  state(): RolloutState;
}

const PERSIST_EVERY_MS = 250;

function stateOf(p: Plan, targets: readonly string[]): RolloutState {
  return {
    kind: ROLLOUT_KIND,
    id: p.id,
    ...(p.workspace !== undefined ? { workspace: p.workspace } : {}),
    ...(p.labelSelector !== undefined ? { labelSelector: p.labelSelector } : {}),
    request: p.requestJson,
    concurrency: p.concurrency,
    ...(p.maxFailures !== undefined ? { maxFailures: p.maxFailures } : {}),
    ...(p.waitTimeoutMs !== undefined ? { waitTimeoutMs: p.waitTimeoutMs } : {}),
    sandboxes: [...targets],
    refs: { ...p.refs },
    waves: p.waves.map((w) => ({ sandboxes: [...w.sandboxes], gate: { ...w.gate } })),
    wave: p.wave,
    phase: p.phase,
    ...(p.pausedUntil !== undefined ? { pausedUntil: p.pausedUntil } : {}),
    ...(p.gateFailure !== undefined ? { gateFailure: { ...p.gateFailure } } : {}),
    rollback: p.rollback,
    before: { ...p.before },
    undoRefs: { ...p.undoRefs },
  };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function pauseFor(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** What a run has seen, for the summary its shared record shows. */
function observe(tally: RunTally, e: RolloutEvent): void {
  if (e.type === "result") {
    const r = e.result;
    const failed = r.status === "error" || (r.status === "completed" && (r.completion.state === "failed" || r.completion.state === "cancelled"));
    tally.outcomes.set(r.sandbox, r.status === "completed" && r.completion.state === "applied" ? "applied" : failed ? "failed" : "other");
  } else if (e.type === "rollback-result" && e.rollback.status === "completed" && e.rollback.completion.state === "applied") {
    tally.rolledBack.add(e.sandbox);
  }
}

/**
 * Starts a rollout with `client`. Throws InvalidArgumentError (naming the field) before anything is
 * sent. `acquired`: the shared record whose lease the caller already took (resuming by id).
 */
export function startRollout(client: ConfigClient, options: RolloutOptions, acquired?: SharedRollout): RolloutRun {
  const p = plan(options, client.workspace);
  const log = createEventLog(options.onProgress);
  const seen: RunTally = { outcomes: new Map(), rolledBack: new Set(), end: undefined };
  const sync = createRecordSync(client, options, seen, acquired);
  const emit = (e: RolloutEvent) => {
    observe(seen, e);
    log.push(e);
  };
  const signal = options.signal;
  let targets: readonly string[] = p.names ?? [];
  const state = () => stateOf(p, targets);

  // onState: awaited where resuming needs it, else at most every 250 ms while sending. A failure
  // stops every further commit.
  let stateError: { error: unknown } | undefined;
  let lastPersist = 0;
  let inFlight: Promise<void> | undefined;
  // The shared record (record-sync.ts) is written first: a state only the local file had would
  // not be seen by another operator resuming the rollout.
  const durable = () => options.onState !== undefined || sync.shared();
  const persist = async (final = false): Promise<void> => {
    if (!durable() || stateError) return;
    await inFlight;
    lastPersist = Date.now();
    try {
      const s = state();
      await (final ? sync.end(s) : sync.write(s));
      await options.onState?.(s);
    } catch (error) {
      stateError ??= { error };
    }
  };
  const persistSoon = () => {
    if (!durable() || inFlight || Date.now() - lastPersist < PERSIST_EVERY_MS) return;
    inFlight = persist().finally(() => (inFlight = undefined));
  };
  const stopped = () => stateError !== undefined;

  const result = (async (): Promise<RolloutResult> => {
    // No event before rollout() has returned its run: a callback may use the run.
    await Promise.resolve();
    const started = Date.now();
    if (p.names === undefined) targets = await selectByLabels(client, p.labelSelector!, p.workspace, signal);
    if (!p.resumed) p.waves = p.waveInput ? planWaves(p.waveInput, targets, p.id, p.baseGate) : [];
    if (p.waves.length === 0 && targets.length > 0) p.waves = [{ sandboxes: [...targets], gate: p.baseGate }];
    if (p.resumed && options.maxFailures !== undefined) {
      // A new limit for the rest of the rollout; a single wave (no waves given) halts by it too.
      const single = p.waves.length === 1;
      p.waves = p.waves.map((w) => ({ ...w, gate: { ...w.gate, maxTotalFailures: p.maxFailures ?? null, ...(single ? { maxFailures: p.maxFailures ?? null } : {}) } }));
    }
    // The lease before anything is sent: another live driver of this rollout refuses this one.
    await sync.begin(state(), !p.resumed, p.undo);
    if (!p.resumed) await persist();
    emit({ type: "started", id: p.id, sandboxes: [...targets], alreadyCommitted: targets.filter((t) => p.refs[t]).length });

    const results = new Map<string, SandboxRolloutResult>();
    const tally: Tally = { done: 0, total: targets.length, failures: 0, gateFailures: 0 };
    const verdicts: { gate: GateVerdict; reason: string | undefined }[] = p.waves.map(() => ({ gate: "not-reached", reason: undefined }));
    const undoing = p.undo || p.phase === "rolling-back";
    let stopNew = undoing;
    let halted = false;
    let end: RolloutPhase | undefined;
    const n = p.waves.length;

    for (let i = 0; i < n; i++) {
      const w = p.waves[i]!;
      const label = waveLabel(i, n);
      const failedHere = p.gateFailure?.wave === i;
      // Waves an earlier run passed are only awaited again (their gates stay passed).
      const replayOnly = stopNew || i < p.wave || failedHere || stopped();
      if (!replayOnly) {
        if (p.phase === "paused" && i === p.wave && p.pausedUntil !== undefined) {
          // A timed pause an earlier run began: wait only the rest.
          await pauseFor(Date.parse(p.pausedUntil) - Date.now(), signal);
          if (signal?.aborted) {
            end = "aborted";
            stopNew = true;
          }
        }
        if (!stopNew) {
          p.phase = "running";
          p.pausedUntil = undefined;
          emit({ type: "wave-started", wave: i, waves: n, sandboxes: [...w.sandboxes] });
        }
      }
      const refused = new Map<string, Error>();
      if (!replayOnly && !stopNew) {
        const unread = w.sandboxes.filter((s) => p.before[s] === undefined && p.refs[s] === undefined);
        const read = await captureBefore(client, unread, p.change, { workspace: p.workspace, labelSelector: p.labelSelector, concurrency: p.concurrency, signal });
        unread.forEach((s, k) => {
          const b = read[k]!;
          // Without waves or a rollback mode, a before-state that cannot be read does not keep
          // the sandbox from its change (as before every rollout recorded one).
          if (b instanceof Error) {
            if (p.capture === "required") refused.set(s, b);
          } else p.before[s] = b;
        });
        // Durable before the wave's first commit: a rollback must know what to return to.
        await persist();
      }
      const run = await runWave(client, p, w.sandboxes, {
        index: i,
        label,
        gate: w.gate,
        tally,
        signal,
        emit,
        stopped,
        onSent: persistSoon,
        replayOnly: replayOnly || stopNew,
        refused,
      });
      run.results.forEach((r) => results.set(r.sandbox, r));
      if (replayOnly || stopNew) {
        if (i < p.wave) verdicts[i] = { gate: "passed", reason: undefined };
        if (failedHere) {
          verdicts[i] = { gate: "failed", reason: p.gateFailure!.reason };
          halted = true;
          stopNew = true;
        }
        continue;
      }
      if (signal?.aborted || stopped()) {
        end = "aborted";
        stopNew = true;
        continue;
      }
      const judged = judgeWave(w.gate, run.results, tally.gateFailures, label);
      verdicts[i] = { gate: judged.verdict, reason: judged.reason };
      if (judged.verdict === "failed") {
        halted = true;
        stopNew = true;
        p.wave = i;
        p.gateFailure = { wave: i, reason: judged.reason };
        emit({ type: "gate", wave: i, verdict: "failed", reason: judged.reason });
        continue;
      }
      if (judged.verdict === "pending") {
        end = "incomplete";
        stopNew = true;
        continue;
      }
      emit({ type: "gate", wave: i, verdict: "passed", reason: judged.reason });
      p.wave = i + 1;
      const pause = w.gate.pause;
      if (i === n - 1 || pause === null) continue;
      p.phase = "paused";
      if (pause === "approval") {
        await persist();
        emit({ type: "paused", wave: i, until: undefined });
        end = "paused";
        stopNew = true;
        continue;
      }
      const until = new Date(Date.now() + pause);
      p.pausedUntil = until.toISOString();
      await persist();
      emit({ type: "paused", wave: i, until });
      await pauseFor(pause, signal);
      if (signal?.aborted) {
        end = "aborted";
        stopNew = true;
      }
    }

    // Rollback: after a failed gate (on-halt), when asked (undo), or to finish one a crash cut short.
    let rollbacks: Map<string, SandboxRollback> | undefined;
    if (!stopped() && !signal?.aborted && (undoing || (halted && p.rollback === "on-halt"))) {
      const changed = targets.filter((t) => p.refs[t] !== undefined);
      p.phase = "rolling-back";
      emit({ type: "rollback-started", sandboxes: changed, reason: p.undo ? "undo requested" : (p.gateFailure?.reason ?? "resumed rollback") });
      rollbacks = await runUndo(client, p, changed, { signal, emit, persist });
      const open = [...rollbacks.values()].some((r) => r.status === "pending") || signal?.aborted || stopped();
      if (!open) p.phase = "done";
      end = signal?.aborted || stopped() ? "aborted" : open ? "incomplete" : "rolled-back";
    } else if (end === undefined) {
      p.phase = "done";
      end = halted ? "halted" : "complete";
    } else if (end === "incomplete" || (end === "aborted" && p.phase !== "paused")) {
      p.phase = "running";
    }
    seen.end = end;
    await inFlight;
    await persist(true);
    // A run whose state could not be written still gives its lease up (end did not run).
    if (stateError) await sync.abandon(state());

    const ordered = targets.map((t) => {
      const r = results.get(t)!;
      const rb = rollbacks?.get(t);
      return rb ? { ...r, rollback: rb } : r;
    });
    const counts = countResults(ordered, targets.length);
    const waves: WaveResult[] = p.waves.map((w, i) => {
      const rs = w.sandboxes.map((s) => results.get(s)!);
      return { index: i, sandboxes: [...w.sandboxes], counts: countResults(rs, rs.length), failures: rs.filter((r) => failsGate(r, w.gate)).length, ...verdicts[i]! };
    });
    const out: RolloutResult = {
      id: p.id,
      sandboxes: ordered,
      counts,
      failures: ordered.filter(isFailure).length,
      halted,
      aborted: signal?.aborted === true || stopped(),
      complete: counts.byStatus.completed === targets.length,
      slowest: slowestOf(ordered),
      durationMs: Date.now() - started,
      state: state(),
      phase: end,
      waves,
      ...(p.gateFailure !== undefined ? { gateFailure: { ...p.gateFailure } } : {}),
      ...(rollbacks ? { rollback: summarizeRollback(ordered) } : {}),
      ...(stateError ? { stateError: stateError.error } : {}),
    };
    emit({ type: "finished", result: out });
    return out;
  })();
  // However the run ends (a rejection after the lease was taken too), nothing keeps renewing it.
  result.catch(() => sync.abandon(state()));
  result.then(
    () => log.close(),
    (error: unknown) => log.close({ error }),
  );
  // Iterating is an alternative to awaiting: an unobserved rejection must not crash the process.
  result.catch(() => {});

  return {
    id: p.id,
    result,
    state,
    then: (onFulfilled, onRejected) => result.then(onFulfilled, onRejected),
    [Symbol.asyncIterator]: () => log.iterate(),
  };
}
