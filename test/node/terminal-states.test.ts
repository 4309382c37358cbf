import { describe, expect, it } from "vitest";
import type { Completion, OperationStatus } from "../../src/index.js";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import type { Resolution } from "../support/fake-gateway.js";
import { samplePolicy, setup, until } from "./helpers.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** The fields every operation-tracked status must carry, whatever its state. */
function expectTracked(status: OperationStatus, sandboxId: string, policyVersion: number): void {
  expect(status.operationId).toMatch(UUID);
  expect(status.sandboxId).toBe(sandboxId);
  expect(status.component).toBe("sandbox-config");
  expect(status.tracking).toBe("operation");
  expect(status.target).toEqual({
    kind: "sandbox-config",
    configRevision: BigInt(policyVersion) * 1000n,
    policyVersion,
    policySource: "unspecified",
    globalPolicyVersion: 0,
    settingsRevision: 0n,
  });
  if (status.target?.kind !== "sandbox-config") throw new Error("unreachable");
  expect(typeof status.target.configRevision).toBe("bigint");
  expect(typeof status.target.settingsRevision).toBe("bigint");
  expect(typeof status.target.policyVersion).toBe("number");
  expect(status.createdAt).toBeInstanceOf(Date);
  expect(status.updatedAt).toBeInstanceOf(Date);
  expect(Math.abs(status.createdAt!.getTime() - Date.now())).toBeLessThan(60_000);
}

function expectCompletedNow(c: Completion): void {
  expect(c.completedAt).toBeInstanceOf(Date);
  expect(Math.abs(c.completedAt!.getTime() - Date.now())).toBeLessThan(60_000);
  expect(c.completedAt!.getTime()).toBeGreaterThanOrEqual(c.createdAt!.getTime());
}

const resolutions: [string, Resolution, Partial<Completion>][] = [
  ["applied", { state: State.APPLIED, outcome: Outcome.APPLIED }, { state: "applied", outcome: "applied", error: undefined }],
  ["degraded", { state: State.APPLIED, outcome: Outcome.DEGRADED }, { state: "applied", outcome: "degraded" }],
  [
    "ignored as a duplicate",
    { state: State.APPLIED, outcome: Outcome.IGNORED_DUPLICATE },
    { state: "applied", outcome: "ignored-duplicate" },
  ],
  [
    "failed while keeping the last known good policy",
    { state: State.FAILED, outcome: Outcome.FAILED_RETAINED_LAST_KNOWN_GOOD, error: "network_policies.github: bad host" },
    { state: "failed", outcome: "failed-retained-last-known-good", error: "network_policies.github: bad host" },
  ],
];

describe("terminal states through updatePolicy with wait", () => {
  for (const [name, resolution, expected] of resolutions) {
    it(`an update the supervisor reports as ${name} returns that completion with the committed revision`, async () => {
      const { gw, client } = setup({ autoComplete: () => ({ ...resolution, delayMs: 10 }) });
      const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: true });
      expect(res.completion).toMatchObject(expected);
      expectTracked(res.completion, "sbx-1-dev", 2);
      expectCompletedNow(res.completion);
      expect(res.completion.operationId).toBe(gw.operations()[0]!.operationId);
      expect(res.operation?.operationId).toBe(res.completion.operationId);
      expect(res.handle.operationId).toBe(res.completion.operationId);
      expect(res.policyVersion).toBe(2);
      expect(gw.commits).toEqual([{ sandbox: "dev", dimension: "policy", revision: "2" }]);
    });
  }

  it("a pending update superseded by a newer one completes as superseded with outcome ignored-stale", async () => {
    const { gw, client } = setup();
    const first = client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 2_000 } });
    await until(() => gw.operations().length === 1);
    const second = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy("pypi") });
    const res = await first;
    expect(res.completion.state).toBe("superseded");
    expect(res.completion.outcome).toBe("ignored-stale");
    expect(res.completion.error).toBe("a newer desired revision replaced this update before application");
    expectTracked(res.completion, "sbx-1-dev", 2);
    expectCompletedNow(res.completion);
    expect(res.completion.operationId).not.toBe(second.operation!.operationId);
    expect(second.operation!.state).toBe("pending");
    expect(second.policyVersion).toBe(3);
  });

  it("an update to a stopped sandbox is inactive at commit and returns without waiting for a supervisor", async () => {
    const { gw, client } = setup();
    gw.setPhase("dev", "stopped");
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 1_000 } });
    expect(res.completion.state).toBe("inactive");
    expectTracked(res.completion, "sbx-1-dev", 2);
    expectCompletedNow(res.completion);
    expect(gw.calls.updateConfig).toBe(1);
  });

  it("an update to a deleting sandbox is cancelled with the gateway's explanation", async () => {
    const { gw, client } = setup();
    gw.setPhase("dev", "deleting");
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: true });
    expect(res.completion.state).toBe("cancelled");
    expect(res.completion.error).toBe("sandbox is deleting");
    expectTracked(res.completion, "sbx-1-dev", 2);
    expectCompletedNow(res.completion);
  });
});

