// Restart recovery on both backends: the gateway stops and a new one opens the same SQLite file
// or PostgreSQL database. Committed operations keep their state, pending ones can still be
// completed and awaited (by id and by idempotency key) without a second revision, replays return
// the original operation, and a wait cut by the restart resumes on the new process.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { ConfigApplyOutcome, ConfigUpdateOperationState as State, ConfigUpdateWaitMode, workspaceScope } from "openshell-config/raw";
import { startTestGateway, type Backend, type TestGateway } from "./harness.js";
import { createSandbox, eventually, policy, resolve, rpcError, sandboxRecord } from "./fixtures.js";
import type { OperationRecord } from "../../src/store/store.js";

const APPLIED_POLICY = policy({ applied: "applied.example.com" });
const PENDING_POLICY = policy({ pending: "pending.example.com" });
const RESUMED_POLICY = policy({ resumed: "resumed.example.com" });

describe.each<Backend>(["sqlite", "postgres"])("after a restart (%s)", (backend) => {
  let gw: TestGateway;
  let ids: { applied: string; policy: string; setting: string };
  let before: OperationRecord[];
  let sandboxId: string;

  const versions = async () => (await gw.store.listPolicyRevisions(sandboxId, 100, "")).items.map((r) => r.version);

  beforeAll(async () => {
    gw = await startTestGateway(backend);
    sandboxId = (await createSandbox(gw, "dev")).metadata!.id;
    const client = gw.sdk();
    const applied = await client.updatePolicy({ sandbox: "dev", idempotencyKey: "k-applied", policy: APPLIED_POLICY });
    await resolve(gw, applied.operation!.operationId, ConfigApplyOutcome.APPLIED);
    const pending = await client.updatePolicy({ sandbox: "dev", idempotencyKey: "k-policy", policy: PENDING_POLICY });
    const setting = await client.updateSettings({ sandbox: "dev", idempotencyKey: "k-setting", key: "log_level", value: "debug" });
    ids = { applied: applied.operation!.operationId, policy: pending.operation!.operationId, setting: setting.operation!.operationId };
    before = await gw.store.operationsOfSandbox(sandboxId, 100);
    await gw.restart();
  });
  afterAll(() => gw.close());

  it("every operation keeps its state: pending ones PENDING, the applied one unchanged", async () => {
    // Redelivery bookkeeping (attempt count, next attempt, row version) may move; nothing else does.
    const durable = (ops: OperationRecord[]) => ops.map(({ attemptCount, nextAttemptAt, rowVersion, updatedAt, ...rest }) => rest);
    const after = await gw.store.operationsOfSandbox(sandboxId, 100);
    expect(durable(after)).toEqual(durable(before));
    expect(after.find((op) => op.id === ids.applied)).toEqual(before.find((op) => op.id === ids.applied));
    const client = gw.sdk();
    expect((await client.getOperation({ operationId: ids.applied })).state).toBe("applied");
    expect((await client.getOperation({ operationId: ids.policy })).state).toBe("pending");
    expect((await client.getOperation({ operationId: ids.setting })).state).toBe("pending");
    expect(await versions()).toEqual([3, 2, 1]);
    expect(await gw.store.countPending()).toBe(2);
  });

  it("an idempotency replay returns the original operation and committed response", async () => {
    const client = gw.sdk();
    const applied = await client.updatePolicy({ sandbox: "dev", idempotencyKey: "k-applied", policy: APPLIED_POLICY });
    expect(applied.policyVersion).toBe(2);
    expect(applied.operation).toMatchObject({ operationId: ids.applied, state: "applied" });
    const setting = await client.updateSettings({ sandbox: "dev", idempotencyKey: "k-setting", key: "log_level", value: "debug" });
    expect(setting.settingsRevision).toBe(1n);
    expect(setting.operation).toMatchObject({ operationId: ids.setting, state: "pending" });
    expect(await versions()).toEqual([3, 2, 1]);
    expect(await gw.store.operationsOfSandbox(sandboxId, 100)).toHaveLength(before.length);
  });

  it("a pending operation completes and is awaited by id and by key, with no new revision", async () => {
    const client = gw.sdk();
    const byId = client.awaitCompletion({ operationId: ids.policy }, { timeoutMs: 10_000 });
    const byKey = client.awaitCompletion({ sandbox: "dev", idempotencyKey: "k-policy", request: { policy: PENDING_POLICY } }, { timeoutMs: 10_000 });
    await eventually(() => gw.gateway.deps.waiters.active >= 1);
    await resolve(gw, ids.policy, ConfigApplyOutcome.APPLIED);
    for (const done of await Promise.all([byId, byKey])) {
      expect(done).toMatchObject({ operationId: ids.policy, state: "applied", outcome: "applied" });
    }
    expect(await versions()).toEqual([3, 2, 1]);
    expect(await gw.store.operationsOfSandbox(sandboxId, 100)).toHaveLength(before.length);
  });

  it("a wait in progress during a restart gets UNAVAILABLE, and an SDK wait resumes on the new process", async () => {
    const raw = rpcError(
      gw.raw("admin").updateConfig({
        sandbox: "dev",
        idempotencyKey: "k-setting",
        settingKey: "log_level",
        settingValue: { value: { case: "stringValue", value: "debug" } },
        waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION,
        waitTimeout: { seconds: 30n },
        workspaceScope: workspaceScope(),
      }),
    );
    const patient = gw.sdk("admin", { retry: { retries: 100, minDelayMs: 20, maxDelayMs: 100 } });
    const resumed = patient.updatePolicy({ sandbox: "dev", idempotencyKey: "k-resume", policy: RESUMED_POLICY, wait: { timeoutMs: 15_000 } });
    await eventually(() => gw.gateway.deps.waiters.active === 2);

    await gw.restart();
    const cut = await raw;
    expect(Code[cut.code]).toBe(Code[Code.Unavailable]);
    expect(cut.rawMessage).toBe("gateway is shutting down");

    // The SDK re-sent the same request with its key: it waits on the new process, on the same operation.
    await eventually(() => gw.gateway.deps.waiters.active === 1);
    const record = await gw.store.transaction(async (tx) => tx.idempotency((await tx.sandboxByName("default", "dev"))!.id, "k-resume"));
    expect(record).toBeDefined();
    expect((await gw.store.operation(record!.operationId))?.state).toBe(State.PENDING);
    await resolve(gw, record!.operationId, ConfigApplyOutcome.APPLIED);
    const res = await resumed;
    expect(res.completion).toMatchObject({ operationId: record!.operationId, state: "applied" });
    expect(res.policyVersion).toBe(4);
    expect(await versions()).toEqual([4, 3, 2, 1]);
    expect((await sandboxRecord(gw, "dev")).policyVersion).toBe(4);
  });

  it("a watch open during a restart ends UNAVAILABLE, and an SDK wait by id (a watch) resumes on the new process", async () => {
    const op = await gw.sdk().updateSettings({ sandbox: "dev", key: "watched", value: "yes" });
    const id = op.operation!.operationId;
    const seen: boolean[] = [];
    const raw = rpcError(
      (async () => {
        for await (const m of gw.raw("admin").watchConfigUpdateOperations({ operationIds: [id], workspaceScope: workspaceScope() })) seen.push(m.initial);
      })(),
    );
    const patient = gw.sdk("admin", { retry: { retries: 100, minDelayMs: 20, maxDelayMs: 100 } });
    const states: string[] = [];
    const waiting = patient.awaitCompletion({ operationId: id }, { timeoutMs: 15_000, onProgress: (e) => e.type === "state" && states.push(e.status.state) });
    await eventually(() => states.length > 0 && seen.length > 0);
    await gw.restart();
    const cut = await raw;
    expect(Code[cut.code]).toBe(Code[Code.Unavailable]);
    expect(seen).toEqual([true]);
    await new Promise((r) => setTimeout(r, 100));
    await resolve(gw, id, ConfigApplyOutcome.APPLIED);
    expect(await waiting).toMatchObject({ operationId: id, state: "applied" });
  });
});
