// Idempotency keys (UPSTREAM §3.2): scoped to workspace + sandbox + key, replays return the
// original operation and committed response (even once it is terminal), never a new revision,
// and a retry may change only its wait settings.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { ConfigApplyOutcome, ConfigUpdateOperationState as State, ConfigUpdateWaitMode, workspaceScope } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "./harness.js";
import { createSandbox, dumpState, policy, resolve, rpcError, sandboxRecord } from "./fixtures.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
  await createSandbox(gw, "dev");
  await createSandbox(gw, "other");
  await createSandbox(gw, "dev", { workspace: "team-a" });
});
afterAll(() => gw.close());

const teamA = { workspaceScope: { selection: { case: "workspace" as const, value: "team-a" } } };

describe("idempotency keys", () => {
  it("one key on different sandboxes and workspaces commits independently", async () => {
    const raw = gw.raw("admin");
    const change = { policy: policy({ shared: "shared.example.com" }), idempotencyKey: "shared-key", workspaceScope: workspaceScope() };
    const a = await raw.updateConfig({ sandbox: "dev", ...change });
    const b = await raw.updateConfig({ sandbox: "other", ...change });
    const c = await raw.updateConfig({ sandbox: "dev", ...change, ...teamA });
    expect(new Set([a, b, c].map((r) => r.operation!.operationId)).size).toBe(3);
    expect([a, b, c].map((r) => r.version)).toEqual([2, 2, 2]);
    expect(new Set([a, b, c].map((r) => r.operation!.sandboxId)).size).toBe(3);
  });

  it("a replay returns the original operation even after it was superseded, and creates nothing", async () => {
    const raw = gw.raw("admin");
    const first = { sandbox: "dev", policy: policy({ v1: "v1.example.com" }), idempotencyKey: "replay-superseded", workspaceScope: workspaceScope() };
    const original = await raw.updateConfig(first);
    await raw.updateConfig({ sandbox: "dev", policy: policy({ v2: "v2.example.com" }), workspaceScope: workspaceScope() });
    const before = await dumpState(gw);
    const replay = await raw.updateConfig(first);
    expect(replay.version).toBe(original.version);
    expect(replay.policyHash).toBe(original.policyHash);
    expect(replay.operation).toMatchObject({ operationId: original.operation!.operationId, state: State.SUPERSEDED, outcome: ConfigApplyOutcome.IGNORED_STALE });
    expect(await dumpState(gw)).toBe(before);
  });

  it("a retry may change its wait settings: WAIT on a replay waits for the original operation", async () => {
    const raw = gw.raw("admin");
    const req = { sandbox: "other", settingKey: "mode", settingValue: { value: { case: "stringValue" as const, value: "strict" } }, idempotencyKey: "retry-wait", workspaceScope: workspaceScope() };
    const committed = await raw.updateConfig(req);
    const id = committed.operation!.operationId;
    const waiting = raw.updateConfig({ ...req, waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION, waitTimeout: { seconds: 10n } });
    const deadline = await rpcError(raw.updateConfig({ ...req, waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION, waitTimeout: { nanos: 20_000_000 } }));
    expect(deadline.code).toBe(Code.DeadlineExceeded);
    expect(deadline.metadata.get("operation-id")).toBe(id);
    await resolve(gw, id, ConfigApplyOutcome.APPLIED);
    const done = await waiting;
    expect(done.operation).toMatchObject({ operationId: id, state: State.APPLIED });
    expect(done.settingsRevision).toBe(committed.settingsRevision);
  });

  it("a replay skips the expected_resource_version check the original passed", async () => {
    const raw = gw.raw("admin");
    const rv = (await sandboxRecord(gw, "other")).resourceVersion;
    const req = { sandbox: "other", policy: policy({ erv: "erv.example.com" }), idempotencyKey: "erv-key", expectedResourceVersion: rv, workspaceScope: workspaceScope() };
    const original = await raw.updateConfig(req);
    expect((await sandboxRecord(gw, "other")).resourceVersion).toBe(rv + 1n);
    const replay = await raw.updateConfig(req);
    expect(replay.operation?.operationId).toBe(original.operation?.operationId);
    expect(replay.version).toBe(original.version);
  });

  it("a key of exactly 256 bytes is accepted", async () => {
    const key = "é".repeat(128);
    const res = await gw.raw("admin").updateConfig({ sandbox: "dev", settingKey: "k256", settingValue: { value: { case: "intValue", value: 1n } }, idempotencyKey: key, workspaceScope: workspaceScope() });
    expect(res.operation?.state).toBe(State.PENDING);
    const again = await gw.raw("admin").updateConfig({ sandbox: "dev", settingKey: "k256", settingValue: { value: { case: "intValue", value: 1n } }, idempotencyKey: key, workspaceScope: workspaceScope() });
    expect(again.operation?.operationId).toBe(res.operation?.operationId);
  });

  it("a key's request includes its annotations, though annotations do not make a policy new (issue 30, item 14)", async () => {
    const raw = gw.raw("admin");
    const req = { sandbox: "dev", policy: policy({ annotated: "annotated.example.com" }), annotations: { "example.com/ticket": "A" }, idempotencyKey: "annotated-key", workspaceScope: workspaceScope() };
    const original = await raw.updateConfig(req);
    // The same request again: the same operation.
    expect((await raw.updateConfig(req)).operation?.operationId).toBe(original.operation?.operationId);
    // The same key with other annotations is another request: refused, nothing changes.
    const before = await dumpState(gw);
    const err = await rpcError(raw.updateConfig({ ...req, annotations: { "example.com/ticket": "B" } }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toBe("idempotency_key was already used with a different request payload");
    expect(await dumpState(gw)).toBe(before);
    // Under a key of its own the same policy is no new revision: a new operation on the same one.
    const other = await raw.updateConfig({ ...req, annotations: { "example.com/ticket": "B" }, idempotencyKey: "annotated-key-2" });
    expect(other.operation?.operationId).not.toBe(original.operation?.operationId);
    expect([other.version, other.policyHash]).toEqual([original.version, original.policyHash]);
  });
});