describe("terminal states through awaitCompletion", () => {
  for (const [name, resolution, expected] of resolutions) {
    it(`awaiting a committed update's handle returns ${name} once the gateway completes it`, async () => {
      const { gw, client } = setup();
      const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
      expect(res.operation?.state).toBe("pending");
      const waiting = client.awaitCompletion(res.handle, { timeoutMs: 2_000 });
      setTimeout(() => gw.complete(res.operation!.operationId, resolution), 10);
      const completion = await waiting;
      expect(completion).toMatchObject({ ...expected, operationId: res.operation!.operationId });
      expectTracked(completion, "sbx-1-dev", 2);
      expectCompletedNow(completion);
    });
  }

  it("awaiting a superseded update returns superseded with outcome ignored-stale", async () => {
    const { client } = setup();
    const first = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const waiting = client.awaitCompletion({ operationId: first.operation!.operationId }, { timeoutMs: 2_000 });
    await client.updatePolicy({ sandbox: "dev", policy: samplePolicy("pypi") });
    const completion = await waiting;
    expect(completion).toMatchObject({ state: "superseded", outcome: "ignored-stale" });
    expectTracked(completion, "sbx-1-dev", 2);
    expectCompletedNow(completion);
  });

  it("awaiting updates to stopped and deleting sandboxes returns inactive and cancelled", async () => {
    const { gw, client } = setup();
    gw.addSandbox("stopped", "stopped");
    gw.addSandbox("gone", "deleting");
    const a = await client.updatePolicy({ sandbox: "stopped", policy: samplePolicy() });
    const b = await client.updatePolicy({ sandbox: "gone", policy: samplePolicy() });
    const inactive = await client.awaitCompletion(a.handle, { timeoutMs: 1_000 });
    const cancelled = await client.awaitCompletion(b.handle, { timeoutMs: 1_000 });
    expect(inactive.state).toBe("inactive");
    expect(inactive.sandboxId).toBe("sbx-2-stopped");
    expect(cancelled.state).toBe("cancelled");
    expect(cancelled.sandboxId).toBe("sbx-3-gone");
    expectCompletedNow(inactive);
    expectCompletedNow(cancelled);
  });
});

describe("timestamps of a pending operation", () => {
  it("getOperation of a pending operation leaves completedAt undefined rather than the epoch", async () => {
    const { client } = setup();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const status = await client.getOperation(res.handle);
    expect(status.state).toBe("pending");
    expect(status.completedAt).toBeUndefined();
    expect("completedAt" in status && status.completedAt instanceof Date).toBe(false);
    expect(status.outcome).toBe("unspecified");
    expect(status.error).toBeUndefined();
    expectTracked(status, "sbx-1-dev", 2);
  });

  it("the same operation read after completion carries a completedAt no earlier than its creation", async () => {
    const { gw, client } = setup();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    gw.complete(res.operation!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    const status = await client.getOperation({ operationId: res.operation!.operationId });
    expect(status.state).toBe("applied");
    if (status.state === "pending") throw new Error("unreachable");
    expectCompletedNow(status);
    expect(status.updatedAt!.getTime()).toBe(status.completedAt!.getTime());
  });
});
