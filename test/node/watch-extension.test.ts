import { describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { NotFoundError, type ProgressEvent } from "../../src/index.js";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { rejectionOf, samplePolicy, setup, until } from "./helpers.js";

function stateNames(events: ProgressEvent[]): string[] {
  return events.flatMap((e) => (e.type === "state" ? [e.status.state] : []));
}

describe("the WatchConfigUpdateOperations extension", () => {
  it("awaiting by operation id uses the watch stream and never polls", async () => {
    const { gw, client } = setup();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const opId = res.operation!.operationId;
    const events: ProgressEvent[] = [];
    const waiting = client.awaitCompletion({ operationId: opId }, { timeoutMs: 2_000, onProgress: (e) => events.push(e) });
    await until(() => events.length >= 1);
    gw.complete(opId, { state: State.APPLIED, outcome: Outcome.DEGRADED });
    const completion = await waiting;
    expect(completion).toMatchObject({ state: "applied", outcome: "degraded", operationId: opId });
    expect(gw.calls.watchConfigUpdateOperations).toBeGreaterThanOrEqual(1);
    expect(gw.calls.getConfigUpdateOperation).toBeUndefined();
    expect(gw.calls.updateConfig).toBe(1);
  });

  it("onProgress receives a state event with pending and then the terminal state", async () => {
    const { gw, client } = setup();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const opId = res.operation!.operationId;
    const events: ProgressEvent[] = [];
    const waiting = client.awaitCompletion({ operationId: opId }, { timeoutMs: 2_000, onProgress: (e) => events.push(e) });
    await until(() => events.length >= 1);
    expect(events[0]).toMatchObject({ type: "state", status: { state: "pending", operationId: opId } });
    gw.complete(opId, { state: State.FAILED, outcome: Outcome.FAILED_CLOSED, error: "denied by admission" });
    const completion = await waiting;
    expect(stateNames(events)).toEqual(["pending", "failed"]);
    const last = events.at(-1)!;
    expect(last.type === "state" && last.status).toEqual(completion);
    expect(completion.error).toBe("denied by admission");
  });

  it("an operation already terminal when the watch starts returns from its first message", async () => {
    const { gw, client } = setup();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    gw.complete(res.operation!.operationId, { state: State.APPLIED, outcome: Outcome.IGNORED_DUPLICATE });
    const events: ProgressEvent[] = [];
    const completion = await client.awaitCompletion(res.handle, { timeoutMs: 1_000, onProgress: (e) => events.push(e) });
    expect(completion.outcome).toBe("ignored-duplicate");
    expect(stateNames(events)).toEqual(["applied"]);
    expect(gw.calls.updateConfig).toBe(1);
  });

  it("without the watch extension awaiting by operation id falls back to polling after UNIMPLEMENTED", async () => {
    const { gw, client } = setup({ watch: false });
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const opId = res.operation!.operationId;
    const events: ProgressEvent[] = [];
    const waiting = client.awaitCompletion({ operationId: opId }, { timeoutMs: 2_000, onProgress: (e) => events.push(e) });
    await until(() => (gw.calls.getConfigUpdateOperation ?? 0) >= 2);
    gw.complete(opId, { state: State.CANCELLED, error: "sandbox no longer exists" });
    const completion = await waiting;
    expect(completion).toMatchObject({ state: "cancelled", error: "sandbox no longer exists" });
    expect(gw.calls.watchConfigUpdateOperations).toBe(1);
    expect(gw.calls.getConfigUpdateOperation).toBeGreaterThanOrEqual(2);
    expect(stateNames(events)).toEqual(["pending", "cancelled"]);
  });

  it("a watch stream broken by UNAVAILABLE is reopened and still delivers the completion", async () => {
    const { gw, client } = setup();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    gw.inject({ method: "watchConfigUpdateOperations", code: Code.Unavailable }, 2);
    const events: ProgressEvent[] = [];
    const waiting = client.awaitCompletion(res.handle, { timeoutMs: 2_000, onProgress: (e) => events.push(e) });
    await until(() => (gw.calls.watchConfigUpdateOperations ?? 0) >= 3);
    gw.complete(res.operation!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    expect((await waiting).state).toBe("applied");
    expect(events.filter((e) => e.type === "retry")).toHaveLength(2);
    expect(gw.calls.getConfigUpdateOperation).toBeUndefined();
  });

  it("watching an operation id the gateway does not know throws NotFoundError", async () => {
    const { gw, client } = setup();
    const err = await rejectionOf(
      client.awaitCompletion({ operationId: "00000000-0000-4000-8000-000000000000" }, { timeoutMs: 1_000 }),
    );
    expect(err).toBeInstanceOf(NotFoundError);
    expect(gw.calls.watchConfigUpdateOperations).toBe(1);
  });

  it("an awaitCompletion ref with neither an operation id nor a request is rejected without a call", async () => {
    const { gw, client } = setup();
    await expect(client.awaitCompletion({ operationId: "" })).rejects.toMatchObject({ code: "invalid-argument", field: "ref" });
    expect(gw.calls).toEqual({});
  });
});
