// The sandbox lifecycle subset: create, get, list (labels, paging), stop, start, delete, and the
// policy history reads (status and paged list, newest first).

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { DeletionOutcome, PolicyStatus, SandboxPhase, workspaceScope } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "./harness.js";
import { createSandbox, dumpState, policy, rpcError } from "./fixtures.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.close());

const get = async (name: string) => (await gw.raw("admin").getSandbox({ name, workspaceScope: workspaceScope() })).sandbox!;

describe("create, get, stop, start, delete", () => {
  it("phases: PROVISIONING after create, STOPPED after stop, PROVISIONING after start; resource_version bumps", async () => {
    const created = await createSandbox(gw, "phases", { labels: { env: "test" } });
    expect(created.status?.phase).toBe(SandboxPhase.PROVISIONING);
    expect(created.metadata).toMatchObject({ name: "phases", workspace: "default", labels: { env: "test" }, resourceVersion: 1n });
    expect(created.metadata?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(created.spec?.policy?.networkPolicies["github"]?.endpoints[0]?.host).toBe("api.github.com");
    // Desired v1; nothing enforced until a supervisor has applied the bootstrap.
    expect(created.status).toMatchObject({ currentPolicyVersion: 0, desiredPolicyVersion: 1 });

    const stopped = (await gw.raw("admin").stopSandbox({ name: "phases", workspaceScope: workspaceScope() })).sandbox!;
    expect(stopped.status?.phase).toBe(SandboxPhase.STOPPED);
    expect(stopped.metadata?.resourceVersion).toBe(2n);
    expect((await get("phases")).status?.phase).toBe(SandboxPhase.STOPPED);

    const started = (await gw.raw("admin").startSandbox({ name: "phases", workspaceScope: workspaceScope() })).sandbox!;
    expect(started.status?.phase).toBe(SandboxPhase.PROVISIONING);
    expect(started.metadata?.resourceVersion).toBe(3n);
    expect(await get("phases")).toEqual(started);
  });

  it("stopping a stopped sandbox changes nothing", async () => {
    await createSandbox(gw, "stop-twice");
    const once = (await gw.raw("admin").stopSandbox({ name: "stop-twice", workspaceScope: workspaceScope() })).sandbox!;
    const twice = (await gw.raw("admin").stopSandbox({ name: "stop-twice", workspaceScope: workspaceScope() })).sandbox!;
    expect(twice).toEqual(once);
  });

  it("an empty name is generated", async () => {
    const sb = (await gw.raw("admin").createSandbox({ spec: { policy: policy() }, workspaceScope: workspaceScope() })).sandbox!;
    expect(sb.metadata?.name).toMatch(/^sandbox-[0-9a-f]{8}$/);
    expect((await get(sb.metadata!.name)).metadata?.id).toBe(sb.metadata?.id);
  });

  it("a duplicate name is ALREADY_EXISTS and changes nothing", async () => {
    await createSandbox(gw, "dup");
    const before = await dumpState(gw);
    const err = await rpcError(createSandbox(gw, "dup"));
    expect(err.code).toBe(Code.AlreadyExists);
    expect(err.rawMessage).toMatch(/"dup" already exists/);
    expect(await dumpState(gw)).toBe(before);
  });

  it("the same name in another workspace is a different sandbox", async () => {
    await createSandbox(gw, "twin");
    const other = await createSandbox(gw, "twin", { workspace: "team-a" });
    expect(other.metadata?.workspace).toBe("team-a");
    expect(other.metadata?.id).not.toBe((await get("twin")).metadata?.id);
  });

  it.each(["Upper", "-dash", "dash-", "under_score", "x".repeat(64)])("an invalid name (%s) is INVALID_ARGUMENT and changes nothing", async (name) => {
    const before = await dumpState(gw);
    const err = await rpcError(createSandbox(gw, name));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toMatch(/name/);
    expect(await dumpState(gw)).toBe(before);
  });

  it("an invalid create-time policy is INVALID_ARGUMENT naming spec.policy", async () => {
    const err = await rpcError(gw.raw("admin").createSandbox({ name: "bad-policy", spec: { policy: { networkPolicies: { r: { name: "r", endpoints: [{ host: "" }] } } } }, workspaceScope: workspaceScope() }));
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toMatch(/spec\.policy\.network_policies\["r"\]\.endpoints\[0\]\.host/);
  });

  it("an unknown sandbox is NOT_FOUND for get, stop and start", async () => {
    const raw = gw.raw("admin");
    for (const call of [() => raw.getSandbox({ name: "ghost", workspaceScope: workspaceScope() }), () => raw.stopSandbox({ name: "ghost", workspaceScope: workspaceScope() }), () => raw.startSandbox({ name: "ghost", workspaceScope: workspaceScope() })]) {
      expect((await rpcError(call())).code).toBe(Code.NotFound);
    }
  });

  it("delete: COMPLETED with the id, then NOT_FOUND, or ALREADY_ABSENT with allow_missing", async () => {
    const sb = await createSandbox(gw, "doomed");
    const res = await gw.raw("admin").deleteSandbox({ name: "doomed", workspaceScope: workspaceScope() });
    expect(res).toMatchObject({ outcome: DeletionOutcome.COMPLETED, sandboxId: sb.metadata?.id });
    expect((await rpcError(gw.raw("admin").getSandbox({ name: "doomed", workspaceScope: workspaceScope() }))).code).toBe(Code.NotFound);
    const before = await dumpState(gw);
    const err = await rpcError(gw.raw("admin").deleteSandbox({ name: "doomed", workspaceScope: workspaceScope() }));
    expect(err.code).toBe(Code.NotFound);
    const absent = await gw.raw("admin").deleteSandbox({ name: "doomed", allowMissing: true, workspaceScope: workspaceScope() });
    expect(absent.outcome).toBe(DeletionOutcome.ALREADY_ABSENT);
    expect(await dumpState(gw)).toBe(before);
    // The name is free again.
    expect((await createSandbox(gw, "doomed")).metadata?.id).not.toBe(sb.metadata?.id);
  });
});

describe("ListSandboxes", () => {
  beforeAll(async () => {
    for (let i = 0; i < 7; i++) {
      await createSandbox(gw, `fleet-${i}`, { labels: { fleet: "blue", parity: i % 2 === 0 ? "even" : "odd" } });
    }
  });

  it("label_selector keeps only sandboxes with every listed label", async () => {
    const blue = await gw.raw("admin").listSandboxes({ labelSelector: "fleet=blue", workspaceScope: workspaceScope() });
    expect(blue.sandboxes.map((s) => s.metadata!.name)).toEqual([0, 1, 2, 3, 4, 5, 6].map((i) => `fleet-${i}`));
    const odd = await gw.raw("admin").listSandboxes({ labelSelector: "fleet=blue, parity=odd", workspaceScope: workspaceScope() });
    expect(odd.sandboxes.map((s) => s.metadata!.name)).toEqual(["fleet-1", "fleet-3", "fleet-5"]);
    expect((await gw.raw("admin").listSandboxes({ labelSelector: "fleet=green", workspaceScope: workspaceScope() })).sandboxes).toEqual([]);
  });

  it("a malformed label_selector, a negative page_size or a forged page_token is INVALID_ARGUMENT", async () => {
    expect((await rpcError(gw.raw("admin").listSandboxes({ labelSelector: "fleet", workspaceScope: workspaceScope() }))).code).toBe(Code.InvalidArgument);
    expect((await rpcError(gw.raw("admin").listSandboxes({ pageSize: -1, workspaceScope: workspaceScope() }))).code).toBe(Code.InvalidArgument);
    expect((await rpcError(gw.raw("admin").listSandboxes({ pageToken: "not-a-token", workspaceScope: workspaceScope() }))).code).toBe(Code.InvalidArgument);
    // A well-formed token of another list (policy history) is not a sandbox page token.
    const policyToken = Buffer.from(JSON.stringify(["p", 3])).toString("base64url");
    expect((await rpcError(gw.raw("admin").listSandboxes({ pageToken: policyToken, workspaceScope: workspaceScope() }))).code).toBe(Code.InvalidArgument);
  });

  it("paging with page_size and page_token visits every sandbox exactly once", async () => {
    const all = (await gw.raw("admin").listSandboxes({ pageSize: 1000, workspaceScope: workspaceScope() })).sandboxes.map((s) => s.metadata!.name);
    expect(all.length).toBeGreaterThanOrEqual(10);
    const seen: string[] = [];
    let pageToken = "";
    let pages = 0;
    do {
      const page = await gw.raw("admin").listSandboxes({ pageSize: 3, pageToken, workspaceScope: workspaceScope() });
      expect(page.sandboxes.length).toBeLessThanOrEqual(3);
      seen.push(...page.sandboxes.map((s) => s.metadata!.name));
      pageToken = page.nextPageToken;
      pages++;
    } while (pageToken !== "");
    expect(seen).toEqual(all);
    expect(new Set(seen).size).toBe(seen.length);
    expect(pages).toBe(Math.ceil(all.length / 3));
  });

  it("paging combines with a label_selector", async () => {
    const seen: string[] = [];
    let pageToken = "";
    do {
      const page = await gw.raw("admin").listSandboxes({ pageSize: 2, pageToken, labelSelector: "parity=even", workspaceScope: workspaceScope() });
      seen.push(...page.sandboxes.map((s) => s.metadata!.name));
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    expect(seen).toEqual(["fleet-0", "fleet-2", "fleet-4", "fleet-6"]);
  });

  it("lists one workspace unless all_workspaces is asked for by someone who may", async () => {
    const teamA = await gw.raw("admin").listSandboxes({ workspaceScope: { selection: { case: "workspace", value: "team-a" } } });
    expect(teamA.sandboxes.map((s) => s.metadata!.workspace)).toEqual(["team-a"]);
    const everywhere = await gw.raw("platform").listSandboxes({ pageSize: 1000, workspaceScope: { selection: { case: "allWorkspaces", value: {} } } });
    expect(new Set(everywhere.sandboxes.map((s) => s.metadata!.workspace))).toEqual(new Set(["default", "team-a"]));
    const denied = await rpcError(gw.raw("admin").listSandboxes({ workspaceScope: { selection: { case: "allWorkspaces", value: {} } } }));
    expect(denied.code).toBe(Code.PermissionDenied);
  });
});

describe("policy status and history", () => {
  beforeAll(async () => {
    await createSandbox(gw, "history");
    for (let i = 2; i <= 6; i++) await gw.sdk().updatePolicy({ sandbox: "history", policy: policy({ [`r${i}`]: `r${i}.example.com` }) });
  });

  it("GetSandboxPolicyStatus reports the latest version by default, or the one asked for", async () => {
    const latest = await gw.raw("admin").getSandboxPolicyStatus({ sandbox: "history", workspaceScope: workspaceScope() });
    expect(latest.revision).toMatchObject({ version: 6, status: PolicyStatus.PENDING });
    expect(latest.revision?.policyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(latest.activeVersion).toBe(0);
    const first = await gw.raw("admin").getSandboxPolicyStatus({ sandbox: "history", version: 1, workspaceScope: workspaceScope() });
    expect(first.revision?.version).toBe(1);
    expect(first.revision?.policyHash).not.toBe(latest.revision?.policyHash);
    expect((await rpcError(gw.raw("admin").getSandboxPolicyStatus({ sandbox: "history", version: 99, workspaceScope: workspaceScope() }))).code).toBe(Code.NotFound);
    expect((await rpcError(gw.raw("admin").getSandboxPolicyStatus({ sandbox: "ghost", workspaceScope: workspaceScope() }))).code).toBe(Code.NotFound);
  });

  it("ListSandboxPolicies pages newest first and visits every version once", async () => {
    const versions: number[] = [];
    let pageToken = "";
    do {
      const page = await gw.raw("admin").listSandboxPolicies({ sandbox: "history", pageSize: 2, pageToken, workspaceScope: workspaceScope() });
      expect(page.revisions.length).toBeLessThanOrEqual(2);
      versions.push(...page.revisions.map((r) => r.version));
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    expect(versions).toEqual([6, 5, 4, 3, 2, 1]);
    expect((await rpcError(gw.raw("admin").listSandboxPolicies({ sandbox: "history", pageSize: -1, workspaceScope: workspaceScope() }))).code).toBe(Code.InvalidArgument);
  });
});
