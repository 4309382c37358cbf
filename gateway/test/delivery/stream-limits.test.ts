// The caps on supervisor streams, the bootstrap turns and the outbound queue's bound, as units:
// counts, refusals and their messages, supersession of a sandbox's oldest stream, and turns that
// are handed on in order, given up, and paced.

import { Code, ConnectError } from "@connectrpc/connect";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { createBootstrapTurns } from "../../src/delivery/bootstrap-turns.js";
import { createAsyncQueue } from "../../src/delivery/queue.js";
import { createSupervisorStreams, DEFAULT_SUPERVISOR_STREAM_LIMITS } from "../../src/delivery/stream-limits.js";

const limits = (over: Partial<typeof DEFAULT_SUPERVISOR_STREAM_LIMITS> = {}) => ({ ...DEFAULT_SUPERVISOR_STREAM_LIMITS, ...over });

function refusal(f: () => unknown): ConnectError {
  try {
    f();
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("expected a refusal");
}

describe("supervisor stream caps", () => {
  it("a token over its cap is refused RESOURCE_EXHAUSTED naming the cap, and a released stream makes room", () => {
    const streams = createSupervisorStreams(limits({ perToken: 2 }));
    const a = streams.admit("t1");
    streams.admit("t1");
    const err = refusal(() => streams.admit("t1"));
    expect(err.code).toBe(Code.ResourceExhausted);
    expect(err.rawMessage).toBe("this supervisor token already has 2 ConnectSupervisor streams open, the most one token may hold (2); end one first");
    // Another token, and --no-auth (no token), are not counted against it.
    streams.admit("t2");
    streams.admit(undefined);
    a.release();
    a.release();
    expect(() => streams.admit("t1")).not.toThrow();
    expect(streams.size).toBe(4);
  });

  it("the gateway's cap refuses every token once that many streams are open", () => {
    const streams = createSupervisorStreams(limits({ maxStreams: 2 }));
    streams.admit("t1");
    const b = streams.admit(undefined);
    const err = refusal(() => streams.admit("t2"));
    expect(err.code).toBe(Code.ResourceExhausted);
    expect(err.rawMessage).toBe("this gateway already serves 2 supervisor streams, its limit; try again later");
    b.release();
    expect(() => streams.admit("t2")).not.toThrow();
  });

  it("a sandbox's stream over its cap supersedes the oldest, once, with ABORTED", () => {
    const streams = createSupervisorStreams(limits({ perSandbox: 2 }));
    const superseded: string[] = [];
    const bind = (name: string, sandbox = "sb") => {
      const t = streams.admit(undefined);
      t.bind(sandbox, (reason) => {
        expect(reason.code).toBe(Code.Aborted);
        expect(reason.rawMessage).toBe("replaced by a newer stream of the same sandbox (at most 2 per sandbox)");
        superseded.push(name);
        t.release();
      });
      return t;
    };
    bind("a");
    const b = bind("b");
    bind("other", "sb2");
    expect(superseded).toEqual([]);
    bind("c");
    expect(superseded).toEqual(["a"]);
    b.release();
    bind("d");
    expect(superseded).toEqual(["a"]);
    bind("e");
    expect(superseded).toEqual(["a", "c"]);
  });

  it("the gauge counts open streams from admission to release, and refusals by cap", async () => {
    const registry = new Registry();
    const streams = createSupervisorStreams(limits({ perToken: 1 }), registry);
    const a = streams.admit("t1");
    refusal(() => streams.admit("t1"));
    const text = () => registry.metrics();
    expect(await text()).toMatch(/^openshell_gateway_supervisor_streams 1$/m);
    expect(await text()).toMatch(/^openshell_gateway_supervisor_streams_refused_total\{cap="token"\} 1$/m);
    a.release();
    expect(await text()).toMatch(/^openshell_gateway_supervisor_streams 0$/m);
  });
});

describe("bootstrap turns", () => {
  it("grants one build at a time per sandbox, in order, and never to a stream that gave up", async () => {
    const turns = createBootstrapTurns(0);
    const [a, b, c, other] = [{}, {}, {}, {}];
    const order: string[] = [];
    const ta = turns.request("sb", a).then((g) => order.push(`a:${g}`));
    const tb = turns.request("sb", b).then((g) => order.push(`b:${g}`));
    const tc = turns.request("sb", c).then((g) => order.push(`c:${g}`));
    await turns.request("sb2", other);
    await ta;
    expect(order).toEqual(["a:true"]);
    turns.cancel("sb", b);
    await tb;
    turns.done("sb", a);
    await tc;
    expect(order).toEqual(["a:true", "b:false", "c:true"]);
    // Done twice, or by a stream that never held the turn, changes nothing.
    turns.done("sb", a);
    turns.done("sb", b);
    let d = false;
    void turns.request("sb", {}).then(() => (d = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(d).toBe(false);
  });

  it("the next build of a sandbox waits pace times the last build's duration", async () => {
    const turns = createBootstrapTurns(4);
    const first = {};
    await turns.request("sb", first);
    await new Promise((r) => setTimeout(r, 250));
    turns.done("sb", first);
    const asked = performance.now();
    await turns.request("sb", {});
    // 4 × at least 250 ms (timers may fire a millisecond early).
    expect(performance.now() - asked).toBeGreaterThanOrEqual(995);
    // Another sandbox is not paced by it: it does not wait that second (room for a loaded machine).
    const t = performance.now();
    await turns.request("sb2", {});
    expect(performance.now() - t).toBeLessThan(500);
  });
});

describe("the outbound queue", () => {
  it("one push past its bound closes it with RESOURCE_EXHAUSTED and drops what was queued", async () => {
    const closed: unknown[] = [];
    const q = createAsyncQueue<number>({ maxItems: 3, onClose: (e) => closed.push(e) });
    for (let i = 0; i < 4; i++) q.push(i);
    expect(q.closed).toBe(true);
    expect(closed).toHaveLength(1);
    const it = q[Symbol.asyncIterator]();
    const err = await it.next().then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(err?.code).toBe(Code.ResourceExhausted);
    expect(err?.rawMessage).toBe("more than 3 messages are waiting for the peer to read");
  });

  it("closing calls onClose once, with the error", () => {
    const closed: unknown[] = [];
    const q = createAsyncQueue<number>({ onClose: (e) => closed.push(e) });
    const why = new Error("replaced");
    q.close(why);
    q.close();
    expect(closed).toEqual([why]);
  });
});
