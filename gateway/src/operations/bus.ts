// In-process notifications of operation changes: the fast path that wakes waiters and watch
// streams the moment a transition is stored. Listeners run synchronously and must not throw;
// the database stays authoritative (a waiter re-reads the row after subscribing).

import type { OperationRecord } from "../store/store.js";

export type OperationListener = (op: OperationRecord) => void;

export interface OperationBus {
  /** Announce a stored operation (newly inserted or transitioned). */
  publish(op: OperationRecord): void;
  /** Listen to one operation's changes; returns the unsubscribe function. */
  onOperation(id: string, listener: OperationListener): () => void;
  /** Listen to every change of one sandbox's operations. */
  onSandbox(sandboxId: string, listener: OperationListener): () => void;
}

export function createOperationBus(): OperationBus {
  const byOp = new Map<string, Set<OperationListener>>();
  const bySandbox = new Map<string, Set<OperationListener>>();
  const add = (map: Map<string, Set<OperationListener>>, key: string, l: OperationListener) => {
    let set = map.get(key);
    if (!set) map.set(key, (set = new Set()));
    set.add(l);
    return () => {
      set!.delete(l);
      if (set!.size === 0) map.delete(key);
    };
  };
  return {
    publish(op) {
      for (const l of [...(byOp.get(op.id) ?? [])]) l(op);
      for (const l of [...(bySandbox.get(op.sandboxId) ?? [])]) l(op);
    },
    onOperation: (id, l) => add(byOp, id, l),
    onSandbox: (sandboxId, l) => add(bySandbox, sandboxId, l),
  };
}
