// The life of a ConfigUpdateOperation: its initial state from the sandbox phase, lifecycle
// transitions (stop, delete), the one-way move out of PENDING, the error bound, reading it by id,
// listing a sandbox's operations, waiting for it, and watching it.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import {
  ConfigApplyOutcome,
  ConfigUpdateOperationState as State,
  ConfigUpdateWaitMode,
  type WatchConfigUpdateOperationsResponse,
  workspaceScope,
} from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "./harness.js";
import { commitKeyed, createSandbox, eventually, policy, resolve, rpcError } from "./fixtures.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
  await createSandbox(gw, "dev");
});
afterAll(() => gw.close());

let n = 0;
/** A policy change that always differs from the previous one. */
const change = () => ({ sandbox: "dev", policy: policy({ [`rule-${++n}`]: `h${n}.example.com` }), workspaceScope: workspaceScope() });

function collect(stream: AsyncIterable<WatchConfigUpdateOperationsResponse>) {
  const messages: { id: string; state: State; initial: boolean }[] = [];
  const done = (async () => {
    for await (const m of stream) messages.push({ id: m.operation!.operationId, state: m.operation!.state, initial: m.initial });
  })();
  return { messages, done };
}

describe("initial state and lifecycle transitions", () => {
  it("an update of a stopped sandbox is INACTIVE at once, with completed_time set", async () => {
    await createSandbox(gw, "stopped");
    await gw.raw("admin").stopSandbox({ name: "stopped", workspaceScope: workspaceScope() });
    const res = await gw.sdk().updatePolicy({ sandbox: "stopped", policy: policy({ x: "x.example.com" }) });
    expect(res.policyVersion).toBe(2);
    expect(res.operation?.state).toBe("inactive");
    expect(res.operation?.completedAt).toBeInstanceOf(Date);
    expect((await gw.store.operation(res.operation!.operationId))?.state).toBe(State.INACTIVE);
  });

  it("stopping a sandbox resolves its pending operations INACTIVE", async () => {
    await createSandbox(gw, "to-stop");
    const client = gw.sdk();
    const p = await client.updatePolicy({ sandbox: "to-stop", policy: policy({ x: "x.example.com" }) });
    const s = await client.updateSettings({ sandbox: "to-stop", key: "log_level", value: "debug" });
    await gw.raw("admin").stopSandbox({ name: "to-stop", workspaceScope: workspaceScope() });
    for (const id of [p.operation!.operationId, s.operation!.operationId]) {
      const op = await client.getOperation({ operationId: id });
      expect(op.state).toBe("inactive");
      expect(op.completedAt).toBeInstanceOf(Date);
    }
  });

  it("deleting a sandbox resolves its pending operations CANCELLED, and they stay readable by id", async () => {
    await createSandbox(gw, "to-delete");
    const res = await gw.sdk().updatePolicy({ sandbox: "to-delete", policy: policy({ x: "x.example.com" }) });
    await gw.raw("admin").deleteSandbox({ name: "to-delete", workspaceScope: workspaceScope() });
    const op = await gw.sdk().getOperation({ operationId: res.operation!.operationId });
    expect(op).toMatchObject({ state: "cancelled", error: "sandbox no longer exists" });
    expect(op.completedAt).toBeInstanceOf(Date);
  });
});

describe("transitions", () => {
  it("a terminal operation never changes again: a second resolve is ignored and the row is unchanged", async () => {
    const res = await gw.raw("admin").updateConfig(change());
    const id = res.operation!.operationId;
    const first = await resolve(gw, id, ConfigApplyOutcome.APPLIED);
    expect(first?.state).toBe(State.APPLIED);
    const row = await gw.store.operation(id);
    const second = await resolve(gw, id, ConfigApplyOutcome.FAILED_CLOSED, "too late");
    expect(second).toEqual(row);
    expect(await gw.store.operation(id)).toEqual(row);
  });

  it("sanitized_error is cut to at most 1024 bytes at a UTF-8 boundary", async () => {
    const res = await gw.raw("admin").updateConfig(change());
    const id = res.operation!.operationId;
    await resolve(gw, id, ConfigApplyOutcome.FAILED_CLOSED, "€".repeat(400));
    const op = (await gw.raw("admin").getConfigUpdateOperation({ operationId: id, workspaceScope: workspaceScope() })).operation!;
    expect(op.state).toBe(State.FAILED);
    expect(op.outcome).toBe(ConfigApplyOutcome.FAILED_CLOSED);
    expect(Buffer.byteLength(op.sanitizedError, "utf8")).toBe(1023);
    expect(op.sanitizedError).toBe("€".repeat(341));
  });
});

