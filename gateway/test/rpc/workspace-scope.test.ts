// The workspace scope of sandbox-scoped requests, as upstream (UPSTREAM.md §2.1, §7): a request
// that names no workspace is INVALID_ARGUMENT "workspace_scope is required" and changes nothing;
// `default` names the default workspace; list requests name one workspace or all; a supervisor
// reading its own configuration may omit the scope (§2.6). And the SDK, naming no workspace,
// sends `default`, so it works against this rule.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { allWorkspacesScope, workspaceScope } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "./harness.js";
import { createSandbox, dumpState, policy, rpcError } from "./fixtures.js";

let gw: TestGateway;
let operationId: string;
beforeAll(async () => {
  gw = await startTestGateway();
  await createSandbox(gw, "dev");
  operationId = (await gw.raw("admin").updateConfig({ sandbox: "dev", policy: policy({ a: "a.example.com" }), workspaceScope: workspaceScope() })).operation!.operationId;
});
afterAll(() => gw.close());

/** Every request that addresses one sandbox (or one of its operations), without a scope. */
function unscoped(): Record<string, () => Promise<unknown>> {
  const admin = gw.raw("admin");
  return {
    CreateSandbox: () => admin.createSandbox({ name: "fresh", spec: { policy: policy() } }),
    GetSandbox: () => admin.getSandbox({ name: "dev" }),
    ListSandboxes: () => admin.listSandboxes({}),
    StopSandbox: () => admin.stopSandbox({ name: "dev" }),
    StartSandbox: () => admin.startSandbox({ name: "dev" }),
    DeleteSandbox: () => admin.deleteSandbox({ name: "dev" }),
    UpdateConfig: () => admin.updateConfig({ sandbox: "dev", policy: policy({ b: "b.example.com" }) }),
    GetConfigUpdateOperation: () => admin.getConfigUpdateOperation({ operationId }),
    GetSandboxConfig: () => admin.getSandboxConfig({ name: "dev" }),
    GetSandboxPolicyStatus: () => admin.getSandboxPolicyStatus({ sandbox: "dev" }),
    ListSandboxPolicies: () => admin.listSandboxPolicies({ sandbox: "dev" }),
    CreateProvider: () => admin.createProvider({ provider: { metadata: { name: "llm" }, type: "openai" } }),
    WatchConfigUpdateOperations: async () => {
      for await (const m of admin.watchConfigUpdateOperations({ operationIds: [operationId] })) return m;
      return undefined;
    },
  };
}

const RPCS = [
  "CreateSandbox", "GetSandbox", "ListSandboxes", "StopSandbox", "StartSandbox", "DeleteSandbox", "UpdateConfig",
  "GetConfigUpdateOperation", "GetSandboxConfig", "GetSandboxPolicyStatus", "ListSandboxPolicies", "CreateProvider",
  "WatchConfigUpdateOperations",
];

describe("the workspace scope of sandbox-scoped requests", () => {
  it("the list below covers every unscoped call", () => {
    expect(Object.keys(unscoped()).sort()).toEqual([...RPCS].sort());
  });

  it.each(RPCS)("%s without workspace_scope is INVALID_ARGUMENT 'workspace_scope is required' and changes nothing", async (rpc) => {
    const before = await dumpState(gw);
    const err = await rpcError(unscoped()[rpc]!());
    expect(Code[err.code]).toBe(Code[Code.InvalidArgument]);
    expect(err.rawMessage).toBe("workspace_scope is required");
    expect(await dumpState(gw)).toBe(before);
  });

  it("a selector with no selection is the same as none", async () => {
    const err = await rpcError(gw.raw("admin").getSandbox({ name: "dev", workspaceScope: {} }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toBe("workspace_scope is required");
  });

  it("'default' names the default workspace on every request", async () => {
    const admin = gw.raw("admin");
    const scope = workspaceScope("default");
    expect((await admin.getSandbox({ name: "dev", workspaceScope: scope })).sandbox?.metadata?.workspace).toBe("default");
    expect((await admin.listSandboxes({ workspaceScope: scope })).sandboxes.map((s) => s.metadata?.name)).toEqual(["dev"]);
    expect((await admin.getConfigUpdateOperation({ operationId, workspaceScope: scope })).operation?.operationId).toBe(operationId);
    expect((await admin.getSandboxConfig({ name: "dev", workspaceScope: scope })).workspace).toBe("default");
    expect((await admin.getSandboxPolicyStatus({ sandbox: "dev", workspaceScope: scope })).revision?.version).toBe(2);
    expect((await admin.listSandboxPolicies({ sandbox: "dev", workspaceScope: scope })).revisions).toHaveLength(2);
  });

  it("an operation is found only in its own workspace", async () => {
    const err = await rpcError(gw.raw("admin").getConfigUpdateOperation({ operationId, workspaceScope: workspaceScope("team-a") }));
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toBe("update operation not found");
  });

  it("ListSandboxes takes all workspaces instead; a single-resource request does not", async () => {
    await createSandbox(gw, "alpha", { workspace: "team-a" });
    const all = await gw.raw("platform").listSandboxes({ workspaceScope: allWorkspacesScope() });
    expect(all.sandboxes.map((s) => `${s.metadata?.workspace}/${s.metadata?.name}`).sort()).toEqual(["default/dev", "team-a/alpha"]);
    const err = await rpcError(gw.raw("platform").getSandbox({ name: "dev", workspaceScope: allWorkspacesScope() }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toMatch(/^workspace_scope must name one workspace/);
  });

  it("a global update still omits the scope", async () => {
    const res = await gw.raw("platform").updateConfig({ global: true, settingKey: "scope-test", settingValue: { value: { case: "boolValue", value: true } } });
    expect(res.operation).toBeUndefined();
  });

  it("a supervisor reads its own configuration without a scope (upstream: optional for sandbox callers at bootstrap)", async () => {
    const own = await gw.raw("supervisor").getSandboxConfig({});
    expect(own.workspace).toBe("default");
    expect(own.version).toBe(2);
  });

  it("the SDK, naming no workspace, sends 'default': its updates, waits and reads pass this rule", async () => {
    const sdk = gw.sdk("admin", { pollDelayMs: { min: 5, max: 20 } });
    const res = await sdk.updatePolicy({ sandbox: "dev", policy: policy({ c: "c.example.com" }) });
    expect((await sdk.getOperation(res.handle)).state).toBe("pending");
    expect((await sdk.getOperation({ operationId: res.operation!.operationId })).operationId).toBe(res.operation!.operationId);
    const waited = await sdk.awaitCompletion({ operationId: res.operation!.operationId }, { timeoutMs: 200 }).catch((e: Error) => e);
    // Nothing applies it here (no supervisor): the wait ends at its deadline, not with INVALID_ARGUMENT.
    expect(waited).toMatchObject({ name: "CompletionTimeoutError", reason: "deadline" });
  });
});
