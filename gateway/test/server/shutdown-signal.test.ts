// The shutdown signal connect links every call to: abort semantics as an AbortSignal has them,
// with listeners kept in a set, and connect's own linking of call signals working through it.

import { createLinkedAbortController } from "@connectrpc/connect/protocol";
import { describe, expect, it } from "vitest";
import { createShutdownSignal } from "../../src/http/shutdown-signal.js";

describe("shutdown signal", () => {
  it("calls each abort listener once, with the signal as this, in the order added, and shows the reason", () => {
    const s = createShutdownSignal();
    const seen: string[] = [];
    let self: unknown;
    const a = function (this: AbortSignal) {
      self = this;
      seen.push(`a:${String(this.reason)}`);
    };
    s.signal.addEventListener("abort", a);
    s.signal.addEventListener("abort", a);
    s.signal.addEventListener("abort", { handleEvent: (e: Event) => seen.push(`b:${e.type}`) });
    expect(s.signal.aborted).toBe(false);
    expect(() => s.signal.throwIfAborted()).not.toThrow();
    s.abort("stopping");
    s.abort("again");
    expect(seen).toEqual(["a:stopping", "b:abort"]);
    expect(self).toBe(s.signal);
    expect(s.signal.aborted).toBe(true);
    expect(s.signal.reason).toBe("stopping");
    expect(() => s.signal.throwIfAborted()).toThrow("stopping");
    expect(s.listenerCount).toBe(0);
  });

  it("does not call a listener that was removed, nor one added after the abort", () => {
    const s = createShutdownSignal();
    const calls: string[] = [];
    const removed = () => calls.push("removed");
    s.signal.addEventListener("abort", removed);
    s.signal.removeEventListener("abort", removed);
    expect(s.listenerCount).toBe(0);
    s.abort(new Error("down"));
    s.signal.addEventListener("abort", () => calls.push("late"));
    expect(calls).toEqual([]);
  });

  it("links with connect's call signals: a call's signal aborts with the shutdown reason, and a finished call leaves no listener behind", () => {
    const s = createShutdownSignal();
    const finished = createLinkedAbortController(new AbortController().signal, s.signal);
    const running = createLinkedAbortController(new AbortController().signal, s.signal);
    expect(s.listenerCount).toBe(2);
    finished.abort();
    expect(s.listenerCount).toBe(1);
    const reason = new Error("gateway is shutting down");
    s.abort(reason);
    expect(running.signal.aborted).toBe(true);
    expect(running.signal.reason).toBe(reason);
    expect(finished.signal.reason).not.toBe(reason);
  });
});
