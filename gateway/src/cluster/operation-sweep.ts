// The repair path of cross-replica waits: an operation completed on another replica reaches the
// waiters here through a notification, and if that was lost (or notifications are off), through
// this sweep, which re-reads every operation someone here waits on by id, in one query per
// interval, and hands the terminal ones to the bus. Idle when nobody waits.

import { createPeriodic } from "../operations/periodic.js";
import type { Logger } from "pino";
import type { OperationBus } from "../operations/bus.js";
import { isTerminalState } from "../operations/states.js";
import type { Store } from "../store/store.js";

/** Ids read per query. */
const CHUNK = 500;

export interface OperationSweep {
  runOnce(): Promise<number>;
  start(): void;
  stop(): void;
}

export function createOperationSweep(store: Store, bus: OperationBus, intervalMs: number, logger: Logger): OperationSweep {

  async function runOnce(): Promise<number> {
    const ids = bus.watchedOperations();
    let woken = 0;
    for (let i = 0; i < ids.length; i += CHUNK) {
      for (const op of await store.operationsById(ids.slice(i, i + CHUNK))) {
        if (!isTerminalState(op.state)) continue;
        woken++;
        bus.deliver(op);
      }
    }
    return woken;
  }

  const periodic = createPeriodic(runOnce, {
    intervalMs,
    logger,
    done: "operation sweep woke waiters",
    failed: "operation sweep failed",
    immediately: false,
  });

  return { runOnce, start: periodic.start, stop: periodic.stop };
}
