// The repair path: operations still PENDING when they fall due are delivered again, with backoff
// (250 ms × 2^attempt, at most 30 s), in bounded batches. A new operation first falls due
// FIRST_CHECK_MS after its commit: the push path normally completes it long before, and a
// claim is a durable write the common case should not pay. Runs at startup, so operations pending
// before a crash complete after it, and periodically, so a missed notification only delays.
//
// With several replicas each one reconciles the sandboxes whose supervisor sessions it owns
// (`ownedBy`), wherever the operation was committed: a notification lost between replicas then
// delays completion by at most FIRST_CHECK_MS plus one interval. A sandbox no replica owns has
// nobody to deliver to; its operations wait for the session's bootstrap, wherever it connects.

import type { Store } from "../store/store.js";
import type { SessionRegistry } from "../delivery/registry.js";
import { createPeriodic } from "./periodic.js";
import type { Logger } from "pino";

export interface ReconcilerOptions {
  readonly intervalMs?: number;
  readonly batchSize?: number;
  /** Replica id: reconcile only sandboxes whose sessions this replica owns (several replicas). */
  readonly ownedBy?: string;
}

export interface Reconciler {
  /** One pass; returns how many operations were due. */
  runOnce(): Promise<number>;
  start(): void;
  stop(): void;
}

/** How long after its commit a pending operation is first checked for redelivery. */
export const FIRST_CHECK_MS = 2_000;

export function redeliveryDelayMs(attempt: number): number {
  return Math.min(250 * 2 ** Math.min(attempt, 8), 30_000);
}

export function createReconciler(store: Store, registry: SessionRegistry, logger: Logger, options: ReconcilerOptions = {}): Reconciler {
  const intervalMs = options.intervalMs ?? 1_000;
  const batchSize = options.batchSize ?? 250;

  async function runOnce(): Promise<number> {
    const now = new Date();
    const due = await store.dueOperations(now, batchSize, options.ownedBy);
    if (due.length === 0) return 0;
    // The claims (next attempt times) commit, all in one transaction, before any delivery is queued.
    const claimed = await store.transaction(async (tx) => {
      const sandboxes = new Set<string>();
      for (const op of due) {
        const next = await tx.updateOperation(op.id, op.rowVersion, {
          attemptCount: op.attemptCount + 1,
          nextAttemptAt: new Date(now.getTime() + redeliveryDelayMs(op.attemptCount)),
        });
        if (next) sandboxes.add(op.sandboxId);
      }
      return sandboxes;
    });
    for (const id of claimed) registry.publish(id);
    return due.length;
  }

  const periodic = createPeriodic(runOnce, {
    intervalMs,
    logger,
    done: "reconciled pending operations",
    failed: "reconciliation pass failed",
    immediately: true,
  });

  return { runOnce, start: periodic.start, stop: periodic.stop };
}
