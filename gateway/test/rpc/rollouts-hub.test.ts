// The rollout watch machinery without a server: the hub's single store subscription and its
// fan-out, gaps and shutdown; and a WatchRollouts stream on a real SQLite store driven by a hub
// under the test's control, to show that a gap re-reads what is watched and that a client that
// does not read gets one message per changed rollout, not one per notification.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, createHandlerContext } from "@connectrpc/connect";
import { CreateRolloutRequestSchema, OpenShell, RolloutRecordPhase as Phase, workspaceScope, type WatchRolloutsResponse } from "openshell-config/raw";
import { createLogger } from "../../src/observability/logger.js";
import { principalKey } from "../../src/auth/interceptor.js";
import { openStore } from "../../src/store/open-store.js";
import type { Store, StoreListenHandlers } from "../../src/store/store.js";
import type { Waiters } from "../../src/operations/waiters.js";
import { createRolloutHub, type RolloutChangeListener, type RolloutHub } from "../../src/rpc/rollout-watch.js";
import { createRollout, type RolloutDeps } from "../../src/rpc/rollouts.js";
import { watchRollouts } from "../../src/rpc/rollout-watch-stream.js";
import { encodeSummary } from "../../src/rpc/rollout-convert.js";
import { transportStreamKey, type TransportStream } from "../../src/delivery/transport-stream.js";
import { createRequest } from "./rollouts-fixtures.js";

const logger = createLogger({ level: "silent" });

describe("the hub", () => {
  function fakeStore(options: { failListen?: number } = {}) {
    const handlers: StoreListenHandlers[] = [];
    let closed = 0;
    let failures = options.failListen ?? 0;
    const store = {
      notify: async () => {
        throw new Error("database down");
      },
      listen: async (_channel: string, h: StoreListenHandlers) => {
        if (failures-- > 0) throw new Error("cannot listen");
        handlers.push(h);
        return { close: async () => void closed++ };
      },
    };
    return { store, handlers, closed: () => closed };
  }
  const recorder = () => {
    const seen: string[] = [];
    const listener: RolloutChangeListener = { onChange: (ws, id) => seen.push(`${ws}/${id}`), onGap: () => seen.push("gap") };
    return { seen, listener };
  };

  it("opens one store subscription for every watcher, and fans messages and gaps out to each", async () => {
    const s = fakeStore();
    const hub = createRolloutHub(s.store, logger);
    const [a, b] = [recorder(), recorder()];
    const [offA] = await Promise.all([hub.subscribe(a.listener), hub.subscribe(b.listener)]);
    expect(s.handlers).toHaveLength(1);
    s.handlers[0]!.onMessage("default/r-1");
    s.handlers[0]!.onMessage("not a key");
    s.handlers[0]!.onGap();
    offA();
    s.handlers[0]!.onMessage("team-a/r-2");
    expect(a.seen).toEqual(["default/r-1", "gap"]);
    expect(b.seen).toEqual(["default/r-1", "gap", "team-a/r-2"]);
  });

  it("a failed listen is tried again by the next watcher", async () => {
    const s = fakeStore({ failListen: 1 });
    const hub = createRolloutHub(s.store, logger);
    await expect(hub.subscribe(recorder().listener)).rejects.toThrow("cannot listen");
    await hub.subscribe(recorder().listener);
    expect(s.handlers).toHaveLength(1);
  });

  it("a notification that cannot be sent does not fail the write that caused it", async () => {
    const hub = createRolloutHub(fakeStore().store, logger);
    await expect(hub.changed("default", "r-1")).resolves.toBeUndefined();
  });

  it("closing closes the subscription, and a later watcher is UNAVAILABLE", async () => {
    const s = fakeStore();
    const hub = createRolloutHub(s.store, logger);
    await hub.subscribe(recorder().listener);
    await hub.close();
    expect(s.closed()).toBe(1);
    const err = await hub.subscribe(recorder().listener).catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.Unavailable);
  });
});

