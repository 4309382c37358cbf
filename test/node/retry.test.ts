import { describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import {
  ConflictError,
  InvalidArgumentError,
  NotFoundError,
  OpenShellConfigError,
  PermissionDeniedError,
  ResourceExhaustedError,
  UnauthenticatedError,
  UnavailableError,
  FailedPreconditionError,
  type ProgressEvent,
} from "../../src/index.js";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { rejectionOf, samplePolicy, setup } from "./helpers.js";

describe("retrying transient failures", () => {
  it("a response lost after the commit is retried with the same key and creates no second revision", async () => {
    const { gw, client } = setup();
    gw.inject({ method: "updateConfig", code: Code.Unavailable, afterCommit: true });
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(gw.calls.updateConfig).toBe(2);
    expect(gw.commits).toHaveLength(1);
    expect(gw.operations()).toHaveLength(1);
    expect(res.operation!.operationId).toBe(gw.operations()[0]!.operationId);
    expect(res.policyVersion).toBe(2);
    const keys = gw.requests.map((r) => r.idempotencyKey);
    expect(keys).toHaveLength(2);
    expect(keys[0]).not.toBe("");
    expect(new Set(keys).size).toBe(1);
    expect(res.idempotencyKey).toBe(keys[0]);
  });

  it("a waited update whose response is lost twice after the commit still returns the one operation's completion", async () => {
    const { gw, client } = setup({ autoComplete: () => ({ state: State.APPLIED, outcome: Outcome.APPLIED, delayMs: 5 }) });
    gw.inject({ method: "updateConfig", code: Code.Unavailable, afterCommit: true }, 2);
    const events: ProgressEvent[] = [];
    const res = await client.updatePolicy({
      sandbox: "dev",
      policy: samplePolicy(),
      idempotencyKey: "lost-twice",
      wait: { timeoutMs: 2_000, onProgress: (e) => events.push(e) },
    });
    expect(res.completion).toMatchObject({ state: "applied", operationId: gw.operations()[0]!.operationId });
    expect(gw.commits).toHaveLength(1);
    expect(gw.requests.every((r) => r.idempotencyKey === "lost-twice")).toBe(true);
    expect(gw.calls.updateConfig).toBe(3);
    const retries = events.filter((e) => e.type === "retry");
    expect(retries.map((e) => (e.type === "retry" ? e.attempt : 0))).toEqual([1, 2]);
  });

  it("UNAVAILABLE before the commit is retried until it succeeds", async () => {
    const { gw, client } = setup();
    gw.inject({ method: "updateConfig", code: Code.Unavailable }, 3);
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(gw.calls.updateConfig).toBe(4);
    expect(res.operation?.state).toBe("pending");
    expect(gw.commits).toHaveLength(1);
  });

  it("UNAVAILABLE that outlasts the retries surfaces as UnavailableError after retries + 1 attempts", async () => {
    const { gw, client } = setup({}, { retry: { retries: 2, minDelayMs: 1, maxDelayMs: 2 } });
    gw.inject({ method: "updateConfig", code: Code.Unavailable, message: "gateway is shutting down" }, 5);
    const err = await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
    expect(err).toBeInstanceOf(UnavailableError);
    expect((err as UnavailableError).code).toBe("unavailable");
    expect((err as UnavailableError).message).toBe("gateway is shutting down");
    expect(gw.calls.updateConfig).toBe(3);
    expect(gw.commits).toHaveLength(0);
  });

  it("a transient failure while polling an operation is retried", async () => {
    const { gw, client } = setup({ watch: false });
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    gw.complete(res.operation!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED });
    gw.inject({ method: "getConfigUpdateOperation", code: Code.Unavailable }, 2);
    const status = await client.getOperation({ operationId: res.operation!.operationId });
    expect(status.state).toBe("applied");
    expect(gw.calls.getConfigUpdateOperation).toBe(3);
  });
});

describe("errors that describe the request are not retried", () => {
  const cases: [string, Code, abstract new (...args: never[]) => OpenShellConfigError, string][] = [
    ["INVALID_ARGUMENT", Code.InvalidArgument, InvalidArgumentError, "invalid-argument"],
    ["NOT_FOUND", Code.NotFound, NotFoundError, "not-found"],
    ["UNAUTHENTICATED", Code.Unauthenticated, UnauthenticatedError, "unauthenticated"],
    ["PERMISSION_DENIED", Code.PermissionDenied, PermissionDeniedError, "permission-denied"],
    ["ABORTED", Code.Aborted, ConflictError, "conflict"],
    ["FAILED_PRECONDITION", Code.FailedPrecondition, FailedPreconditionError, "failed-precondition"],
    ["RESOURCE_EXHAUSTED", Code.ResourceExhausted, ResourceExhaustedError, "resource-exhausted"],
  ];
  for (const [name, code, ErrorClass, errorCode] of cases) {
    it(`${name} from UpdateConfig is sent once and surfaces as ${ErrorClass.name}`, async () => {
      const { gw, client } = setup();
      gw.inject({ method: "updateConfig", code });
      const err = await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy() }));
      expect(err).toBeInstanceOf(ErrorClass);
      expect((err as OpenShellConfigError).code).toBe(errorCode);
      expect((err as OpenShellConfigError).connectCode).toBe(code);
      expect(gw.calls.updateConfig).toBe(1);
      expect(gw.commits).toHaveLength(0);
    });
  }

  it("a non-retryable error during a waited update is sent once and is not reported as a timeout", async () => {
    const { gw, client } = setup();
    gw.inject({ method: "updateConfig", code: Code.PermissionDenied });
    const err = await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 1_000 } }));
    expect(err).toBeInstanceOf(PermissionDeniedError);
    expect(gw.calls.updateConfig).toBe(1);
  });

  it("an unknown sandbox is NotFoundError after a single request", async () => {
    const { gw, client } = setup();
    const err = await rejectionOf(client.updatePolicy({ sandbox: "nope", policy: samplePolicy(), wait: true }));
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).message).toContain("sandbox nope not found");
    expect(gw.calls.updateConfig).toBe(1);
  });

  it("a stale expectedResourceVersion is a ConflictError and commits nothing", async () => {
    const { gw, client } = setup();
    const err = await rejectionOf(
      client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), expectedResourceVersion: 99n }),
    );
    expect(err).toBeInstanceOf(ConflictError);
    expect(gw.requests[0]!.expectedResourceVersion).toBe(99n);
    expect(gw.calls.updateConfig).toBe(1);
    expect(gw.commits).toHaveLength(0);
    const ok = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), expectedResourceVersion: 1 });
    expect(ok.policyVersion).toBe(2);
  });
});
