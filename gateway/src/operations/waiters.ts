// Waiting for an operation to leave PENDING: woken by the operation bus, bounded by a timer,
// ended early by the caller going away or the gateway shutting down. A wait never changes the
// operation; it only reads it.

import { Code, ConnectError } from "@connectrpc/connect";
import type { OperationRecord, Store } from "../store/store.js";
import type { OperationBus } from "./bus.js";
import { isTerminalState } from "./states.js";

/**
 * Listening to an operation from before the commit that creates it (`Waiters.listen`): a wait
 * that starts from it already knows the row, so it need not read it.
 */
export interface WaitStart {
  readonly id: string;
  /** Stops listening (idempotent); a wait that started from this one stops it itself. */
  close(): void;
}

interface WaitStartState extends WaitStart {
  /** The first terminal row heard before a wait started. */
  heard: OperationRecord | undefined;
  /** Set by the wait that started from this one. */
  wake: ((op: OperationRecord) => void) | undefined;
}

export interface Waiters {
  /**
   * Resolves with the terminal row, or throws DEADLINE_EXCEEDED (with `operation-id`
   * metadata) after `timeoutMs`, CANCELED when `signal` aborts, UNAVAILABLE on shutdown.
   * `from`: the wait continues `start`, which listened since before `current` (the row as
   * committed) was stored, so every later transition was heard and no read is needed.
   */
  waitFor(id: string, timeoutMs: number, signal: AbortSignal, from?: { start: WaitStart; current: OperationRecord }): Promise<OperationRecord>;
  /** Starts listening to operation `id` before it is committed (see WaitStart). */
  listen(id: string): WaitStart;
  /** Number of waits in progress. */
  readonly active: number;
  /** Ends every wait with UNAVAILABLE and refuses new ones. */
  shutdown(): void;
  /**
   * Calls `end` with the UNAVAILABLE error on shutdown (at once if it already happened), for other
   * long-lived calls (watch streams) that must end then too. Returns the unsubscribe function.
   */
  onShutdown(end: (err: ConnectError) => void): () => void;
}

export function createWaiters(store: Store, bus: OperationBus): Waiters {
  const ending = new Set<(err: Error) => void>();
  const others = new Set<(err: ConnectError) => void>();
  let closed = false;
  return {
    get active() {
      return ending.size;
    },
    shutdown() {
      closed = true;
      const err = new ConnectError("gateway is shutting down", Code.Unavailable);
      for (const end of [...ending]) end(err);
      for (const end of [...others]) end(err);
    },
    onShutdown(end) {
      if (closed) end(new ConnectError("gateway is shutting down", Code.Unavailable));
      others.add(end);
      return () => others.delete(end);
    },
    listen(id) {
      const state: WaitStartState = {
        id,
        heard: undefined,
        wake: undefined,
        close: () => unsubscribe(),
      };
      const unsubscribe = bus.onOperation(id, (op) => {
        if (!isTerminalState(op.state)) return;
        if (state.wake) state.wake(op);
        else state.heard ??= op;
      });
      return state;
    },
    async waitFor(id, timeoutMs, signal, from) {
      const start = from && from.start.id === id ? (from.start as WaitStartState) : undefined;
      if (closed) {
        start?.close();
        throw new ConnectError("gateway is shutting down", Code.Unavailable);
      }
      let wake!: (op: OperationRecord) => void;
      let fail!: (err: Error) => void;
      const done = new Promise<OperationRecord>((resolve, reject) => {
        wake = resolve;
        fail = reject;
      });
      // The wait can fail (shutdown, abort, timer) while the row is still being read, before
      // anything awaits `done`: mark it handled so that is not an unhandled rejection (which
      // would end the process). `await done` below still sees the failure.
      done.catch(() => undefined);
      // Subscribe before reading, so a transition between the read and the subscription is not missed.
      let unsubscribe: () => void;
      if (start) {
        start.wake = (op) => wake(op);
        unsubscribe = () => start.close();
      } else {
        unsubscribe = bus.onOperation(id, (op) => {
          if (isTerminalState(op.state)) wake(op);
        });
      }
      const timer = setTimeout(
        () => fail(new ConnectError(`timed out waiting for update operation ${id}`, Code.DeadlineExceeded, { "operation-id": id })),
        timeoutMs,
      );
      const onAbort = () => fail(new ConnectError("the caller cancelled the wait", Code.Canceled));
      signal.addEventListener("abort", onAbort, { once: true });
      ending.add(fail);
      try {
        const current = start ? (start.heard ?? from!.current) : await store.operation(id);
        if (!current) throw new ConnectError("update operation not found", Code.NotFound);
        if (isTerminalState(current.state)) return current;
        if (signal.aborted) onAbort();
        return await done;
      } finally {
        unsubscribe();
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        ending.delete(fail);
      }
    },
  };
}
