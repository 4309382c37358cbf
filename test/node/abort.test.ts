import { describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { CompletionTimeoutError, isOperationHandle, type OperationHandle } from "../../src/index.js";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { rejectionOf, samplePolicy, setup, until } from "./helpers.js";

describe("an already-aborted signal", () => {
  it("an update with an already-aborted signal throws the abort reason before any request", async () => {
    const { gw, client } = setup();
    const reason = new Error("user pressed ctrl-c");
    const signal = AbortSignal.abort(reason);
    expect(await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), signal }))).toBe(reason);
    expect(await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), signal, wait: true }))).toBe(reason);
    expect(await rejectionOf(client.updateSettings({ sandbox: "dev", key: "k", value: 1, signal }))).toBe(reason);
    expect(gw.calls).toEqual({});
  });

  it("awaitCompletion and getOperation with an already-aborted signal send nothing", async () => {
    const { gw, client } = setup();
    const signal = AbortSignal.abort(new Error("stop"));
    await expect(client.awaitCompletion({ operationId: "op-1" }, { signal })).rejects.toThrow("stop");
    await expect(client.getOperation({ operationId: "op-1" }, { signal })).rejects.toThrow("stop");
    expect(gw.calls).toEqual({});
  });
});

describe("aborting a wait", () => {
  it("aborting during a waited update throws CompletionTimeoutError reason aborted, and the operation stays pending and resumable", async () => {
    const { gw, client } = setup();
    const controller = new AbortController();
    const policy = samplePolicy();
    const waiting = client.updatePolicy({
      sandbox: "dev",
      policy,
      idempotencyKey: "abort-me",
      signal: controller.signal,
      wait: { timeoutMs: 5_000 },
    });
    await until(() => gw.operations().length === 1);
    const reason = new Error("shutting down");
    controller.abort(reason);
    const started = Date.now();
    const err = await rejectionOf(waiting);
    expect(Date.now() - started).toBeLessThan(500);
    expect(err).toBeInstanceOf(CompletionTimeoutError);
    const e = err as CompletionTimeoutError;
    expect(e.reason).toBe("aborted");
    expect(e.code).toBe("completion-timeout");
    expect(e.cause).toBe(reason);
    const opId = gw.operations()[0]!.operationId;
    expect(gw.operation(opId)!.state).toBe(State.PENDING);

    // The ref resumes the wait: it carries the committed request and its key.
    expect(isOperationHandle(e.ref)).toBe(true);
    const handle = e.ref as OperationHandle;
    expect(handle.idempotencyKey).toBe("abort-me");
    const resumed = client.awaitCompletion(handle, { timeoutMs: 1_000 });
    setTimeout(() => gw.complete(opId, { state: State.APPLIED, outcome: Outcome.APPLIED }), 10);
    expect(await resumed).toMatchObject({ state: "applied", operationId: opId });
    expect(gw.commits).toHaveLength(1);
  });

  it("aborting awaitCompletion ends only the wait, with reason aborted and the same ref", async () => {
    const { gw, client } = setup();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const controller = new AbortController();
    const waiting = client.awaitCompletion(res.handle, { signal: controller.signal, timeoutMs: 5_000 });
    setTimeout(() => controller.abort(), 30);
    const err = await rejectionOf(waiting);
    expect(err).toBeInstanceOf(CompletionTimeoutError);
    expect((err as CompletionTimeoutError).reason).toBe("aborted");
    expect((err as CompletionTimeoutError).ref).toBe(res.handle);
    expect((err as CompletionTimeoutError).operationId).toBe(res.operation!.operationId);
    expect(gw.operation(res.operation!.operationId)!.state).toBe(State.PENDING);
  });

  it("the signal given in wait options aborts the wait the same way as the update's signal", async () => {
    const { gw, client } = setup();
    const controller = new AbortController();
    const waiting = client.updatePolicy({
      sandbox: "dev",
      policy: samplePolicy(),
      wait: { timeoutMs: 5_000, signal: controller.signal },
    });
    await until(() => gw.operations().length === 1);
    controller.abort();
    const err = await rejectionOf(waiting);
    expect((err as CompletionTimeoutError).reason).toBe("aborted");
    expect(gw.operations()[0]!.state).toBe(State.PENDING);
  });
});

describe("aborting a retry", () => {
  it("aborting during a retry backoff rejects promptly instead of sleeping out the delay", async () => {
    const { gw, client } = setup({}, { retry: { retries: 10, minDelayMs: 5_000, maxDelayMs: 10_000 } });
    gw.inject({ method: "updateConfig", code: Code.Unavailable }, 10);
    const controller = new AbortController();
    const reason = new Error("give up");
    setTimeout(() => controller.abort(reason), 50);
    const started = Date.now();
    const err = await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), signal: controller.signal }));
    const elapsed = Date.now() - started;
    expect(elapsed).toBeLessThan(1_000);
    expect(err).toBe(reason);
    expect(gw.calls.updateConfig).toBeLessThanOrEqual(2);
    expect(gw.commits).toHaveLength(0);
  });

  it("aborting a waited update during a retry backoff ends the wait as aborted", async () => {
    const { gw, client } = setup({}, { retry: { retries: 10, minDelayMs: 5_000, maxDelayMs: 10_000 } });
    gw.inject({ method: "updateConfig", code: Code.Unavailable }, 10);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    const err = await rejectionOf(
      client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), signal: controller.signal, wait: { timeoutMs: 30_000 } }),
    );
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(err).toBeInstanceOf(CompletionTimeoutError);
    expect((err as CompletionTimeoutError).reason).toBe("aborted");
    expect(gw.calls.updateConfig).toBeLessThanOrEqual(2);
  });
});
