import { describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import {
  CompletionTimeoutError,
  HANDLE_KIND,
  isOperationHandle,
  restoreHandle,
  type OperationHandle,
} from "../../src/index.js";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { rejectionOf, samplePolicy, setup } from "./helpers.js";

const SLICE = { serverWaitSliceMs: 50 } as const;

/**
 * Commits an update whose wait ends locally after a server wait timed out; returns the error.
 * The local bound leaves the 50 ms server slice ample room to answer even on a loaded machine.
 */
async function timedOut(idempotencyKey = "deploy-42") {
  const h = setup({}, SLICE);
  const policy = samplePolicy();
  const err = await rejectionOf(
    h.client.updatePolicy({ sandbox: "dev", policy, idempotencyKey, wait: { timeoutMs: 500 } }),
  );
  return { ...h, err, policy, idempotencyKey };
}

describe("a wait that ends locally", () => {
  it("a wait that times out locally throws CompletionTimeoutError with a handle naming the operation learnt from metadata", async () => {
    const { gw, err } = await timedOut();
    expect(err).toBeInstanceOf(CompletionTimeoutError);
    const e = err as CompletionTimeoutError;
    expect(e.code).toBe("completion-timeout");
    expect(e.reason).toBe("deadline");
    const opId = gw.operations()[0]!.operationId;
    // The id can only have come from the DEADLINE_EXCEEDED `operation-id` metadata: no response carried it.
    expect(gw.waitTimeouts.length).toBeGreaterThanOrEqual(1);
    expect(e.operationId).toBe(opId);
    expect(isOperationHandle(e.ref)).toBe(true);
    const handle = e.ref as OperationHandle;
    expect(handle.kind).toBe(HANDLE_KIND);
    expect(handle.operationId).toBe(opId);
    expect(handle.sandbox).toBe("dev");
    expect(handle.idempotencyKey).toBe("deploy-42");
    expect(handle.dimension).toBe("policy");
    expect(gw.operation(opId)!.state).toBe(State.PENDING);
    expect(gw.commits).toHaveLength(1);
  });

  it("a wait that times out on the server is resumed by its handle without a second revision", async () => {
    const { gw, client, err } = await timedOut();
    const opId = gw.operations()[0]!.operationId;
    gw.complete(opId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    const completion = await client.awaitCompletion((err as CompletionTimeoutError).ref!, { timeoutMs: 1_000 });
    expect(completion).toMatchObject({ state: "applied", outcome: "applied", operationId: opId });
    expect(gw.commits).toHaveLength(1);
  });

  it("a wait that times out on the server is resumed by operation id without a second revision", async () => {
    const { gw, client, err } = await timedOut();
    const opId = (err as CompletionTimeoutError).operationId!;
    const waiting = client.awaitCompletion({ operationId: opId }, { timeoutMs: 1_000 });
    setTimeout(() => gw.complete(opId, { state: State.APPLIED, outcome: Outcome.DEGRADED }), 10);
    expect(await waiting).toMatchObject({ state: "applied", outcome: "degraded", operationId: opId });
    expect(gw.commits).toHaveLength(1);
  });

  it("a wait that times out on the server is resumed by idempotency key without a second revision", async () => {
    const { gw, client, policy, idempotencyKey } = await timedOut();
    const opId = gw.operations()[0]!.operationId;
    const requestsBefore = gw.requests.length;
    const waiting = client.awaitCompletion(
      { sandbox: "dev", idempotencyKey, request: { policy } },
      { timeoutMs: 1_000 },
    );
    setTimeout(() => gw.complete(opId, { state: State.FAILED, outcome: Outcome.FAILED_CLOSED, error: "denied" }), 20);
    const completion = await waiting;
    expect(completion).toMatchObject({ state: "failed", outcome: "failed-closed", error: "denied", operationId: opId });
    expect(gw.commits).toHaveLength(1);
    expect(gw.operations()).toHaveLength(1);
    // The resumed wait re-sent the same key: the gateway replayed rather than committed.
    const resumed = gw.requests.slice(requestsBefore);
    expect(resumed.length).toBeGreaterThanOrEqual(1);
    expect(resumed.every((r) => r.idempotencyKey === idempotencyKey)).toBe(true);
  });

  it("a handle survives JSON round trips and resumes the wait from a fresh client", async () => {
    const { gw, err, freshClient } = await timedOut();
    const handle = (err as CompletionTimeoutError).ref as OperationHandle;
    const text = JSON.stringify(handle);
    const parsed = JSON.parse(text) as unknown;
    expect(parsed).toEqual(handle);
    expect(isOperationHandle(parsed)).toBe(true);
    const restored = restoreHandle(text);
    expect(restored).toEqual(handle);

    const opId = handle.operationId!;
    gw.complete(opId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    const otherProcess = freshClient(SLICE);
    const fromRestored = await otherProcess.awaitCompletion(restored, { timeoutMs: 1_000 });
    const fromParsed = await freshClient(SLICE).awaitCompletion(parsed as OperationHandle, { timeoutMs: 1_000 });
    expect(fromRestored).toMatchObject({ state: "applied", operationId: opId });
    expect(fromParsed).toEqual(fromRestored);
    expect(gw.commits).toHaveLength(1);
  });

  it("a handle whose gateway offers no watch resumes by re-sending the request with its key", async () => {
    const h = setup({ watch: false }, SLICE);
    const policy = samplePolicy();
    const err = await rejectionOf(
      h.client.updatePolicy({ sandbox: "dev", policy, idempotencyKey: "k-nowatch", wait: { timeoutMs: 120 } }),
    );
    const handle = (err as CompletionTimeoutError).ref as OperationHandle;
    const opId = h.gw.operations()[0]!.operationId;
    setTimeout(() => h.gw.complete(opId, { state: State.APPLIED, outcome: Outcome.APPLIED }), 20);
    const completion = await h.freshClient(SLICE).awaitCompletion(restoreHandle(JSON.stringify(handle)), {
      timeoutMs: 1_000,
    });
    expect(completion).toMatchObject({ state: "applied", operationId: opId });
    expect(h.gw.commits).toHaveLength(1);
    expect(h.gw.requests.every((r) => r.idempotencyKey === "k-nowatch")).toBe(true);
  });

  it("a restored handle that was tampered with is rejected with the offending field", () => {
    expect(() => restoreHandle("{not json")).toThrow(expect.objectContaining({ code: "invalid-argument", field: "handle" }));
    expect(() => restoreHandle({ kind: "other" })).toThrow(expect.objectContaining({ field: "handle.kind" }));
    expect(() => restoreHandle({ kind: HANDLE_KIND, sandbox: "dev", idempotencyKey: "", request: {} })).toThrow(
      expect.objectContaining({ field: "handle.idempotencyKey" }),
    );
  });
});

describe("server-side wait slices", () => {
  it("a long wait on a gateway without the watch is split into several server-side waits no longer than the slice, and still returns the completion", async () => {
    const { gw, client } = setup({ watch: false }, { serverWaitSliceMs: 30 });
    const waiting = client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 2_000 } });
    setTimeout(() => gw.complete(gw.operations()[0]!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED }), 150);
    const res = await waiting;
    expect(res.completion.state).toBe("applied");
    expect(gw.waitTimeouts.length).toBeGreaterThan(1);
    for (const ms of gw.waitTimeouts) {
      expect(ms).toBeGreaterThan(0);
      expect(ms).toBeLessThanOrEqual(30);
    }
    expect(gw.commits).toHaveLength(1);
    expect(new Set(gw.requests.map((r) => r.idempotencyKey)).size).toBe(1);
  });

  it("a zero or fractional slice never reaches the gateway as a zero wait_timeout", async () => {
    for (const serverWaitSliceMs of [0, 0.5]) {
      const { gw, client } = setup({}, { serverWaitSliceMs });
      const waiting = client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 2_000 } });
      setTimeout(() => gw.complete(gw.operations()[0]!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED }), 40);
      const res = await waiting;
      expect(res.completion.state).toBe("applied");
      expect(gw.waitTimeouts.length).toBeGreaterThan(0);
      expect(gw.waitTimeouts.every((ms) => ms >= 1)).toBe(true);
      expect(gw.requests.every((r) => r.waitTimeout === undefined || r.waitTimeout.seconds > 0n || r.waitTimeout.nanos > 0)).toBe(true);
    }
  });
});

describe("a wait shorter than one server-side slice", () => {
  it("still learns the operation id, because the server wait ends before the local deadline", async () => {
    const { gw, client } = setup({ watch: false }, { serverWaitSliceMs: 50_000 });
    const err = await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 600 } }));
    expect(err).toBeInstanceOf(CompletionTimeoutError);
    const e = err as CompletionTimeoutError;
    expect(gw.waitTimeouts[0]).toBeLessThan(600);
    expect(e.operationId).toBe(gw.operations()[0]!.operationId);
    expect(e.message).toMatch(/remains committed/);
  });

  it("says the commit is uncertain when the gateway never answered", async () => {
    const { gw, client } = setup({}, { retry: { retries: 1_000, minDelayMs: 5, maxDelayMs: 10 } });
    gw.inject({ method: "updateConfig", code: Code.Unavailable }, 1_000);
    const err = await rejectionOf(
      client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 100 } }),
    );
    expect(err).toBeInstanceOf(CompletionTimeoutError);
    expect((err as CompletionTimeoutError).operationId).toBeUndefined();
    expect((err as Error).message).toMatch(/may not have been committed/);
  });
});
