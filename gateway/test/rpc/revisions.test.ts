// How UpdateConfig moves desired revisions: a change makes a new policy version or settings
// revision, an unchanged update makes none but still gets its own operation, a newer policy
// supersedes older pending policy operations, merge operations edit the latest policy, and
// annotations and resource_version follow the sandbox.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigApplyOutcome, ConfigUpdateOperationState as State, workspaceScope, type SandboxPolicy } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "./harness.js";
import { createSandbox, policy, sandboxRecord } from "./fixtures.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.close());

async function storedOperation(id: string | undefined) {
  const op = await gw.store.operation(id ?? "");
  if (!op) throw new Error(`operation ${id} not stored`);
  return op;
}

async function currentPolicy(sandbox: string): Promise<SandboxPolicy> {
  const res = await gw.raw("admin").getSandboxConfig({ name: sandbox, workspaceScope: workspaceScope() });
  return res.policy!;
}

describe("policy revisions", () => {
  it("an unchanged policy creates no version but a new operation targeting the existing one", async () => {
    await createSandbox(gw, "unchanged-policy");
    const client = gw.sdk();
    const first = await client.updatePolicy({ sandbox: "unchanged-policy", policy: policy() });
    const second = await client.updatePolicy({ sandbox: "unchanged-policy", policy: policy() });
    expect(first.policyVersion).toBe(1);
    expect(second.policyVersion).toBe(1);
    expect(second.policyHash).toBe(first.policyHash);
    expect(first.operation?.operationId).toBeTruthy();
    expect(second.operation?.operationId).not.toBe(first.operation?.operationId);
    for (const res of [first, second]) {
      const op = await storedOperation(res.operation?.operationId);
      expect(op.state).toBe(State.PENDING);
      expect(op.dimension).toBe("policy");
      expect(op.desiredRevision).toBe(1n);
    }
    const sb = await sandboxRecord(gw, "unchanged-policy");
    expect((await gw.store.listPolicyRevisions(sb.id, 100, "")).items.map((r) => r.version)).toEqual([1]);
  });

  it("the canonical hash does not depend on map insertion order", async () => {
    await createSandbox(gw, "map-order");
    const forward = policy({ a: "a.example.com", b: "b.example.com", c: "c.example.com" });
    const backward = policy({ c: "c.example.com", b: "b.example.com", a: "a.example.com" });
    expect(Object.keys(forward.networkPolicies!)).not.toEqual(Object.keys(backward.networkPolicies!));
    const one = await gw.sdk().updatePolicy({ sandbox: "map-order", policy: forward });
    const two = await gw.sdk().updatePolicy({ sandbox: "map-order", policy: backward });
    expect(one.policyVersion).toBe(2);
    expect(two.policyVersion).toBe(2);
    expect(two.policyHash).toBe(one.policyHash);
  });

  it("a newer policy supersedes the pending older policy operation but not pending settings operations", async () => {
    await createSandbox(gw, "supersede");
    const client = gw.sdk();
    const older = await client.updatePolicy({ sandbox: "supersede", policy: policy({ one: "one.example.com" }) });
    const setting = await client.updateSettings({ sandbox: "supersede", key: "log_level", value: "debug" });
    const newer = await client.updatePolicy({ sandbox: "supersede", policy: policy({ two: "two.example.com" }) });
    expect(newer.policyVersion).toBe(older.policyVersion + 1);

    const superseded = await client.getOperation({ operationId: older.operation!.operationId });
    expect(superseded).toMatchObject({ state: "superseded", outcome: "ignored-stale", error: "a newer desired revision replaced this update before application" });
    expect(superseded.completedAt).toBeInstanceOf(Date);
    const raw = await gw.raw("admin").getConfigUpdateOperation({ operationId: older.operation!.operationId, workspaceScope: workspaceScope() });
    expect(raw.operation?.state).toBe(State.SUPERSEDED);
    expect(raw.operation?.outcome).toBe(ConfigApplyOutcome.IGNORED_STALE);

    expect((await client.getOperation({ operationId: setting.operation!.operationId })).state).toBe("pending");
    expect((await client.getOperation({ operationId: newer.operation!.operationId })).state).toBe("pending");
  });

  it("an applied older operation stays applied when a newer policy is committed", async () => {
    await createSandbox(gw, "applied-stays");
    const client = gw.sdk();
    const older = await client.updatePolicy({ sandbox: "applied-stays", policy: policy({ one: "one.example.com" }) });
    await gw.gateway.transitions.resolve(older.operation!.operationId, { state: State.APPLIED, outcome: ConfigApplyOutcome.APPLIED });
    await client.updatePolicy({ sandbox: "applied-stays", policy: policy({ two: "two.example.com" }) });
    expect(await client.getOperation({ operationId: older.operation!.operationId })).toMatchObject({ state: "applied", outcome: "applied" });
  });

  it("merge operations edit the latest policy", async () => {
    await createSandbox(gw, "merge");
    const client = gw.sdk();
    const added = await client.updatePolicy({
      sandbox: "merge",
      mergeOperations: [
        { operation: { case: "addRule", value: { ruleName: "npm", rule: { name: "npm", endpoints: [{ host: "registry.npmjs.org", ports: [443] }, { host: "npmjs.com", ports: [443] }], binaries: [{ path: "/usr/bin/npm" }, { path: "/usr/bin/node" }] } } } },
        { operation: { case: "addAllowRules", value: { target: { ruleName: "github", host: "api.github.com", ports: [443] }, rules: [{ allow: { method: "GET", path: "/repos/**" } }] } } },
        { operation: { case: "addDenyRules", value: { target: { ruleName: "github", host: "api.github.com" }, denyRules: [{ method: "DELETE", path: "/**" }] } } },
      ],
    });
    expect(added.policyVersion).toBe(2);
    let p = await currentPolicy("merge");
    expect(Object.keys(p.networkPolicies).sort()).toEqual(["github", "npm"]);
    expect(p.networkPolicies["npm"]!.endpoints.map((e) => e.host)).toEqual(["registry.npmjs.org", "npmjs.com"]);
    const github = p.networkPolicies["github"]!.endpoints[0]!;
    expect(github.rules.map((r) => [r.allow?.method, r.allow?.path])).toEqual([["GET", "/repos/**"]]);
    expect(github.denyRules.map((r) => [r.method, r.path])).toEqual([["DELETE", "/**"]]);
    expect(p.filesystem?.readOnly).toEqual(["/usr"]);

    const removed = await client.updatePolicy({
      sandbox: "merge",
      mergeOperations: [
        { operation: { case: "removeEndpoint", value: { ruleName: "npm", host: "npmjs.com", port: 443 } } },
        { operation: { case: "removeBinary", value: { ruleName: "npm", binaryPath: "/usr/bin/node" } } },
        { operation: { case: "removeRule", value: { ruleName: "github" } } },
      ],
    });
    expect(removed.policyVersion).toBe(3);
    p = await currentPolicy("merge");
    expect(Object.keys(p.networkPolicies)).toEqual(["npm"]);
    expect(p.networkPolicies["npm"]!.endpoints.map((e) => e.host)).toEqual(["registry.npmjs.org"]);
    expect(p.networkPolicies["npm"]!.binaries.map((b) => b.path)).toEqual(["/usr/bin/npm"]);

    const history = await gw.raw("admin").listSandboxPolicies({ sandbox: "merge", workspaceScope: workspaceScope() });
    expect(history.revisions.map((r) => r.version)).toEqual([3, 2, 1]);
    expect(history.revisions[0]!.policyHash).toBe(removed.policyHash);
  });
});

