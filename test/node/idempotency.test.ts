import { describe, expect, it } from "vitest";
import { IdempotencyConflictError, InvalidArgumentError, OpenShellConfigError } from "../../src/index.js";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { rejectionOf, samplePolicy, setup } from "./helpers.js";

describe("idempotency keys", () => {
  it("reusing a key with a different policy throws IdempotencyConflictError and commits nothing new", async () => {
    const { gw, client } = setup();
    const first = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), idempotencyKey: "rollout-7" });
    const err = await rejectionOf(
      client.updatePolicy({ sandbox: "dev", policy: samplePolicy("pypi"), idempotencyKey: "rollout-7" }),
    );
    expect(err).toBeInstanceOf(IdempotencyConflictError);
    expect(err).toBeInstanceOf(OpenShellConfigError);
    expect(err).not.toBeInstanceOf(InvalidArgumentError);
    expect((err as IdempotencyConflictError).code).toBe("idempotency-conflict");
    expect(gw.commits).toEqual([{ sandbox: "dev", dimension: "policy", revision: "2" }]);
    expect(gw.operations().map((o) => o.operationId)).toEqual([first.operation!.operationId]);
    // Not retried: the conflict describes the request, not the network.
    expect(gw.calls.updateConfig).toBe(2);
  });

  it("reusing a key with a different policy while waiting also throws IdempotencyConflictError", async () => {
    const { gw, client } = setup();
    await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), idempotencyKey: "rollout-8" });
    const err = await rejectionOf(
      client.updatePolicy({ sandbox: "dev", policy: samplePolicy("pypi"), idempotencyKey: "rollout-8", wait: { timeoutMs: 500 } }),
    );
    expect(err).toBeInstanceOf(IdempotencyConflictError);
    expect((err as IdempotencyConflictError).code).toBe("idempotency-conflict");
    expect(gw.commits).toHaveLength(1);
  });

  it("reusing a key with the same payload returns the original operation and creates no second revision", async () => {
    const { gw, client } = setup();
    const first = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), idempotencyKey: "rollout-9" });
    const again = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), idempotencyKey: "rollout-9" });
    expect(again.operation!.operationId).toBe(first.operation!.operationId);
    expect(again.policyVersion).toBe(first.policyVersion);
    expect(again.idempotencyKey).toBe("rollout-9");
    expect(again.handle).toEqual(first.handle);
    expect(gw.commits).toHaveLength(1);
    expect(gw.operations()).toHaveLength(1);
  });

  it("replaying a key after the operation completed returns its terminal state, not a new pending one", async () => {
    const { gw, client } = setup();
    const first = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), idempotencyKey: "rollout-10" });
    gw.complete(first.operation!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    const again = await client.updatePolicy({
      sandbox: "dev",
      policy: samplePolicy(),
      idempotencyKey: "rollout-10",
      wait: { timeoutMs: 500 },
    });
    expect(again.completion).toMatchObject({ state: "applied", operationId: first.operation!.operationId });
    expect(gw.commits).toHaveLength(1);
  });

  it("the same key names different operations on different sandboxes", async () => {
    const { gw, client } = setup();
    gw.addSandbox("prod");
    const a = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), idempotencyKey: "shared" });
    const b = await client.updatePolicy({ sandbox: "prod", policy: samplePolicy(), idempotencyKey: "shared" });
    expect(a.operation!.operationId).not.toBe(b.operation!.operationId);
    expect(gw.commits).toHaveLength(2);
  });

  it("updates without a key get distinct fresh UUID keys and distinct revisions", async () => {
    const { gw, client } = setup();
    const a = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const b = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(a.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(a.idempotencyKey).not.toBe(b.idempotencyKey);
    expect(gw.requests.map((r) => r.idempotencyKey)).toEqual([a.idempotencyKey, b.idempotencyKey]);
    expect(gw.commits).toHaveLength(2);
  });
});

describe("local key validation", () => {
  const bad: [string, string][] = [
    ["a key of 257 bytes", "é".repeat(128) + "x"],
    ["a key with a leading space", " key"],
    ["a key with a trailing newline", "key\n"],
    ["an empty key", ""],
  ];
  for (const [name, key] of bad) {
    it(`${name} is rejected with InvalidArgumentError on idempotencyKey before anything is sent`, async () => {
      const { gw, client } = setup();
      const err = await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), idempotencyKey: key }));
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).field).toBe("idempotencyKey");
      expect((err as InvalidArgumentError).code).toBe("invalid-argument");
      expect(gw.calls.updateConfig).toBeUndefined();
    });
  }

  it("a waited update with a bad key is rejected before anything is sent", async () => {
    const { gw, client } = setup();
    const err = await rejectionOf(
      client.updateSettings({ sandbox: "dev", key: "log_level", value: "debug", idempotencyKey: " k ", wait: true }),
    );
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as InvalidArgumentError).field).toBe("idempotencyKey");
    expect(gw.calls.updateConfig).toBeUndefined();
  });

  it("a key of exactly 256 bytes is accepted and sent unchanged", async () => {
    const { gw, client } = setup();
    const key = "é".repeat(128);
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), idempotencyKey: key });
    expect(res.idempotencyKey).toBe(key);
    expect(gw.requests[0]!.idempotencyKey).toBe(key);
  });
});
