// Moving an operation out of PENDING: once, by compare-and-set, never again. Every transition
// is stored first and announced after, so a woken waiter always reads a committed row.

import { Code, ConnectError } from "@connectrpc/connect";
import { ConfigUpdateOperationState as State } from "openshell-config/raw";
import type { OperationPatch, OperationRecord, Store, StoreTx } from "../store/store.js";
import type { OperationBus } from "./bus.js";
import { sanitizeError } from "./states.js";

const CAS_ATTEMPTS = 8;

export interface Resolution {
  readonly state: State;
  readonly outcome?: number;
  readonly error?: string;
  readonly target?: Uint8Array;
}

/** Observes terminal transitions (metrics). */
export type TransitionObserver = (op: OperationRecord) => void;

function patchOf(r: Resolution, now: Date): OperationPatch {
  return {
    state: r.state,
    outcome: r.outcome ?? 0,
    sanitizedError: sanitizeError(r.error ?? ""),
    completedAt: now,
    ...(r.target ? { target: r.target } : {}),
  };
}

/**
 * Resolves a PENDING operation inside an open transaction; returns the new row, or `undefined`
 * when it had already left PENDING (the first resolution wins).
 */
export async function resolveInTx(tx: StoreTx, op: OperationRecord, r: Resolution): Promise<OperationRecord | undefined> {
  if (op.state !== State.PENDING) return undefined;
  return tx.updateOperation(op.id, op.rowVersion, patchOf(r, new Date()));
}

/**
 * Like `resolveInTx`, but when the row changed since `op` was read (a reconciler claim, a new
 * target), reads it again and retries while it is still PENDING and `accept` agrees. For callers
 * that batch several transitions into one transaction.
 */
export async function resolveLatestInTx(
  tx: StoreTx,
  op: OperationRecord,
  r: Resolution,
  accept: (op: OperationRecord) => boolean = () => true,
): Promise<OperationRecord | undefined> {
  let current: OperationRecord | undefined = op;
  for (let attempt = 0; attempt < CAS_ATTEMPTS && current; attempt++) {
    if (current.state !== State.PENDING || !accept(current)) return undefined;
    const next = await tx.updateOperation(current.id, current.rowVersion, patchOf(r, new Date()));
    if (next) return next;
    current = await tx.operation(current.id);
  }
  if (current?.state === State.PENDING) {
    throw new ConnectError("update operation changed concurrently; retry the operation query", Code.Aborted);
  }
  return undefined;
}

export interface Transitions {
  /**
   * Resolves operation `id` unless it already left PENDING or `accept` rejects the current row
   * (e.g. the target revision no longer matches). Returns the stored row after the attempt.
   */
  resolve(id: string, r: Resolution, accept?: (op: OperationRecord) => boolean): Promise<OperationRecord | undefined>;
  /** Announces rows changed inside a transaction, after it committed. */
  announce(ops: readonly OperationRecord[]): void;
}

export function createTransitions(store: Store, bus: OperationBus, observe: TransitionObserver = () => {}): Transitions {
  const announce = (ops: readonly OperationRecord[]) => {
    for (const op of ops) {
      if (op.state !== State.PENDING) observe(op);
      bus.publish(op);
    }
  };
  return {
    announce,
    async resolve(id, r, accept = () => true) {
      for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
        const current = await store.operation(id);
        if (!current || current.state !== State.PENDING || !accept(current)) return current;
        const next = await store.transaction((tx) => tx.updateOperation(id, current.rowVersion, patchOf(r, new Date())));
        if (next) {
          announce([next]);
          return next;
        }
      }
      throw new ConnectError("update operation changed concurrently; retry the operation query", Code.Aborted);
    },
  };
}
