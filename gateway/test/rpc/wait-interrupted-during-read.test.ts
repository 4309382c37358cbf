// A wait can end (gateway shutdown, caller gone, deadline) while the waiter is still reading the
// operation's row. That failure must reach the waiter, and must never surface as an unhandled
// promise rejection, which ends a Node process. The store read is held open deterministically.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { ConfigUpdateOperationState as State } from "openshell-config/raw";
import { createOperationBus } from "../../src/operations/bus.js";
import { createWaiters } from "../../src/operations/waiters.js";
import type { OperationRecord, Store } from "../../src/store/store.js";

const pendingRow = { id: "op-1", sandboxId: "sb-1", state: State.PENDING } as OperationRecord;

/** A store whose operation() read stays open until `release` is called. */
function slowStore() {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const store = { operation: async () => (await gate, pendingRow) } as unknown as Store;
  return { store, release: () => release() };
}

let unhandled: unknown[];
const record = (reason: unknown) => unhandled.push(reason);
beforeEach(() => {
  unhandled = [];
  process.on("unhandledRejection", record);
});
afterEach(() => {
  process.off("unhandledRejection", record);
});

const settle = () => new Promise((r) => setTimeout(r, 20));

describe("a wait interrupted while its operation is being read", () => {
  it.each([
    ["the gateway shuts down", Code.Unavailable, (w: ReturnType<typeof createWaiters>) => w.shutdown(), 10_000],
    ["the caller goes away", Code.Canceled, (_w: unknown, c: AbortController) => c.abort(), 10_000],
    ["the deadline passes", Code.DeadlineExceeded, () => undefined, 1],
  ] as const)("when %s, the waiter gets the error and nothing is left unhandled", async (_name, code, interrupt, timeoutMs) => {
    const { store, release } = slowStore();
    const waiters = createWaiters(store, createOperationBus());
    const caller = new AbortController();
    const waiting = waiters.waitFor("op-1", timeoutMs, caller.signal).then(
      () => undefined,
      (err: unknown) => err,
    );
    interrupt(waiters, caller);
    await settle();
    release();
    const err = await waiting;
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(code);
    await settle();
    expect(unhandled).toEqual([]);
    expect(waiters.active).toBe(0);
  });
});