describe("a watch stream driven by the test", () => {
  let dir: string;
  let store: Store;
  const listeners = new Set<RolloutChangeListener>();
  const hub: RolloutHub = {
    changed: async () => undefined, // writes reach watchers only when the test says so
    subscribe: async (l) => {
      listeners.add(l);
      return () => listeners.delete(l);
    },
    close: async () => undefined,
  };
  const waiters = { onShutdown: () => () => undefined } as unknown as Waiters;
  let deps: RolloutDeps;
  const principal = { name: "alice", role: "admin" as const, workspaces: "*" as const };
  const context = (transport?: TransportStream) => {
    const values = createContextValues().set(principalKey, principal).set(transportStreamKey, transport);
    return createHandlerContext({
      service: OpenShell,
      method: OpenShell.method.watchRollouts,
      protocolName: "grpc",
      requestMethod: "POST",
      url: "http://test/openshell.v1.OpenShell/WatchRollouts",
      contextValues: values,
    });
  };
  const bump = async (id: string, wavesDone: number) => {
    const row = (await store.rollout("default", id, false))!;
    const summary = { $typeName: "openshell.v1.RolloutSummary", phase: Phase.RUNNING, wavesDone } as Parameters<typeof encodeSummary>[0];
    await store.updateRollout("default", id, row.resourceVersion, { summary: encodeSummary(summary), updatedAt: new Date() });
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "osc-rollout-hub-"));
    store = await openStore(`sqlite:${join(dir, "gateway.db")}`);
    deps = { store, logger, waiters, hub, watchWriteTimeoutMs: 300 };
    for (const id of ["h-1", "h-2"]) await createRollout(deps, create(CreateRolloutRequestSchema, createRequest(id)), context());
  });
  afterAll(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (ctx: ReturnType<typeof context>) => {
    const stream = watchRollouts(deps, create(OpenShell.method.watchRollouts.input, { workspaceScope: workspaceScope() }), ctx);
    const initial: WatchRolloutsResponse[] = [];
    for (;;) {
      const m = (await stream.next()).value as WatchRolloutsResponse;
      if (m.initialDone) break;
      initial.push(m);
    }
    return { stream, initial };
  };

  it("after a gap the stream sends what changed unannounced, and nothing that did not", async () => {
    const ctx = context();
    const { stream, initial } = await start(ctx);
    expect(initial.map((m) => m.rollout?.id)).toEqual(["h-2", "h-1"]);
    await bump("h-1", 1);
    for (const l of listeners) l.onGap();
    const m = (await stream.next()).value as WatchRolloutsResponse;
    expect([m.rollout?.id, m.rollout?.resourceVersion, m.rollout?.summary?.wavesDone, m.initial]).toEqual(["h-1", 2n, 1, false]);
    ctx.abort();
    expect((await stream.next()).done).toBe(true);
  });

  it("many notifications of one rollout while the client does not read become one message with the latest version", async () => {
    const ctx = context();
    const { stream } = await start(ctx);
    for (let i = 0; i < 20; i++) {
      await bump("h-2", i + 10);
      for (const l of listeners) l.onChange("default", "h-2");
    }
    for (const l of listeners) l.onChange("team-z", "h-2"); // another workspace: not this watch's
    const m = (await stream.next()).value as WatchRolloutsResponse;
    expect([m.rollout?.id, m.rollout?.summary?.wavesDone]).toEqual(["h-2", 29]);
    const after = await Promise.race([stream.next().then(() => "message"), new Promise((r) => setTimeout(() => r("quiet"), 200))]);
    expect(after).toBe("quiet");
    ctx.abort();
  });

  /** An HTTP/2 stream that records its reset. */
  const fakeTransport = () => {
    const t = { closed: false, destroyed: false, resetWith: undefined as number | undefined };
    return Object.assign(t, { close: (code?: number) => ((t.resetWith = code), (t.closed = true)) });
  };

  it("a client gone while a message is unwritten (the generator never resumes) releases the stream at once and resets it", async () => {
    const transport = fakeTransport();
    const ctx = context(transport);
    const before = listeners.size;
    await start(ctx); // initial_done was yielded and is never taken: the generator stays at its yield
    expect(listeners.size).toBe(before + 1);
    ctx.abort();
    expect(listeners.size).toBe(before);
    expect(transport.resetWith).toBe(8); // NGHTTP2_CANCEL
  });

  it("a client that takes no message for the write timeout is released and its stream reset, without any abort", async () => {
    const transport = fakeTransport();
    const ctx = context(transport);
    const before = listeners.size;
    await start(ctx);
    await new Promise((r) => setTimeout(r, 150));
    expect(listeners.size).toBe(before + 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(listeners.size).toBe(before);
    expect(transport.resetWith).toBe(8);
    expect(ctx.signal.aborted).toBe(false);
  });

  it("a client that keeps reading is never timed out, however long it waits between changes", async () => {
    const ctx = context(fakeTransport());
    const { stream } = await start(ctx);
    const next = stream.next();
    await new Promise((r) => setTimeout(r, 500));
    await bump("h-1", 7);
    for (const l of listeners) l.onChange("default", "h-1");
    expect(((await next).value as WatchRolloutsResponse).rollout?.summary?.wavesDone).toBe(7);
    ctx.abort();
    expect((await stream.next()).done).toBe(true);
  });
});
