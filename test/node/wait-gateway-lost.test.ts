// A wait whose gateway goes away after the commit returned: down (connection refused), answering
// UNAVAILABLE, or cutting its answer short (no gRPC status). The SDK retries by its retry rule,
// then ends the wait with CompletionTimeoutError (reason "unavailable") carrying the ref that
// resumes it; resuming once the gateway is back gives the outcome, and no retry or resume makes a
// second revision.

import { describe, expect, it } from "vitest";
import { Code, ConnectError, createRouterTransport, type Interceptor } from "@connectrpc/connect";
import { CompletionTimeoutError, createConfigClient, isOperationHandle, UnavailableError, type OperationHandle } from "../../src/index.js";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { createFakeGateway } from "../support/fake-gateway.js";
import { FAST, rejectionOf, samplePolicy } from "./helpers.js";

const refused = () =>
  new ConnectError("connect ECONNREFUSED 127.0.0.1:8080", Code.Unavailable, undefined, undefined, Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
const cutShort = () => new ConnectError("protocol error: missing status", Code.Internal);

/** A fake gateway behind a switch: while `failure` is set, every call fails with it before reaching the gateway. */
function gatewayBehindSwitch() {
  const gw = createFakeGateway();
  gw.addSandbox("dev");
  const state: { failure: (() => ConnectError) | undefined; failed: string[] } = { failure: undefined, failed: [] };
  const breaker: Interceptor = (next) => async (req) => {
    if (state.failure !== undefined) {
      state.failed.push(req.method.name);
      throw state.failure();
    }
    return next(req);
  };
  const client = createConfigClient({ ...FAST, transport: createRouterTransport(gw.routes, { transport: { interceptors: [breaker] } }) });
  return { gw, client, state };
}

describe("a wait that loses its gateway after the commit", () => {
  it.each([
    ["is down (connection refused)", refused],
    ["answers with a stream cut short (no gRPC status)", cutShort],
  ])("when the gateway %s, ends with CompletionTimeoutError 'unavailable' after the retry rule's attempts, with the handle that resumes it", async (_, failure) => {
    const { gw, client, state } = gatewayBehindSwitch();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const opId = res.operation!.operationId;
    state.failure = failure;
    const err = await rejectionOf(client.awaitCompletion(res.handle, { timeoutMs: 10_000 }));
    expect(err).toBeInstanceOf(CompletionTimeoutError);
    const e = err as CompletionTimeoutError;
    expect(e.reason).toBe("unavailable");
    expect(e.code).toBe("completion-timeout");
    expect(e.operationId).toBe(opId);
    expect(isOperationHandle(e.ref)).toBe(true);
    expect((e.ref as OperationHandle).operationId).toBe(opId);
    expect(e.message).toMatch(/^stopped waiting: the gateway could not be reached \(.+\); the update remains committed and its operation keeps running$/);
    // The retry rule's attempts, no more: the first try and FAST's 3 retries.
    expect(state.failed).toHaveLength(FAST.retry!.retries! + 1);

    // The gateway is back: the ref resumes the same operation; still one revision.
    state.failure = undefined;
    gw.complete(opId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    const completion = await client.awaitCompletion(e.ref!, { timeoutMs: 2_000 });
    expect(completion).toMatchObject({ state: "applied", operationId: opId });
    expect(gw.commits).toHaveLength(1);
  });

  it("rides out a gateway that is away for less than the retry rule lasts, and returns the outcome", async () => {
    const { gw, client, state } = gatewayBehindSwitch();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const opId = res.operation!.operationId;
    state.failure = cutShort;
    const waiting = client.awaitCompletion(res.handle, { timeoutMs: 10_000 });
    // Back after two failed attempts (of four allowed).
    const back = setInterval(() => {
      if (state.failed.length >= 2) {
        state.failure = undefined;
        gw.complete(opId, { state: State.APPLIED, outcome: Outcome.DEGRADED });
        clearInterval(back);
      }
    }, 1);
    expect(await waiting).toMatchObject({ state: "applied", outcome: "degraded", operationId: opId });
    expect(gw.commits).toHaveLength(1);
  });

  it("an update's own commit that never reaches the gateway fails as the commit (UnavailableError), not as a wait", async () => {
    const { gw, client, state } = gatewayBehindSwitch();
    state.failure = refused;
    const err = await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 5_000 } }));
    expect(err).toBeInstanceOf(UnavailableError);
    expect(err).not.toBeInstanceOf(CompletionTimeoutError);
    expect(gw.commits).toHaveLength(0);
  });

  it("a wait resumed by idempotency key while the gateway is down ends 'unavailable' with that key's ref, and commits nothing twice", async () => {
    const { gw, client, state } = gatewayBehindSwitch();
    const policy = samplePolicy();
    const res = await client.updatePolicy({ sandbox: "dev", policy, idempotencyKey: "lost-1" });
    state.failure = refused;
    const ref = { sandbox: "dev", idempotencyKey: "lost-1", request: { policy } };
    const err = (await rejectionOf(client.awaitCompletion(ref, { timeoutMs: 10_000 }))) as CompletionTimeoutError;
    expect(err).toBeInstanceOf(CompletionTimeoutError);
    expect(err.reason).toBe("unavailable");
    expect(err.ref).toMatchObject({ idempotencyKey: "lost-1" });
    state.failure = undefined;
    gw.complete(res.operation!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    expect(await client.awaitCompletion(err.ref!, { timeoutMs: 2_000 })).toMatchObject({ state: "applied" });
    expect(gw.commits).toHaveLength(1);
  });
});
