// Notifications of operation changes: the fast path that wakes waiters and watch streams the
// moment a transition is stored. Listeners run synchronously and must not throw; the database
// stays authoritative (a waiter re-reads the row after subscribing).
//
// In-process by itself. With several replicas, `relay` forwards every change this process
// stores to the others (cluster/notifications.ts), and what they stored comes back in through
// `deliver`, which wakes local listeners only, so nothing echoes between replicas.

import type { OperationRecord } from "../store/store.js";

export type OperationListener = (op: OperationRecord) => void;

export interface OperationBus {
  /** Announce a stored operation (newly inserted or transitioned) that this process changed. */
  publish(op: OperationRecord): void;
  /** Hand a row that another replica changed (re-read from the database) to local listeners. */
  deliver(op: OperationRecord): void;
  /** Listen to one operation's changes; returns the unsubscribe function. */
  onOperation(id: string, listener: OperationListener): () => void;
  /** Listen to every change of one sandbox's operations. */
  onSandbox(sandboxId: string, listener: OperationListener): () => void;
  /** Whether anyone here listens to operation `id` or to the operations of `sandboxId`. */
  isWatched(id: string, sandboxId: string): boolean;
  /** Ids of the operations someone here listens to by id. */
  watchedOperations(): string[];
}

export function createOperationBus(relay?: (op: OperationRecord) => void): OperationBus {
  const byOp = new Map<string, Set<OperationListener>>();
  const bySandbox = new Map<string, Set<OperationListener>>();
  const add = (map: Map<string, Set<OperationListener>>, key: string, l: OperationListener) => {
    let set = map.get(key);
    if (!set) map.set(key, (set = new Set()));
    set.add(l);
    return () => {
      set!.delete(l);
      if (set!.size === 0 && map.get(key) === set) map.delete(key);
    };
  };
  const deliver = (op: OperationRecord) => {
    for (const l of [...(byOp.get(op.id) ?? [])]) l(op);
    for (const l of [...(bySandbox.get(op.sandboxId) ?? [])]) l(op);
  };
  return {
    publish(op) {
      deliver(op);
      relay?.(op);
    },
    deliver,
    onOperation: (id, l) => add(byOp, id, l),
    onSandbox: (sandboxId, l) => add(bySandbox, sandboxId, l),
    isWatched: (id, sandboxId) => byOp.has(id) || bySandbox.has(sandboxId),
    watchedOperations: () => [...byOp.keys()],
  };
}
