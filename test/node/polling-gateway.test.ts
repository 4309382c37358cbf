import { describe, expect, it } from "vitest";
import { CompletionTimeoutError, CompletionUnavailableError, OpenShellConfigError } from "../../src/index.js";
import { PolicyStatus, type UpdateConfigResponse } from "../../src/gen/openshell/v1/config_pb.js";
import { rejectionOf, samplePolicy, setup, until } from "./helpers.js";

// A gateway with push delivery disabled returns no operation; the SDK follows the committed
// policy version through GetSandboxPolicyStatus instead.
const polling = () => setup({ mode: "polling" }, { pollDelayMs: { min: 2, max: 10 } });

describe("a polling-mode gateway", () => {
  it("a waited policy update follows the policy status to LOADED and reports applied with policy-status tracking", async () => {
    const { gw, client } = polling();
    const waiting = client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 3_000 } });
    await until(() => (gw.calls.getSandboxPolicyStatus ?? 0) >= 1);
    gw.setPolicyStatus("dev", 2, PolicyStatus.LOADED);
    const res = await waiting;
    expect(res.operation).toBeUndefined();
    expect(res.policyVersion).toBe(2);
    expect(res.completion).toMatchObject({
      state: "applied",
      outcome: "applied",
      tracking: "policy-status",
      operationId: "",
      target: { kind: "policy-version", policyVersion: 2 },
      error: undefined,
    });
    expect(res.completion.completedAt).toBeInstanceOf(Date);
    expect(res.completion.createdAt).toEqual(new Date("2026-01-01T00:00:00Z"));
    expect(gw.calls.getSandboxPolicyStatus).toBeGreaterThanOrEqual(2);
    expect(gw.operations()).toHaveLength(0);
    expect(gw.commits).toHaveLength(1);
    // The handle still resumes: no operation id, but the request, its key and the policy version.
    expect(res.handle.operationId).toBeUndefined();
    expect(res.handle.policyVersion).toBe(2);
  });

  it("a waited policy update whose version FAILED to load reports failed with the load error", async () => {
    const { gw, client } = polling();
    const waiting = client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 3_000 } });
    await until(() => (gw.calls.getSandboxPolicyStatus ?? 0) >= 1);
    gw.setPolicyStatus("dev", 2, PolicyStatus.FAILED, "landlock: /nonexistent does not exist");
    const res = await waiting;
    expect(res.completion).toMatchObject({
      state: "failed",
      error: "landlock: /nonexistent does not exist",
      tracking: "policy-status",
    });
    expect(res.completion.completedAt).toBeInstanceOf(Date);
  });

  it("a waited policy update whose version was SUPERSEDED reports superseded", async () => {
    const { gw, client } = polling();
    const waiting = client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 3_000 } });
    await until(() => (gw.calls.getSandboxPolicyStatus ?? 0) >= 1);
    gw.setPolicyStatus("dev", 2, PolicyStatus.SUPERSEDED);
    const res = await waiting;
    expect(res.completion).toMatchObject({ state: "superseded", outcome: "ignored-stale", tracking: "policy-status" });
  });

  it("the policy status is asked for exactly the committed version", async () => {
    const { gw, client } = polling();
    await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    gw.setPolicyStatus("dev", 2, PolicyStatus.LOADED);
    const waiting = client.updatePolicy({ sandbox: "dev", policy: samplePolicy("pypi"), wait: { timeoutMs: 3_000 } });
    await until(() => (gw.calls.getSandboxPolicyStatus ?? 0) >= 1);
    // Version 2 is loaded; version 3 (this update) is still pending, so the wait must go on.
    await new Promise((r) => setTimeout(r, 30));
    let settled = false;
    void waiting.then(() => (settled = true), () => (settled = true));
    await new Promise((r) => setTimeout(r, 0));
    expect(settled).toBe(false);
    gw.setPolicyStatus("dev", 3, PolicyStatus.FAILED, "bad");
    const res = await waiting;
    expect(res.policyVersion).toBe(3);
    expect(res.completion).toMatchObject({ state: "failed", target: { kind: "policy-version", policyVersion: 3 } });
  });

  it("a policy wait that never loads ends with CompletionTimeoutError and a handle that resumes from the policy status", async () => {
    const { gw, client, freshClient } = polling();
    const err = await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 80 } }));
    expect(err).toBeInstanceOf(CompletionTimeoutError);
    expect((err as CompletionTimeoutError).reason).toBe("deadline");
    gw.setPolicyStatus("dev", 2, PolicyStatus.LOADED);
    const completion = await freshClient().awaitCompletion((err as CompletionTimeoutError).ref!, { timeoutMs: 1_000 });
    expect(completion).toMatchObject({ state: "applied", tracking: "policy-status" });
    expect(gw.commits).toHaveLength(1);
  });

  it("getOperation of a polling-mode update reads the policy status without committing again", async () => {
    const { gw, client } = polling();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect((await client.getOperation(res.handle)).state).toBe("pending");
    gw.setPolicyStatus("dev", 2, PolicyStatus.LOADED);
    expect(await client.getOperation(res.handle)).toMatchObject({ state: "applied", tracking: "policy-status" });
    expect(gw.commits).toHaveLength(1);
  });

  it("a waited settings update throws CompletionUnavailableError carrying the committed response", async () => {
    const { gw, client } = polling();
    const err = await rejectionOf(
      client.updateSettings({ sandbox: "dev", key: "log_level", value: "debug", wait: { timeoutMs: 1_000 } }),
    );
    expect(err).toBeInstanceOf(CompletionUnavailableError);
    expect(err).toBeInstanceOf(OpenShellConfigError);
    expect((err as CompletionUnavailableError).code).toBe("completion-unavailable");
    const committed = (err as CompletionUnavailableError).committed as UpdateConfigResponse;
    expect(committed.settingsRevision).toBe(1n);
    expect(committed.operation).toBeUndefined();
    expect(gw.commits).toEqual([{ sandbox: "dev", dimension: "settings", revision: "1" }]);
    expect(gw.calls.getSandboxPolicyStatus).toBeUndefined();
  });

  it("getOperation of a settings update on a polling-mode gateway throws CompletionUnavailableError", async () => {
    const { client } = polling();
    const res = await client.updateSettings({ sandbox: "dev", key: "log_level", value: "debug" });
    expect(res.operation).toBeUndefined();
    expect(res.settingsRevision).toBe(1n);
    await expect(client.getOperation(res.handle)).rejects.toBeInstanceOf(CompletionUnavailableError);
  });
});
