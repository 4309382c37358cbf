import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { createRouterTransport } from "@connectrpc/connect";
import { createConfigClient, restoreHandle, type OperationHandle } from "../../src/index.js";
import { rollout } from "../../src/rollout.js";
import type { WorkspaceSelector } from "../../src/gen/openshell/datamodel/v1/datamodel_pb.js";
import { OpenShell } from "../../src/gen/openshell/v1/openshell_pb.js";
import {
  ConfigUpdateOperationSchema,
  ConfigUpdateOperationState as State,
  ConfigApplyOutcome as Outcome,
  ConfigUpdateWaitMode,
  PolicyStatus,
} from "../../src/gen/openshell/v1/config_pb.js";
import { FAST, samplePolicy, setup } from "./helpers.js";

// What the SDK puts on the wire, and that every re-send (retry, resumed wait, replay from a
// stored handle) is the same change the gateway first committed.

describe("the request on the wire", () => {
  it("the client's workspace is sent as the workspace scope and recorded in the handle; a call may override it", async () => {
    const { gw, freshClient } = setup();
    const client = freshClient({ workspace: "team-a" });
    const a = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const b = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), workspace: "team-b" });
    expect(gw.requests[0]!.workspaceScope?.selection).toEqual({ case: "workspace", value: "team-a" });
    expect(gw.requests[1]!.workspaceScope?.selection).toEqual({ case: "workspace", value: "team-b" });
    expect(a.handle.workspace).toBe("team-a");
    expect(b.handle.workspace).toBe("team-b");
  });

  it("without a workspace the request names the default workspace, as upstream requires, and the handle records none", async () => {
    const { gw, client } = setup();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(gw.requests[0]!.workspaceScope?.selection).toEqual({ case: "workspace", value: "default" });
    expect("workspace" in res.handle).toBe(false);
  });

  it("annotations and expectedResourceVersion are sent, and the sandbox annotations come back", async () => {
    const { gw, client } = setup();
    const res = await client.updatePolicy({
      sandbox: "dev",
      policy: samplePolicy(),
      annotations: { "example.com/ticket": "OPS-12" },
      expectedResourceVersion: 1,
    });
    expect(gw.requests[0]!.annotations).toEqual({ "example.com/ticket": "OPS-12" });
    expect(gw.requests[0]!.expectedResourceVersion).toBe(1n);
    expect(res.annotations).toEqual({ "example.com/ticket": "OPS-12" });
    expect(res.policyHash).toBe("sha256:2");
  });

  it("an update without wait is sent commit-only, without a wait timeout", async () => {
    const { gw, client } = setup();
    await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(gw.requests[0]!.waitMode).not.toBe(ConfigUpdateWaitMode.WAIT_FOR_COMPLETION);
    expect(gw.requests[0]!.waitTimeout).toBeUndefined();
    expect(gw.waitTimeouts).toEqual([]);
  });

  it("a waited update asks the gateway to wait for completion with a bounded timeout", async () => {
    const { gw, client } = setup({ autoComplete: () => ({ state: State.APPLIED, outcome: Outcome.APPLIED }) }, { serverWaitSliceMs: 700 });
    await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: true });
    expect(gw.requests[0]!.waitMode).toBe(ConfigUpdateWaitMode.WAIT_FOR_COMPLETION);
    expect(gw.waitTimeouts).toEqual([700]);
  });

  it("merge operations are sent as merge operations, not as a policy", async () => {
    const { gw, client } = setup();
    await client.updatePolicy({
      sandbox: "dev",
      mergeOperations: [{ operation: { case: "removeRule", value: { ruleName: "github" } } }],
    });
    expect(gw.requests[0]!.policy).toBeUndefined();
    expect(gw.requests[0]!.mergeOperations).toHaveLength(1);
    expect(gw.requests[0]!.mergeOperations[0]!.operation.case).toBe("removeRule");
  });
});

describe("handles replay the committed change exactly", () => {
  it("a settings handle with an int64 value survives JSON and replays without an idempotency conflict", async () => {
    const { gw, freshClient } = setup({ watch: false });
    const client = freshClient();
    const res = await client.updateSettings({
      sandbox: "dev",
      key: "max_bytes",
      value: 2n ** 62n + 1n,
      annotations: { by: "ci" },
      expectedResourceVersion: 1n,
    });
    const restored = restoreHandle(JSON.stringify(res.handle));
    // Strip the id so the only way to find the operation is to re-send the stored request.
    const { operationId: _dropped, ...byRequest } = restored;
    gw.complete(res.operation!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    const status = await freshClient().getOperation(byRequest as OperationHandle);
    expect(status).toMatchObject({ state: "applied", operationId: res.operation!.operationId });
    expect(gw.requests[1]!.settingValue?.value).toEqual({ case: "intValue", value: 2n ** 62n + 1n });
    expect(gw.commits).toHaveLength(1);
  });

  it("a settings handle with a bytes value replays byte-identical through a resumed wait", async () => {
    const { gw, freshClient } = setup({ watch: false }, { serverWaitSliceMs: 20 });
    const bytes = new Uint8Array([0, 255, 10, 13, 128]);
    const res = await freshClient().updateSettings({ sandbox: "dev", key: "blob", value: bytes });
    const restored = restoreHandle(JSON.parse(JSON.stringify(res.handle)));
    setTimeout(() => gw.complete(res.operation!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED }), 30);
    const completion = await freshClient({ serverWaitSliceMs: 20 }).awaitCompletion(restored, { timeoutMs: 1_000 });
    expect(completion.state).toBe("applied");
    expect(gw.commits).toHaveLength(1);
    for (const r of gw.requests) expect(r.settingValue?.value).toEqual({ case: "bytesValue", value: bytes });
  });
});