describe("GetConfigUpdateOperation", () => {
  it("a missing id is INVALID_ARGUMENT", async () => {
    const err = await rpcError(gw.raw("admin").getConfigUpdateOperation({ operationId: "", workspaceScope: workspaceScope() }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toBe("operation_id is required");
  });

  it("an unknown id is NOT_FOUND", async () => {
    const err = await rpcError(gw.raw("admin").getConfigUpdateOperation({ operationId: "00000000-0000-4000-8000-000000000000", workspaceScope: workspaceScope() }));
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toBe("update operation not found");
  });

  it("another workspace's operation is NOT_FOUND, by scope and by principal", async () => {
    const res = await gw.raw("admin").updateConfig(change());
    const id = res.operation!.operationId;
    const byScope = await rpcError(gw.raw("admin").getConfigUpdateOperation({ operationId: id, workspaceScope: { selection: { case: "workspace", value: "team-a" } } }));
    expect(byScope.code).toBe(Code.NotFound);
    const byPrincipal = await rpcError(gw.raw("otherAdmin").getConfigUpdateOperation({ operationId: id, workspaceScope: workspaceScope() }));
    expect(byPrincipal.code).toBe(Code.NotFound);
    expect(byPrincipal.rawMessage).toBe("update operation not found");
  });
});

describe("ListConfigUpdateOperations", () => {
  it("lists one sandbox's operations newest first, in pages, and only in its workspace", async () => {
    await createSandbox(gw, "listed");
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await gw.raw("admin").updateConfig({ sandbox: "listed", settingKey: "k", settingValue: { value: { case: "stringValue", value: `v${i}` } }, workspaceScope: workspaceScope() });
      ids.push(res.operation!.operationId);
    }
    const first = await gw.raw("user").listConfigUpdateOperations({ sandbox: "listed", pageSize: 2, workspaceScope: workspaceScope() });
    expect(first.operations.map((o) => o.operationId)).toEqual([ids[2], ids[1]]);
    expect(first.nextPageToken).not.toBe("");
    const second = await gw.raw("user").listConfigUpdateOperations({ sandbox: "listed", pageSize: 2, pageToken: first.nextPageToken, workspaceScope: workspaceScope() });
    expect(second.operations.map((o) => o.operationId)).toEqual([ids[0]]);
    expect(second.nextPageToken).toBe("");
    const other = await rpcError(gw.raw("otherAdmin").listConfigUpdateOperations({ sandbox: "listed", workspaceScope: workspaceScope() }));
    // As for every sandbox-scoped read: another workspace's sandbox is not found.
    expect(other.code).toBe(Code.NotFound);
  });

  it("an unknown sandbox is NOT_FOUND; no sandbox, a negative page size or a bad token is INVALID_ARGUMENT", async () => {
    const admin = gw.raw("admin");
    expect((await rpcError(admin.listConfigUpdateOperations({ sandbox: "nobody", workspaceScope: workspaceScope() }))).code).toBe(Code.NotFound);
    const missing = await rpcError(admin.listConfigUpdateOperations({ sandbox: "", workspaceScope: workspaceScope() }));
    expect([missing.code, missing.rawMessage]).toEqual([Code.InvalidArgument, "sandbox is required"]);
    expect((await rpcError(admin.listConfigUpdateOperations({ sandbox: "dev", pageSize: -1, workspaceScope: workspaceScope() }))).code).toBe(Code.InvalidArgument);
    expect((await rpcError(admin.listConfigUpdateOperations({ sandbox: "dev", pageToken: "nope", workspaceScope: workspaceScope() }))).code).toBe(Code.InvalidArgument);
  });
});

describe("waiting", () => {
  const waitFor = (key: string, req: ReturnType<typeof change>, signal?: AbortSignal, seconds = 10n) =>
    gw.raw("admin").updateConfig(
      { ...req, idempotencyKey: key, waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION, waitTimeout: { seconds } },
      signal ? { signal } : {},
    );

  it("a waiter is woken by the transition, not by its timeout", async () => {
    const req = change();
    const id = await commitKeyed(gw, { ...req, idempotencyKey: "wake-1" });
    const waiting = waitFor("wake-1", req);
    await eventually(() => gw.gateway.deps.waiters.active === 1);
    const resolvedAt = performance.now();
    await resolve(gw, id, ConfigApplyOutcome.APPLIED);
    const res = await waiting;
    // Its timeout is 10 s: woken by the transition, it answers long before (room for a loaded machine).
    expect(performance.now() - resolvedAt).toBeLessThan(3_000);
    expect(res.operation).toMatchObject({ operationId: id, state: State.APPLIED });
  });

  it("a caller that disconnects cancels only its own wait; the operation stays PENDING", async () => {
    const req = change();
    const id = await commitKeyed(gw, { ...req, idempotencyKey: "leave-1" });
    const leaving = new AbortController();
    const left = rpcError(waitFor("leave-1", req, leaving.signal));
    const staying = waitFor("leave-1", req);
    await eventually(() => gw.gateway.deps.waiters.active === 2);
    leaving.abort();
    expect((await left).code).toBe(Code.Canceled);
    await eventually(() => gw.gateway.deps.waiters.active === 1);
    expect((await gw.store.operation(id))?.state).toBe(State.PENDING);
    await resolve(gw, id, ConfigApplyOutcome.APPLIED);
    expect((await staying).operation?.state).toBe(State.APPLIED);
  });

  it("a wait_timeout of 0 uses the default wait, not an immediate answer", async () => {
    const req = change();
    const id = await commitKeyed(gw, { ...req, idempotencyKey: "zero-1" });
    let settled = false;
    const waiting = waitFor("zero-1", req, undefined, 0n).finally(() => (settled = true));
    // An immediate answer would never register a waiter; then it must still be waiting a while on.
    await eventually(() => gw.gateway.deps.waiters.active === 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(settled).toBe(false);
    expect(gw.gateway.deps.waiters.active).toBe(1);
    await resolve(gw, id, ConfigApplyOutcome.APPLIED);
    expect((await waiting).operation?.state).toBe(State.APPLIED);
  });

  it("a waiter is woken with SUPERSEDED when a newer policy replaces its update", async () => {
    const req = change();
    const id = await commitKeyed(gw, { ...req, idempotencyKey: "replaced-1" });
    const waiting = waitFor("replaced-1", req);
    await eventually(() => gw.gateway.deps.waiters.active === 1);
    await gw.raw("admin").updateConfig(change());
    const res = await waiting;
    expect(res.operation).toMatchObject({ operationId: id, state: State.SUPERSEDED, outcome: ConfigApplyOutcome.IGNORED_STALE });
  });

  it("a wait on an already terminal operation returns at once", async () => {
    const req = change();
    const id = await commitKeyed(gw, { ...req, idempotencyKey: "done-1" });
    await resolve(gw, id, ConfigApplyOutcome.DEGRADED, "audit sink down");
    const res = await waitFor("done-1", req);
    expect(res.operation).toMatchObject({ operationId: id, state: State.APPLIED, outcome: ConfigApplyOutcome.DEGRADED, sanitizedError: "audit sink down" });
  });
});

describe("WatchConfigUpdateOperations", () => {
  it("by ids: the current state first (initial), then transitions, ending when all are terminal", async () => {
    const done = (await gw.raw("admin").updateConfig(change())).operation!.operationId;
    await resolve(gw, done, ConfigApplyOutcome.APPLIED);
    // One policy and one settings operation: neither supersedes the other.
    const a = (await gw.raw("admin").updateConfig(change())).operation!.operationId;
    const b = (await gw.raw("admin").updateConfig({ sandbox: "dev", settingKey: "watch-b", settingValue: { value: { case: "intValue", value: 2n } }, workspaceScope: workspaceScope() })).operation!.operationId;
    const watch = collect(gw.raw("admin").watchConfigUpdateOperations({ operationIds: [done, a, b], workspaceScope: workspaceScope() }));
    await eventually(() => watch.messages.length === 3);
    expect(watch.messages).toEqual([
      { id: done, state: State.APPLIED, initial: true },
      { id: a, state: State.PENDING, initial: true },
      { id: b, state: State.PENDING, initial: true },
    ]);
    await resolve(gw, b, ConfigApplyOutcome.FAILED_CLOSED, "rejected");
    await eventually(() => watch.messages.length === 4);
    let ended = false;
    void watch.done.then(() => (ended = true));
    await new Promise((r) => setTimeout(r, 50));
    expect(ended).toBe(false);
    await resolve(gw, a, ConfigApplyOutcome.APPLIED);
    await watch.done;
    expect(watch.messages.slice(3)).toEqual([
      { id: b, state: State.FAILED, initial: false },
      { id: a, state: State.APPLIED, initial: false },
    ]);
  });

  it("by sandbox: recent operations first, then new ones and their transitions", async () => {
    await createSandbox(gw, "watched");
    const first = (await gw.raw("admin").updateConfig({ sandbox: "watched", policy: policy({ w1: "w1.example.com" }), workspaceScope: workspaceScope() })).operation!.operationId;
    const stop = new AbortController();
    const watch = collect(gw.raw("admin").watchConfigUpdateOperations({ sandbox: "watched", workspaceScope: workspaceScope() }, { signal: stop.signal }));
    await eventually(() => watch.messages.length === 1);
    const second = (await gw.raw("admin").updateConfig({ sandbox: "watched", policy: policy({ w2: "w2.example.com" }), workspaceScope: workspaceScope() })).operation!.operationId;
    await resolve(gw, second, ConfigApplyOutcome.APPLIED);
    await eventually(() => watch.messages.length === 4);
    stop.abort();
    await watch.done.catch(() => undefined);
    expect(watch.messages).toEqual([
      { id: first, state: State.PENDING, initial: true },
      { id: first, state: State.SUPERSEDED, initial: false },
      { id: second, state: State.PENDING, initial: false },
      { id: second, state: State.APPLIED, initial: false },
    ]);
  });

  it("an unknown id is NOT_FOUND", async () => {
    const watch = collect(gw.raw("admin").watchConfigUpdateOperations({ operationIds: ["00000000-0000-4000-8000-000000000000"], workspaceScope: workspaceScope() }));
    const err = await rpcError(watch.done);
    expect(err.code).toBe(Code.NotFound);
    expect(watch.messages).toEqual([]);
  });

  it("another workspace's sandbox is NOT_FOUND", async () => {
    const watch = collect(gw.raw("otherAdmin").watchConfigUpdateOperations({ sandbox: "dev", workspaceScope: workspaceScope() }));
    expect((await rpcError(watch.done)).code).toBe(Code.NotFound);
  });
});
