import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { ConfigApplyOutcome as Outcome, SandboxPhase, workspaceScope } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "../rpc/harness.js";
import { createSandbox, policy } from "../rpc/fixtures.js";
import { connectSupervisorDouble, type SupervisorDouble } from "./supervisor-double.js";

let gw: TestGateway;
let sup: SupervisorDouble | undefined;
beforeEach(async () => {
  gw = await startTestGateway();
  await createSandbox(gw, "dev");
});
afterEach(async () => {
  sup?.close();
  await gw.close();
});

describe("pushing desired state to a supervisor", () => {
  it("a supervisor without config apply is refused with FAILED_PRECONDITION saying what to upgrade", async () => {
    sup = connectSupervisorDouble(gw, { hello: { supportsConfigApply: false } });
    const err = ConnectError.from(await sup.ended);
    expect(err.code).toBe(Code.FailedPrecondition);
    expect(err.message).toMatch(/upgrade the supervisor/);
  });

  it("the sandbox becomes READY only after its supervisor applied the bootstrap", async () => {
    const before = await gw.raw("admin").getSandbox({ name: "dev", workspaceScope: workspaceScope() });
    expect(before.sandbox?.status?.phase).toBe(SandboxPhase.PROVISIONING);
    sup = connectSupervisorDouble(gw);
    await sup.ready;
    await expect.poll(async () => (await gw.raw("admin").getSandbox({ name: "dev", workspaceScope: workspaceScope() })).sandbox?.status?.phase).toBe(SandboxPhase.READY);
  });

  it("a change committed while the supervisor applies its bootstrap is pushed right after the bootstrap is acknowledged", async () => {
    let committed: Promise<unknown> | undefined;
    sup = connectSupervisorDouble(gw, {
      beforeBootstrapResult: async () => {
        // Committed (not waited for) after the bootstrap was built, before its result.
        committed = gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ pypi: "pypi.org" }) });
        await committed;
      },
    });
    await sup.ready;
    await committed;
    // Well before the reconciler's next pass (its first retry of an undelivered operation is later).
    await expect.poll(() => sup!.updates.some((u) => u.component.case === "sandboxConfig" && u.component.value.version === 2), { timeout: 1_500 }).toBe(true);
    await expect
      .poll(async () => (await gw.raw("admin").getSandbox({ name: "dev", workspaceScope: workspaceScope() })).sandbox?.status?.currentPolicyVersion, { timeout: 1_500 })
      .toBe(2);
  });

  it("a bootstrap that carried everything is followed by no update", async () => {
    sup = connectSupervisorDouble(gw);
    await sup.ready;
    await expect.poll(async () => (await gw.raw("admin").getSandbox({ name: "dev", workspaceScope: workspaceScope() })).sandbox?.status?.phase).toBe(SandboxPhase.READY);
    // Long enough for a delivery pass after the bootstrap to have sent something.
    await new Promise((r) => setTimeout(r, 300));
    expect(sup.updates).toEqual([]);
  });

  it("a waited update is pushed, applied and reported as applied", async () => {
    sup = connectSupervisorDouble(gw);
    await sup.ready;
    const res = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ pypi: "pypi.org" }), wait: { timeoutMs: 5_000 } });
    expect(res.completion).toMatchObject({ state: "applied", outcome: "applied" });
    expect(res.completion.target).toMatchObject({ kind: "sandbox-config", policyVersion: 2 });
    expect(sup.updates.some((u) => u.component.case === "sandboxConfig" && u.component.value.version === 2)).toBe(true);
  });

  it.each([
    [Outcome.DEGRADED, "applied", "degraded"],
    [Outcome.FAILED_RETAINED_LAST_KNOWN_GOOD, "failed", "failed-retained-last-known-good"],
    [Outcome.RETAINED_LOCAL_OVERRIDE, "failed", "retained-local-override"],
  ] as const)("outcome %s completes the operation as %s/%s", async (outcome, state, name) => {
    sup = connectSupervisorDouble(gw, { decide: (s) => (s.version >= 2 ? { outcome, message: "reason from the sandbox" } : { outcome: Outcome.APPLIED }) });
    await sup.ready;
    const res = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ npm: "registry.npmjs.org" }), wait: { timeoutMs: 5_000 } });
    expect(res.completion).toMatchObject({ state, outcome: name });
  });

  it("an unchanged policy still gets a fresh acknowledgement", async () => {
    sup = connectSupervisorDouble(gw, { decide: () => ({ outcome: Outcome.APPLIED }) });
    await sup.ready;
    const res = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy(), wait: { timeoutMs: 5_000 } });
    expect(res.policyVersion).toBe(1);
    expect(res.completion.state).toBe("applied");
  });

  it("twenty rapid updates all end terminal and the last one is applied", async () => {
    sup = connectSupervisorDouble(gw);
    await sup.ready;
    const client = gw.sdk();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client.updatePolicy({ sandbox: "dev", policy: policy({ [`r${i}`]: `h${i}.example.com` }), wait: { timeoutMs: 10_000 } })),
    );
    const states = results.map((r) => r.completion.state);
    expect(states.every((s) => s === "applied" || s === "superseded")).toBe(true);
    const last = results.reduce((a, b) => (b.policyVersion > a.policyVersion ? b : a));
    expect(last.completion.state).toBe("applied");
    expect(sup.updates.length).toBeLessThan(20);
  });

  it("an update for a sandbox whose supervisor never acks stays pending", async () => {
    sup = connectSupervisorDouble(gw, { decide: (s) => (s.version >= 2 ? "drop" : { outcome: Outcome.APPLIED }) });
    await sup.ready;
    const res = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ x: "x.example.com" }) });
    await new Promise((r) => setTimeout(r, 300));
    const op = await gw.sdk().getOperation(res.handle);
    expect(op.state).toBe("pending");
    expect(op.target).toMatchObject({ kind: "sandbox-config", policyVersion: 2 });
  });
});