describe("settings revisions", () => {
  it("an upsert bumps settings_revision; the same value again makes a new operation on the same revision", async () => {
    await createSandbox(gw, "settings");
    const client = gw.sdk();
    const first = await client.updateSettings({ sandbox: "settings", key: "log_level", value: "debug" });
    const again = await client.updateSettings({ sandbox: "settings", key: "log_level", value: "debug" });
    const other = await client.updateSettings({ sandbox: "settings", key: "log_level", value: "trace" });
    expect([first.settingsRevision, again.settingsRevision, other.settingsRevision]).toEqual([1n, 1n, 2n]);
    expect(again.operation?.operationId).not.toBe(first.operation?.operationId);
    expect((await storedOperation(again.operation?.operationId)).desiredRevision).toBe(1n);
    expect((await storedOperation(other.operation?.operationId)).desiredRevision).toBe(2n);
    const config = await gw.raw("admin").getSandboxConfig({ name: "settings", workspaceScope: workspaceScope() });
    expect(config.settingsRevision).toBe(2n);
    expect(config.settings["log_level"]?.value?.value).toEqual({ case: "stringValue", value: "trace" });
  });

  it("a newer settings revision supersedes the pending older settings operation, whatever its key", async () => {
    await createSandbox(gw, "settings-supersede");
    const client = gw.sdk();
    const older = await client.updateSettings({ sandbox: "settings-supersede", key: "a", value: "1" });
    const policyOp = await client.updatePolicy({ sandbox: "settings-supersede", policy: policy({ z: "z.example.com" }) });
    const newer = await client.updateSettings({ sandbox: "settings-supersede", key: "b", value: "2" });
    expect(newer.settingsRevision).toBe(older.settingsRevision + 1n);
    expect(await client.getOperation({ operationId: older.operation!.operationId })).toMatchObject({ state: "superseded", outcome: "ignored-stale" });
    expect((await client.getOperation({ operationId: policyOp.operation!.operationId })).state).toBe("pending");
    expect((await client.getOperation({ operationId: newer.operation!.operationId })).state).toBe("pending");
  });

  it("a delete bumps settings_revision and reports deleted", async () => {
    await createSandbox(gw, "settings-delete");
    const client = gw.sdk();
    await client.updateSettings({ sandbox: "settings-delete", key: "verbose", value: true });
    const res = await client.updateSettings({ sandbox: "settings-delete", key: "verbose", delete: true });
    expect(res.deleted).toBe(true);
    expect(res.settingsRevision).toBe(2n);
    expect(res.operation?.state).toBe("pending");
    const config = await gw.raw("admin").getSandboxConfig({ name: "settings-delete", workspaceScope: workspaceScope() });
    expect(config.settings["verbose"]).toBeUndefined();
  });

  it("deleting an absent setting changes nothing but still returns an operation", async () => {
    await createSandbox(gw, "settings-absent");
    const before = await sandboxRecord(gw, "settings-absent");
    const res = await gw.sdk().updateSettings({ sandbox: "settings-absent", key: "never-set", delete: true });
    expect(res.deleted).toBe(false);
    expect(res.settingsRevision).toBe(0n);
    expect(res.operation?.operationId).toBeTruthy();
    expect((await storedOperation(res.operation?.operationId)).desiredRevision).toBe(0n);
    expect(await sandboxRecord(gw, "settings-absent")).toEqual(before);
    expect(await gw.store.settings(before.id)).toEqual([]);
  });
});

