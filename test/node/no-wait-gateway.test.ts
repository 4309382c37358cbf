import { describe, expect, it } from "vitest";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import type { ProgressEvent } from "../../src/index.js";
import { samplePolicy, setup, until } from "./helpers.js";

// A gateway that returns operations but ignores wait_mode answers a waited request at once with
// PENDING. The SDK must then follow the operation by other means.

describe("a gateway that ignores wait_mode", () => {
  it("a waited update falls back to the watch stream and returns the completion", async () => {
    const { gw, client } = setup({ mode: "no-wait" });
    const events: ProgressEvent[] = [];
    const waiting = client.updatePolicy({
      sandbox: "dev",
      policy: samplePolicy(),
      wait: { timeoutMs: 2_000, onProgress: (e) => events.push(e) },
    });
    await until(() => (gw.calls.watchConfigUpdateOperations ?? 0) >= 1);
    const opId = gw.operations()[0]!.operationId;
    gw.complete(opId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    const res = await waiting;
    expect(res.completion).toMatchObject({ state: "applied", operationId: opId });
    expect(res.operation?.state).toBe("pending");
    expect(gw.calls.updateConfig).toBe(1);
    expect(gw.waitTimeouts).toEqual([]);
    expect(gw.calls.getConfigUpdateOperation).toBeUndefined();
    expect(events.map((e) => (e.type === "state" ? e.status.state : e.type))).toEqual(["pending", "applied"]);
  });

  it("without the watch extension a waited update polls the operation with capped backoff until it completes", async () => {
    const { gw, client } = setup({ mode: "no-wait", watch: false }, { pollDelayMs: { min: 1, max: 2 } });
    const states: string[] = [];
    const waiting = client.updatePolicy({
      sandbox: "dev",
      policy: samplePolicy(),
      wait: {
        timeoutMs: 3_000,
        onProgress: (e) => {
          if (e.type === "state") states.push(e.status.state);
        },
      },
    });
    await until(() => (gw.calls.getConfigUpdateOperation ?? 0) >= 1);
    const opId = gw.operations()[0]!.operationId;
    // Fifteen polls: a 2 ms cap gets there at once, even on a loaded machine; uncapped doubling
    // from 1 ms would poll only 11 times in these 2 s, and the wait would fail here.
    await until(() => (gw.calls.getConfigUpdateOperation ?? 0) >= 15, 2_000);
    gw.complete(opId, { state: State.FAILED, outcome: Outcome.UNSUPPORTED, error: "tls mode not supported" });
    const res = await waiting;
    expect(res.completion).toMatchObject({ state: "failed", outcome: "unsupported", error: "tls mode not supported" });
    expect(gw.calls.watchConfigUpdateOperations).toBe(1);
    expect(gw.calls.getConfigUpdateOperation).toBeGreaterThan(1);
    expect(gw.calls.getConfigUpdateOperation).toBeGreaterThanOrEqual(15);
    expect(gw.commits).toHaveLength(1);
    // Every poll reads the operation, but progress reports each state once.
    expect(states).toEqual(["pending", "failed"]);
  });

  it("a client that learnt the watch is unimplemented does not ask for it again", async () => {
    const { gw, client } = setup({ mode: "no-wait", watch: false }, { pollDelayMs: { min: 1, max: 5 } });
    const a = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    gw.complete(a.operation!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    await client.awaitCompletion({ operationId: a.operation!.operationId }, { timeoutMs: 1_000 });
    const b = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy("pypi") });
    gw.complete(b.operation!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    const second = await client.awaitCompletion({ operationId: b.operation!.operationId }, { timeoutMs: 1_000 });
    expect(second.state).toBe("applied");
    expect(gw.calls.watchConfigUpdateOperations).toBe(1);
    expect(gw.calls.getConfigUpdateOperation).toBe(2);
  });
});
