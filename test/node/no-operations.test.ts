// Commits against gateways that track no operations (a release before durable operations, or a
// polling-mode fork gateway): such a gateway ignores the idempotency key, so a commit whose answer
// was lost is never sent again blindly. Network faults are injected between the SDK and the fake
// gateway as connect-node reports them: a refused connection (the request never left) before the
// gateway sees the call, a reset (the answer lost) after it committed.

import { describe, expect, it } from "vitest";
import { Code, ConnectError, createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { CommitOutcomeUnknownError, CompletionUnavailableError, ConflictError, OpenShellConfigError, createConfigClient, type ConfigClientOptions } from "../../src/index.js";
import { PolicyStatus } from "../../src/gen/openshell/v1/config_pb.js";
import { createFakeGateway, type FakeGateway, type GatewayMode } from "../support/fake-gateway.js";
import { FAST, rejectionOf, samplePolicy, until } from "./helpers.js";

type Fault = "refused" | "reset";

/** What connect-node reports for a refused connection (seen against a closed port). */
const refused = () =>
  new ConnectError("connect ECONNREFUSED 127.0.0.1:9", Code.Unavailable, undefined, undefined, Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED", syscall: "connect" }));
/** What connect-node reports when the connection is reset after the request went out (seen through a proxy). */
const reset = () => new ConnectError("read ECONNRESET", Code.Aborted, undefined, undefined, Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET", syscall: "read" }));

/** A gateway with sandbox `dev`, and clients whose UpdateConfig calls meet the queued faults in order. */
function setup(mode: GatewayMode) {
  const gw = createFakeGateway({ mode });
  gw.addSandbox("dev");
  const faults: Fault[] = [];
  const network: Interceptor = (next) => async (req) => {
    const fault = req.method.name === "UpdateConfig" ? faults.shift() : undefined;
    if (fault === "refused") throw refused();
    const res = await next(req);
    if (fault === "reset") throw reset();
    return res;
  };
  const client = (options: Omit<ConfigClientOptions, "transport" | "baseUrl"> = {}) =>
    createConfigClient({ ...FAST, ...options, transport: createRouterTransport(gw.routes, { transport: { interceptors: [network] } }) });
  return { gw, faults, client };
}

const policyCommits = (gw: FakeGateway) => gw.commits.filter((c) => c.dimension === "policy").length;

describe("a gateway without operations", () => {
  it("is recognised from the first commit's answer, once per client: a later lost answer is not resent and asks nothing", async () => {
    const { gw, faults, client } = setup("untracked");
    const c = client();
    const first = await c.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(first.operation).toBeUndefined();
    faults.push("reset");
    const err = await rejectionOf(c.updatePolicy({ sandbox: "dev", policy: samplePolicy("pypi") }));
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect(gw.calls.updateConfig).toBe(2);
    expect(gw.calls.getConfigUpdateOperation).toBeUndefined();
    // The lost answer's commit happened, exactly once.
    expect(policyCommits(gw)).toBe(2);
  });

  it("a reset after the request was sent ends in CommitOutcomeUnknownError with one line saying what to check, after one UpdateConfig", async () => {
    const { gw, faults, client } = setup("untracked");
    faults.push("reset");
    const err = await rejectionOf(client().updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect(err).toBeInstanceOf(OpenShellConfigError);
    const e = err as CommitOutcomeUnknownError;
    expect(e.code).toBe("commit-outcome-unknown");
    expect(e.sandbox).toBe("dev");
    expect(e.workspace).toBeUndefined();
    expect(e.message).toBe(
      'the answer to the commit to sandbox "dev" was lost and this gateway does not track operations, so it may or may not have been committed; check "openshell-config policy history --sandbox dev" before sending it again, or pin expectedResourceVersion',
    );
    expect(e.message).not.toContain("\n");
    expect(gw.calls.updateConfig).toBe(1);
    // Not known yet on a fresh client: asked once, answered UNIMPLEMENTED.
    expect(gw.calls.getConfigUpdateOperation).toBe(1);
    expect(policyCommits(gw)).toBe(1);
  });

  it("names the workspace in the check when it is not the default one, and settings changes point at the settings", async () => {
    const { faults, client } = setup("untracked");
    const c = client({ workspace: "team-a" });
    faults.push("reset");
    const policyErr = (await rejectionOf(c.updatePolicy({ sandbox: "dev", policy: samplePolicy() }))) as CommitOutcomeUnknownError;
    expect(policyErr.workspace).toBe("team-a");
    expect(policyErr.message).toContain('sandbox "dev" in workspace "team-a"');
    expect(policyErr.message).toContain('"openshell-config policy history --sandbox dev --workspace team-a"');
    faults.push("reset");
    const settingsErr = (await rejectionOf(c.updateSettings({ sandbox: "dev", key: "log_level", value: "debug" }))) as CommitOutcomeUnknownError;
    expect(settingsErr).toBeInstanceOf(CommitOutcomeUnknownError);
    expect(settingsErr.message).toContain('"openshell-config settings list --sandbox dev --workspace team-a"');
  });

  it("a waited commit whose answer was lost also ends in CommitOutcomeUnknownError, not in a second revision", async () => {
    const { gw, faults, client } = setup("untracked");
    faults.push("reset");
    const err = await rejectionOf(client().updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 2_000 } }));
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect(gw.calls.updateConfig).toBe(1);
    expect(policyCommits(gw)).toBe(1);
  });

  it("UNAVAILABLE from the gateway is ambiguous too: not resent without a pinned resource version", async () => {
    const { gw, client } = setup("untracked");
    gw.inject({ method: "updateConfig", code: Code.Unavailable });
    const err = await rejectionOf(client().updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect((err as CommitOutcomeUnknownError).connectCode).toBe(Code.Unavailable);
    expect(gw.calls.updateConfig).toBe(1);
  });

  it("a DEADLINE_EXCEEDED without operation id is a lost answer, not resent", async () => {
    const { gw, client } = setup("untracked");
    const c = client();
    await c.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    gw.inject({ method: "updateConfig", code: Code.DeadlineExceeded, afterCommit: true });
    const err = await rejectionOf(c.updatePolicy({ sandbox: "dev", policy: samplePolicy("pypi"), wait: { timeoutMs: 2_000 } }));
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect((err as Error).message).toMatch(/^the answer to the commit to sandbox "dev" was lost/);
    expect(gw.calls.updateConfig).toBe(2);
    expect(policyCommits(gw)).toBe(2);
  });

  it("with expectedResourceVersion pinned, an ambiguous failure is sent again: at most one attempt can commit", async () => {
    const { gw, client } = setup("untracked");
    gw.inject({ method: "updateConfig", code: Code.Unavailable });
    const res = await client().updatePolicy({ sandbox: "dev", policy: samplePolicy(), expectedResourceVersion: 1n });
    expect(res.policyVersion).toBe(2);
    expect(gw.calls.updateConfig).toBe(2);
    expect(gw.requests.map((r) => r.expectedResourceVersion)).toEqual([1n, 1n]);
    expect(policyCommits(gw)).toBe(1);
  });

  it("a pinned resend refused with ABORTED cannot tell whose commit moved the sandbox: CommitOutcomeUnknownError that says so", async () => {
    const { gw, faults, client } = setup("untracked");
    faults.push("reset");
    const err = await rejectionOf(client().updatePolicy({ sandbox: "dev", policy: samplePolicy(), expectedResourceVersion: 1 }));
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect(err).not.toBeInstanceOf(ConflictError);
    expect((err as Error).message).toContain("its retry, pinned to resource version 1, was refused because the sandbox changed, by this commit or another");
    expect((err as CommitOutcomeUnknownError).connectCode).toBe(Code.Aborted);
    expect(gw.calls.updateConfig).toBe(2);
    expect(policyCommits(gw)).toBe(1);
  });

  it("a refused connection proves the request never left: it is retried without asking anything, and commits once", async () => {
    const { gw, faults, client } = setup("untracked");
    faults.push("refused", "refused");
    const res = await client().updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(res.policyVersion).toBe(2);
    expect(gw.calls.updateConfig).toBe(1);
    expect(gw.calls.getConfigUpdateOperation).toBeUndefined();
    expect(policyCommits(gw)).toBe(1);
  });

  it("a caller's abort before sending sends nothing and is the abort, not CommitOutcomeUnknownError", async () => {
    const { gw, client } = setup("untracked");
    const controller = new AbortController();
    controller.abort(new Error("changed my mind"));
    await expect(client().updatePolicy({ sandbox: "dev", policy: samplePolicy(), signal: controller.signal })).rejects.toThrow("changed my mind");
    expect(gw.calls.updateConfig).toBeUndefined();
  });

  it("awaitCompletion of a handle without operation id follows its policy version and never sends the update again", async () => {
    const { gw, client } = setup("untracked");
    const { handle } = await client().updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(handle.operationId).toBeUndefined();
    expect(handle.policyVersion).toBe(2);
    const other = client();
    const waiting = other.awaitCompletion(JSON.parse(JSON.stringify(handle)), { timeoutMs: 2_000 });
    await until(() => (gw.calls.getSandboxPolicyStatus ?? 0) >= 1);
    gw.setPolicyStatus("dev", 2, PolicyStatus.LOADED);
    expect(await waiting).toMatchObject({ state: "applied", tracking: "policy-status", target: { kind: "policy-version", policyVersion: 2 } });
    expect(await other.getOperation(handle)).toMatchObject({ state: "applied" });
    expect(gw.calls.updateConfig).toBe(1);
    expect(policyCommits(gw)).toBe(1);
  });

  it("resuming by idempotency key is refused with CommitOutcomeUnknownError: resending could commit twice", async () => {
    const { gw, client } = setup("untracked");
    await client().updatePolicy({ sandbox: "dev", policy: samplePolicy(), idempotencyKey: "deploy-1" });
    const ref = { sandbox: "dev", idempotencyKey: "deploy-1", request: { policy: samplePolicy() } };
    const err = await rejectionOf(client().awaitCompletion(ref, { timeoutMs: 1_000 }));
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect((err as Error).message).toBe(
      'the update to sandbox "dev" cannot be resumed by its idempotency key: this gateway does not track operations, so it may or may not have been committed; check "openshell-config policy history --sandbox dev" before sending it again',
    );
    await expect(client().getOperation(ref)).rejects.toBeInstanceOf(CommitOutcomeUnknownError);
    expect(gw.calls.updateConfig).toBe(1);
    expect(policyCommits(gw)).toBe(1);
  });

  it("a settings change resumed by its key reports CompletionUnavailableError without sending it again", async () => {
    const { gw, client } = setup("untracked");
    const { handle } = await client().updateSettings({ sandbox: "dev", key: "log_level", value: "debug" });
    await expect(client().awaitCompletion(handle, { timeoutMs: 1_000 })).rejects.toBeInstanceOf(CompletionUnavailableError);
    await expect(client().getOperation(handle)).rejects.toBeInstanceOf(CompletionUnavailableError);
    expect(gw.calls.updateConfig).toBe(1);
  });
});

describe("a polling-mode gateway (no operation in its answers)", () => {
  it("is treated as one without operations: a lost answer after its first commit is not resent", async () => {
    const { gw, faults, client } = setup("polling");
    const c = client();
    await c.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    faults.push("reset");
    await expect(c.updatePolicy({ sandbox: "dev", policy: samplePolicy("pypi") })).rejects.toBeInstanceOf(CommitOutcomeUnknownError);
    expect(gw.calls.updateConfig).toBe(2);
  });
});

describe("a gateway that tracks operations", () => {
  it("an ambiguous failure on a fresh client asks once whether operations are tracked, then resends with the same key and commits once", async () => {
    const { gw, faults, client } = setup("push");
    const c = client();
    faults.push("reset");
    const res = await c.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(res.operation?.operationId).toBe(gw.operations()[0]!.operationId);
    expect(gw.calls.updateConfig).toBe(2);
    expect(gw.calls.getConfigUpdateOperation).toBe(1);
    expect(new Set(gw.requests.map((r) => r.idempotencyKey)).size).toBe(1);
    expect(policyCommits(gw)).toBe(1);
    // Learnt for the life of the client: the next lost answer is resent without asking.
    faults.push("reset");
    await c.updatePolicy({ sandbox: "dev", policy: samplePolicy("pypi") });
    expect(gw.calls.getConfigUpdateOperation).toBe(1);
    expect(gw.calls.updateConfig).toBe(4);
    expect(policyCommits(gw)).toBe(2);
  });

  it("a client that already saw an operation resends a lost answer by key without asking", async () => {
    const { gw, faults, client } = setup("push");
    const c = client();
    await c.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    faults.push("reset", "reset");
    await c.updatePolicy({ sandbox: "dev", policy: samplePolicy("pypi"), wait: false });
    expect(gw.calls.getConfigUpdateOperation).toBeUndefined();
    expect(gw.calls.updateConfig).toBe(4);
    expect(policyCommits(gw)).toBe(2);
  });

  it("when the question cannot be answered either, the outcome is unknown and says so", async () => {
    const { gw, faults, client } = setup("push");
    faults.push("reset");
    gw.inject({ method: "getConfigUpdateOperation", code: Code.PermissionDenied });
    const err = await rejectionOf(client().updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect((err as Error).message).toContain("whether this gateway tracks operations could not be learned");
    expect(gw.calls.updateConfig).toBe(1);
  });
});