describe("sandbox metadata", () => {
  it("annotations are merged into the sandbox's annotations, returned, and kept as provenance", async () => {
    await gw.raw("admin").createSandbox({ name: "annotated", annotations: { team: "infra" }, spec: { policy: policy() }, workspaceScope: workspaceScope() });
    const res = await gw.sdk().updatePolicy({
      sandbox: "annotated",
      policy: policy({ pypi: "pypi.org" }),
      annotations: { "example.com/ticket": "OPS-1" },
    });
    expect(res.annotations).toEqual({ team: "infra", "example.com/ticket": "OPS-1" });
    const later = await gw.sdk().updateSettings({ sandbox: "annotated", key: "log_level", value: "info", annotations: { team: "platform" } });
    expect(later.annotations).toEqual({ team: "platform", "example.com/ticket": "OPS-1" });
    const sb = await gw.raw("admin").getSandbox({ name: "annotated", workspaceScope: workspaceScope() });
    expect(sb.sandbox?.metadata?.annotations).toEqual({ team: "platform", "example.com/ticket": "OPS-1" });
    const history = await gw.raw("admin").listSandboxPolicies({ sandbox: "annotated", workspaceScope: workspaceScope() });
    expect(history.revisions[0]?.provenance).toEqual({ "example.com/ticket": "OPS-1" });
  });

  it("the same policy with other annotations is no new version: identical means the same policy (issue 30, item 14)", async () => {
    await createSandbox(gw, "provenance");
    const changed = policy({ x: "x.example.com" });
    const a = await gw.sdk().updatePolicy({ sandbox: "provenance", policy: changed, annotations: { "example.com/ticket": "A" } });
    const b = await gw.sdk().updatePolicy({ sandbox: "provenance", policy: changed, annotations: { "example.com/ticket": "B" } });
    expect(a.policyVersion).toBe(2);
    expect(b.policyVersion).toBe(2);
    // The annotations still merge into the sandbox's; the revision keeps its creator's provenance.
    expect(b.annotations["example.com/ticket"]).toBe("B");
    const history = await gw.raw("admin").listSandboxPolicies({ sandbox: "provenance", workspaceScope: workspaceScope() });
    expect(history.revisions.map((r) => r.version)).toEqual([2, 1]);
    expect(history.revisions[0]?.provenance).toEqual({ "example.com/ticket": "A" });
  });

  it("resource_version bumps on each change and not on an unchanged update", async () => {
    await createSandbox(gw, "rv");
    const rv = async () => (await gw.raw("admin").getSandbox({ name: "rv", workspaceScope: workspaceScope() })).sandbox!.metadata!.resourceVersion;
    const client = gw.sdk();
    const seen = [await rv()];
    await client.updatePolicy({ sandbox: "rv", policy: policy({ x: "x.example.com" }) });
    seen.push(await rv());
    await client.updateSettings({ sandbox: "rv", key: "k", value: 1 });
    seen.push(await rv());
    await client.updateSettings({ sandbox: "rv", key: "k", delete: true });
    seen.push(await rv());
    await client.updatePolicy({ sandbox: "rv", policy: policy({ x: "x.example.com" }) });
    seen.push(await rv());
    expect(seen).toEqual([seen[0], seen[0]! + 1n, seen[0]! + 2n, seen[0]! + 3n, seen[0]! + 3n]);
    const next = await client.updatePolicy({ sandbox: "rv", policy: policy({ y: "y.example.com" }), expectedResourceVersion: seen[4]! });
    expect(next.policyVersion).toBe(3);
  });
});
