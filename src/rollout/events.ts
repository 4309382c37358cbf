// A rollout's progress as events, for progress bars (`onProgress`) and for scripts that stream
// results (`for await … of`). Every event is kept for the rollout's life, so an iterator started
// late still sees the rollout from its first event (a few hundred bytes per sandbox).

import type { OperationHandle } from "../handle.js";
import type { RolloutResult, SandboxRollback, SandboxRolloutResult } from "./result.js";

/** How far a rollout has got. */
export interface RolloutProgress {
  /** Sandboxes with a result (completed, pending, error or skipped). */
  readonly done: number;
  /** Every target sandbox. */
  readonly total: number;
  /** Results that count against `maxFailures`. */
  readonly failures: number;
}

/** Something that happened during a rollout. Discriminated on `type`. */
export type RolloutEvent =
  | {
      /** The targets are known; nothing is sent yet by this run. */
      readonly type: "started";
      /** The rollout id. */
      readonly id: string;
      /** The target sandboxes, in order. */
      readonly sandboxes: readonly string[];
      /** How many of them an earlier run had sent (resumed from state): they are replayed whatever happens. */
      readonly alreadyCommitted: number;
    }
  | {
      /** A sandbox's change is sent: committed (or, sent again with its key, replayed) and awaited in one request. */
      readonly type: "sent";
      /** The sandbox name. */
      readonly sandbox: string;
      /** Resumes this sandbox's wait in any process (`awaitCompletion`); re-sending it commits at most once. */
      readonly handle: OperationHandle;
    }
  | {
      /** A sandbox has its result. */
      readonly type: "result";
      /** The result. */
      readonly result: SandboxRolloutResult;
      /** Progress including this result. */
      readonly progress: RolloutProgress;
    }
  | {
      /** A gate limit was reached (`failures` of `maxFailures`): no further sandbox is sent. Changes already sent are still awaited. */
      readonly type: "halted";
      /** Failures so far. */
      readonly failures: number;
      /** The limit that was reached. */
      readonly maxFailures: number;
    }
  | {
      /** A wave starts: its sandboxes' before-state is read (and made durable), then they are sent. */
      readonly type: "wave-started";
      /** The wave's index (0: the first). */
      readonly wave: number;
      /** How many waves there are. */
      readonly waves: number;
      /** Its sandboxes, in sending order. */
      readonly sandboxes: readonly string[];
    }
  | {
      /** A wave's gate was judged. */
      readonly type: "gate";
      /** The wave's index. */
      readonly wave: number;
      /** `passed` or `failed`. */
      readonly verdict: "passed" | "failed";
      /** The verdict as a sentence, e.g. "wave 1 (canary): 1 of 1 failed, limit 1". */
      readonly reason: string;
    }
  | {
      /** The rollout waits after a passed gate: until a time, or (approval) until its state is resumed. */
      readonly type: "paused";
      /** The wave that passed. */
      readonly wave: number;
      /** When the next wave starts (a timed pause); undefined: waiting for approval, and the run ends "paused". */
      readonly until: Date | undefined;
    }
  | {
      /** The rollback starts: a failed gate with `rollback: "on-halt"`, or an undo. */
      readonly type: "rollback-started";
      /** The sandboxes the rollout changed, which the rollback considers. */
      readonly sandboxes: readonly string[];
      /** Why: the failed gate's sentence, or "undo requested". */
      readonly reason: string;
    }
  | {
      /** One sandbox's rollback has its result. */
      readonly type: "rollback-result";
      /** The sandbox name. */
      readonly sandbox: string;
      /** What its rollback did. */
      readonly rollback: SandboxRollback;
    }
  | {
      /** The rollout is over; the same result the promise resolves to. */
      readonly type: "finished";
      /** The rollout's result. */
      readonly result: RolloutResult;
    };

/** Records events, forwards them to a callback, and serves any number of async iterators. */
export function createEventLog(onEvent: ((e: RolloutEvent) => void) | undefined) {
  const events: RolloutEvent[] = [];
  let closed = false;
  let failure: { error: unknown } | undefined;
  let wake: (() => void)[] = [];
  const notify = () => {
    const w = wake;
    wake = [];
    for (const f of w) f();
  };
  return {
    push(e: RolloutEvent): void {
      events.push(e);
      notify();
      // A throwing callback must not break the rollout it observes.
      try {
        onEvent?.(e);
      } catch {
        // ignored on purpose
      }
    },
    close(error?: { error: unknown }): void {
      closed = true;
      failure = error;
      notify();
    },
    async *iterate(): AsyncGenerator<RolloutEvent, void, undefined> {
      for (let i = 0; ; ) {
        if (i < events.length) {
          yield events[i++]!;
          continue;
        }
        if (closed) {
          if (failure) throw failure.error;
          return;
        }
        await new Promise<void>((resolve) => wake.push(resolve));
      }
    },
  };
}
