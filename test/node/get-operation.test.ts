import { describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { NotFoundError, restoreHandle } from "../../src/index.js";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { rejectionOf, samplePolicy, setup } from "./helpers.js";

describe("getOperation", () => {
  it("reads an operation by its id without waiting", async () => {
    const { gw, client } = setup();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const opId = res.operation!.operationId;
    const pending = await client.getOperation({ operationId: opId });
    expect(pending).toMatchObject({ state: "pending", operationId: opId, sandboxId: "sbx-1-dev" });
    gw.complete(opId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    expect(await client.getOperation({ operationId: opId })).toMatchObject({ state: "applied", outcome: "applied" });
    expect(gw.calls.getConfigUpdateOperation).toBe(2);
    expect(gw.calls.updateConfig).toBe(1);
    expect(gw.calls.watchConfigUpdateOperations).toBeUndefined();
  });

  it("reads an operation by its handle, also after a JSON round trip", async () => {
    const { gw, client } = setup();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    gw.complete(res.operation!.operationId, { state: State.FAILED, outcome: Outcome.RETAINED_LOCAL_OVERRIDE, error: "local override" });
    const byHandle = await client.getOperation(res.handle);
    const byRestored = await client.getOperation(restoreHandle(JSON.stringify(res.handle)));
    expect(byHandle).toMatchObject({ state: "failed", outcome: "retained-local-override", error: "local override" });
    expect(byRestored).toEqual(byHandle);
    expect(gw.calls.updateConfig).toBe(1);
  });

  it("reads an operation by idempotency key by replaying the commit, never creating a revision", async () => {
    const { gw, client } = setup();
    const policy = samplePolicy();
    const res = await client.updatePolicy({ sandbox: "dev", policy, idempotencyKey: "ci-run-77" });
    const ref = { sandbox: "dev", idempotencyKey: "ci-run-77", request: { policy } } as const;
    expect(await client.getOperation(ref)).toMatchObject({ state: "pending", operationId: res.operation!.operationId });
    gw.complete(res.operation!.operationId, { state: State.APPLIED, outcome: Outcome.DEGRADED });
    expect(await client.getOperation(ref)).toMatchObject({ state: "applied", outcome: "degraded" });
    expect(gw.commits).toHaveLength(1);
    expect(gw.operations()).toHaveLength(1);
    expect(gw.calls.updateConfig).toBe(3);
    // The replays asked for no wait: a status read must return at once.
    expect(gw.waitTimeouts).toEqual([]);
    expect(gw.requests.every((r) => r.idempotencyKey === "ci-run-77")).toBe(true);
  });

  it("reads a settings operation by idempotency key with the same change", async () => {
    const { gw, client } = setup();
    const res = await client.updateSettings({ sandbox: "dev", key: "mode", value: 3, idempotencyKey: "s-1" });
    const status = await client.getOperation({ sandbox: "dev", idempotencyKey: "s-1", request: { key: "mode", value: 3n } });
    expect(status.operationId).toBe(res.operation!.operationId);
    expect(gw.commits).toHaveLength(1);
  });

  it("an idempotency key ref with a different change is an IdempotencyConflictError, not a new revision", async () => {
    const { gw, client } = setup();
    await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), idempotencyKey: "ci-run-78" });
    const ref = { sandbox: "dev", idempotencyKey: "ci-run-78", request: { policy: samplePolicy("other") } };
    await expect(client.getOperation(ref)).rejects.toMatchObject({ code: "idempotency-conflict" });
    expect(gw.commits).toHaveLength(1);
  });

  it("an unknown operation id is NotFoundError", async () => {
    const { client } = setup();
    const err = await rejectionOf(client.getOperation({ operationId: "00000000-0000-4000-8000-000000000000" }));
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).message).toBe("update operation not found");
  });

  it("an ABORTED read (the record changed while being read) is retried", async () => {
    const { gw, client } = setup();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    gw.inject({ method: "getConfigUpdateOperation", code: Code.Aborted, message: "update operation changed concurrently; retry the operation query" });
    expect((await client.getOperation(res.handle)).state).toBe("pending");
    expect(gw.calls.getConfigUpdateOperation).toBe(2);
  });

  it("an invalid ref is rejected with InvalidArgumentError on ref before any call", async () => {
    const { gw, client } = setup();
    await expect(client.getOperation({} as never)).rejects.toMatchObject({ code: "invalid-argument", field: "ref" });
    expect(gw.calls).toEqual({});
  });
});