// Every sandbox-scoped request the SDK makes, as the gateway receives it: with the default
// workspace named when the caller names none (the upstream gateway rejects an absent scope).
describe("the workspace scope of every request", () => {
  type Scope = WorkspaceSelector["selection"] | undefined;
  function capturingGateway(options: { operations: boolean }) {
    const seen: { method: string; scope: Scope }[] = [];
    const note = (method: string, scope: WorkspaceSelector | undefined) => seen.push({ method, scope: scope?.selection });
    const applied = () => create(ConfigUpdateOperationSchema, { operationId: "op-1", state: State.APPLIED, outcome: Outcome.APPLIED });
    const transport = createRouterTransport((router) =>
      router.service(OpenShell, {
        async updateConfig(req) {
          note("UpdateConfig", req.workspaceScope);
          return { version: 2, policyHash: "sha256:2", ...(options.operations ? { operation: applied() } : {}) };
        },
        async *watchConfigUpdateOperations(req) {
          note("WatchConfigUpdateOperations", req.workspaceScope);
          yield { operation: applied(), initial: true };
        },
        async getConfigUpdateOperation(req) {
          note("GetConfigUpdateOperation", req.workspaceScope);
          return { operation: applied() };
        },
        async getSandboxPolicyStatus(req) {
          note("GetSandboxPolicyStatus", req.workspaceScope);
          return { activeVersion: req.version, revision: { version: req.version, status: PolicyStatus.LOADED } };
        },
        async listSandboxes(req) {
          note("ListSandboxes", req.workspaceScope);
          return { sandboxes: [{ metadata: { name: "dev" } }] };
        },
      }),
    );
    return { seen, transport };
  }
  const DEFAULT = { case: "workspace", value: "default" };

  it("updates, waits by id, status reads and a rollout's ListSandboxes all name the default workspace when none is given", async () => {
    const gw = capturingGateway({ operations: true });
    const client = createConfigClient({ ...FAST, transport: gw.transport });
    await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    await client.awaitCompletion({ operationId: "op-1" }, { timeoutMs: 2_000 });
    await client.getOperation({ operationId: "op-1" });
    await rollout(client, { labelSelector: "env=prod", policy: samplePolicy() });
    // The rollout reads what each sandbox has before changing it (its undo needs it): a status read.
    expect(new Set(gw.seen.map((s) => s.method))).toEqual(
      new Set(["UpdateConfig", "WatchConfigUpdateOperations", "GetConfigUpdateOperation", "ListSandboxes", "GetSandboxPolicyStatus"]),
    );
    for (const s of gw.seen) expect({ method: s.method, scope: s.scope }).toEqual({ method: s.method, scope: DEFAULT });
  });

  it("the policy-status wait of a gateway without operations names the default workspace too", async () => {
    const gw = capturingGateway({ operations: false });
    const client = createConfigClient({ ...FAST, transport: gw.transport });
    await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 2_000 } });
    expect(gw.seen.map((s) => s.method)).toContain("GetSandboxPolicyStatus");
    for (const s of gw.seen) expect({ method: s.method, scope: s.scope }).toEqual({ method: s.method, scope: DEFAULT });
  });

  it("a named workspace, on the client or on the call, is what every request names", async () => {
    const gw = capturingGateway({ operations: true });
    const client = createConfigClient({ ...FAST, transport: gw.transport, workspace: "team-a" });
    await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    await client.awaitCompletion({ operationId: "op-1" }, { timeoutMs: 2_000 });
    await rollout(client, { labelSelector: "env=prod", workspace: "team-b", policy: samplePolicy() });
    expect(gw.seen.map((s) => [s.method, s.scope])).toEqual([
      ["UpdateConfig", { case: "workspace", value: "team-a" }],
      ["WatchConfigUpdateOperations", { case: "workspace", value: "team-a" }],
      ["ListSandboxes", { case: "workspace", value: "team-b" }],
      ["GetSandboxPolicyStatus", { case: "workspace", value: "team-b" }],
      ["UpdateConfig", { case: "workspace", value: "team-b" }],
    ]);
  });

  it("a rollout that names no workspace lists and commits in the client's workspace, and its state keeps it", async () => {
    const gw = capturingGateway({ operations: true });
    const client = createConfigClient({ ...FAST, transport: gw.transport, workspace: "team-a" });
    const run = rollout(client, { labelSelector: "env=prod", policy: samplePolicy() });
    await run.result;
    expect(gw.seen.map((s) => [s.method, s.scope])).toEqual([
      ["ListSandboxes", { case: "workspace", value: "team-a" }],
      ["GetSandboxPolicyStatus", { case: "workspace", value: "team-a" }],
      ["UpdateConfig", { case: "workspace", value: "team-a" }],
    ]);
    expect(run.state().workspace).toBe("team-a");
  });
});
