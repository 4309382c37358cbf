// The browser path end to end: the SDK's fetch-based transport (Connect binary, Connect JSON,
// gRPC-Web) against the fake gateway served by msw. Every request below is a real fetch() to an
// https origin, intercepted by msw and answered by Connect's own fetch handler.

import { describe, expect, it, vi } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  CompletionTimeoutError,
  IdempotencyConflictError,
  OpenShellConfigError,
  UnauthenticatedError,
  UnavailableError,
  createConfigClient,
  type ConfigClientOptions,
  type ProgressEvent,
} from "../../src/index.js";
import { createWebTransport, type WebTransportOptions } from "../../src/transport/web.js";
import { toSdkError } from "../../src/errors.js";
import { OpenShell, workspaceScope } from "../../src/raw.js";
import {
  ConfigApplyOutcome as Outcome,
  ConfigUpdateOperationState as State,
  ConfigUpdateWaitMode,
} from "../../src/gen/openshell/v1/config_pb.js";
import { createFakeGateway, samplePolicy, type FakeGateway, type FakeGatewayOptions } from "../support/fake-gateway.js";
import { BASE, useMswGateway, type RecordedRequest } from "../support/msw-gateway.js";

const msw = useMswGateway();

const UPDATE = "/openshell.v1.OpenShell/UpdateConfig";
const GET_OPERATION = "/openshell.v1.OpenShell/GetConfigUpdateOperation";
const WATCH = "/openshell.v1.OpenShell/WatchConfigUpdateOperations";

const PROTOCOLS: {
  name: string;
  transport: Omit<WebTransportOptions, "baseUrl">;
  unaryContentType: string;
  streamContentType: string;
}[] = [
  {
    name: "the Connect protocol (binary)",
    transport: {},
    unaryContentType: "application/proto",
    streamContentType: "application/connect+proto",
  },
  {
    name: "the Connect protocol (JSON)",
    transport: { binary: false },
    unaryContentType: "application/json",
    streamContentType: "application/connect+json",
  },
  {
    name: "gRPC-Web",
    transport: { protocol: "grpc-web" },
    unaryContentType: "application/grpc-web+proto",
    streamContentType: "application/grpc-web+proto",
  },
];

type ClientOptions = Omit<ConfigClientOptions, "transport" | "baseUrl">;

const FAST: ClientOptions = {
  retry: { retries: 3, minDelayMs: 1, maxDelayMs: 5 },
  pollDelayMs: { min: 2, max: 10 },
  defaultWaitTimeoutMs: 3_000,
};

function onlyOperationId(gw: FakeGateway): string {
  const ops = gw.operations();
  expect(ops).toHaveLength(1);
  return ops[0]!.operationId;
}

/** An onProgress that completes the operation once the client has seen it pending. */
function completeWhenSeenPending(gw: FakeGateway, events: ProgressEvent[], outcome = Outcome.APPLIED) {
  return (event: ProgressEvent) => {
    events.push(event);
    if (event.type === "state" && event.status.state === "pending") {
      const id = event.status.operationId;
      setTimeout(() => gw.complete(id, { state: State.APPLIED, outcome }), 10);
    }
  };
}

function states(events: ProgressEvent[]): string[] {
  return events.filter((e) => e.type === "state").map((e) => (e.type === "state" ? e.status.state : ""));
}

describe.each(PROTOCOLS)("over fetch with $name", ({ transport, unaryContentType, streamContentType }) => {
  function setup(gatewayOptions: FakeGatewayOptions = {}, clientOptions: ClientOptions = {}) {
    const gw = createFakeGateway(gatewayOptions);
    gw.addSandbox("dev");
    const log: RecordedRequest[] = msw.serve(gw);
    const client = createConfigClient({
      ...FAST,
      ...clientOptions,
      transport: createWebTransport({ baseUrl: BASE, ...transport }),
    });
    return { gw, log, client };
  }

  it("sends unary calls as POSTs of the expected content type to the https gateway", async () => {
    const { gw, log, client } = setup();
    const committed = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const status = await client.getOperation(committed.handle);

    expect(status.state).toBe("pending");
    expect(status.operationId).toBe(onlyOperationId(gw));
    expect(log.map((r) => [r.method, r.url, r.contentType])).toEqual([
      ["POST", `${BASE}${UPDATE}`, unaryContentType],
      ["POST", `${BASE}${GET_OPERATION}`, unaryContentType],
    ]);
  });

  it("a waited policy update returns applied with Date timestamps and bigint revisions", async () => {
    const { gw, client } = setup({
      autoComplete: () => ({ state: State.APPLIED, outcome: Outcome.APPLIED, delayMs: 5 }),
    });
    const before = Date.now();
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: true });

    const c = res.completion;
    expect(c.state).toBe("applied");
    expect(c.outcome).toBe("applied");
    expect(c.error).toBeUndefined();
    expect(c.operationId).toBe(onlyOperationId(gw));
    expect(c.tracking).toBe("operation");
    expect(c.createdAt).toBeInstanceOf(Date);
    expect(c.updatedAt).toBeInstanceOf(Date);
    expect(c.completedAt).toBeInstanceOf(Date);
    expect(c.createdAt!.getTime()).toBeGreaterThanOrEqual(before - 1_000);
    expect(c.completedAt!.getTime()).toBeGreaterThanOrEqual(c.createdAt!.getTime());
    expect(c.target).toEqual({
      kind: "sandbox-config",
      configRevision: 2000n,
      policyVersion: 2,
      policySource: "unspecified",
      globalPolicyVersion: 0,
      settingsRevision: 0n,
    });
    expect(res.policyVersion).toBe(2);
    expect(typeof res.settingsRevision).toBe("bigint");
    expect(res.handle.operationId).toBe(c.operationId);
    // One request carried both the commit and the server-side wait.
    expect(gw.calls.updateConfig).toBe(1);
    expect(gw.requests[0]!.waitMode).toBe(ConfigUpdateWaitMode.WAIT_FOR_COMPLETION);
  });

  it("a waited settings update returns applied with its bigint settings revision", async () => {
    const { client } = setup({
      autoComplete: () => ({ state: State.APPLIED, outcome: Outcome.APPLIED, delayMs: 5 }),
    });
    const res = await client.updateSettings({ sandbox: "dev", key: "log_level", value: "debug", wait: true });

    expect(res.completion.state).toBe("applied");
    expect(res.settingsRevision).toBe(1n);
    expect(res.completion.target).toMatchObject({ kind: "sandbox-config", settingsRevision: 1n, configRevision: 1001n });
  });

  it("a degraded apply is returned as applied with outcome degraded", async () => {
    const { client } = setup({
      autoComplete: () => ({ state: State.APPLIED, outcome: Outcome.DEGRADED, delayMs: 5 }),
    });
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: true });

    expect(res.completion.state).toBe("applied");
    expect(res.completion.outcome).toBe("degraded");
  });

  it("a failed apply is returned, not thrown, with its sanitized error text intact", async () => {
    const error = "règle « github »: host must not be empty (kept last known good)";
    const { client } = setup({
      autoComplete: () => ({ state: State.FAILED, outcome: Outcome.FAILED_RETAINED_LAST_KNOWN_GOOD, error, delayMs: 5 }),
    });
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: true });

    expect(res.completion.state).toBe("failed");
    expect(res.completion.outcome).toBe("failed-retained-last-known-good");
    expect(res.completion.error).toBe(error);
    expect(res.completion.completedAt).toBeInstanceOf(Date);
  });

  it("a gateway's DEADLINE_EXCEEDED keeps its operation-id metadata across fetch", async () => {
    const { gw, client } = setup();
    const err = await client
      .raw(OpenShell)
      .updateConfig({
        sandbox: "dev",
        idempotencyKey: "raw-wait",
        policy: samplePolicy(),
        waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION,
        waitTimeout: { seconds: 0n, nanos: 20_000_000 },
        workspaceScope: workspaceScope(),
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );

    expect(err).toBeInstanceOf(ConnectError);
    const ce = err as ConnectError;
    expect(ce.code).toBe(Code.DeadlineExceeded);
    const id = onlyOperationId(gw);
    expect(ce.metadata.get("operation-id")).toBe(id);
    const mapped = toSdkError(ce);
    expect(mapped).toBeInstanceOf(CompletionTimeoutError);
    expect(mapped).toMatchObject({ reason: "server-deadline", operationId: id, ref: { operationId: id } });
  });

  it("a waited update that outlives its wait throws CompletionTimeoutError naming the committed operation", async () => {
    const { gw, client } = setup({}, { serverWaitSliceMs: 25 });
    const err = await client
      .updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 300 } })
      .then(
        () => undefined,
        (e: unknown) => e,
      );

    expect(err).toBeInstanceOf(CompletionTimeoutError);
    const timeout = err as CompletionTimeoutError;
    expect(timeout.reason).toBe("deadline");
    // The id is known only from the gateway's DEADLINE_EXCEEDED metadata: the commit never answered.
    expect(timeout.operationId).toBe(onlyOperationId(gw));
    expect(timeout.ref).toMatchObject({ operationId: timeout.operationId });
    // One server-side slice revealed the id; the rest of the wait followed the watch stream.
    expect(gw.waitTimeouts).toEqual([25]);
    expect(gw.calls.watchConfigUpdateOperations).toBeGreaterThanOrEqual(1);
    // Every request carried the same key: still one revision.
    expect(gw.commits).toHaveLength(1);
    expect(new Set(gw.requests.map((r) => r.idempotencyKey)).size).toBe(1);
    expect(gw.operation(timeout.operationId!)!.state).toBe(State.PENDING);
  });

  it("a timed-out wait resumes by operation id over the watch stream without a second revision", async () => {
    const { gw, client } = setup({}, { serverWaitSliceMs: 30 });
    const timeout = (await client
      .updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 100 } })
      .catch((e: unknown) => e)) as CompletionTimeoutError;
    expect(timeout).toBeInstanceOf(CompletionTimeoutError);
    const updatesBefore = gw.calls.updateConfig ?? 0;
    const watchesBefore = gw.calls.watchConfigUpdateOperations ?? 0;

    const events: ProgressEvent[] = [];
    const completion = await client.awaitCompletion(
      { operationId: timeout.operationId! },
      { timeoutMs: 2_000, onProgress: completeWhenSeenPending(gw, events) },
    );

    expect(completion.state).toBe("applied");
    expect(completion.operationId).toBe(timeout.operationId);
    expect(states(events)).toEqual(["pending", "applied"]);
    expect(gw.calls.watchConfigUpdateOperations).toBe(watchesBefore + 1);
    expect(gw.calls.updateConfig).toBe(updatesBefore);
    expect(gw.commits).toHaveLength(1);
  });

  it("a timed-out wait resumes by idempotency key without a second revision", async () => {
    const { gw, client } = setup({}, { serverWaitSliceMs: 30 });
    const idempotencyKey = "deploy-42";
    const timeout = (await client
      .updatePolicy({ sandbox: "dev", idempotencyKey, policy: samplePolicy(), wait: { timeoutMs: 100 } })
      .catch((e: unknown) => e)) as CompletionTimeoutError;
    expect(timeout).toBeInstanceOf(CompletionTimeoutError);
    const id = onlyOperationId(gw);
    const updatesBefore = gw.calls.updateConfig ?? 0;

    setTimeout(() => gw.complete(id, { state: State.APPLIED, outcome: Outcome.APPLIED }), 50);
    const completion = await client.awaitCompletion(
      { sandbox: "dev", idempotencyKey, request: { policy: samplePolicy() } },
      { timeoutMs: 2_000 },
    );

    expect(completion.state).toBe("applied");
    expect(completion.operationId).toBe(id);
    // The resume replayed the request (server-side waits), each with the original key.
    expect(gw.calls.updateConfig).toBeGreaterThan(updatesBefore);
    expect(gw.requests.every((r) => r.idempotencyKey === idempotencyKey)).toBe(true);
    expect(gw.commits).toHaveLength(1);
  });

  it("the watch stream delivers each state change to onProgress as it happens", async () => {
    const { gw, log, client } = setup();
    const committed = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const events: ProgressEvent[] = [];

    // The operation completes only after the client has received the first (pending) message,
    // so this passes only if the response body is streamed, not buffered.
    const completion = await client.awaitCompletion(committed.handle, {
      timeoutMs: 2_000,
      onProgress: completeWhenSeenPending(gw, events, Outcome.DEGRADED),
    });

    expect(completion).toMatchObject({ state: "applied", outcome: "degraded", operationId: onlyOperationId(gw) });
    expect(states(events)).toEqual(["pending", "applied"]);
    const watches = log.filter((r) => r.path === WATCH);
    expect(watches).toHaveLength(1);
    expect(watches[0]!.contentType).toBe(streamContentType);
    expect(gw.calls.updateConfig).toBe(1);
  });

  it("a watch that has seen the outcome closes its stream", async () => {
    const { gw, log, client } = setup();
    const committed = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    gw.complete(committed.operation!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED });

    const completion = await client.awaitCompletion(committed.handle, { timeoutMs: 2_000 });

    expect(completion.state).toBe("applied");
    const watch = log.find((r) => r.path === WATCH);
    expect(watch).toBeDefined();
    // A stream left open holds one of the browser's few connections per origin (HTTP/1.1). The
    // bound is generous: on a loaded 2-core machine the full suite once took over 1 s to get here.
    await vi.waitFor(() => expect(watch!.signal.aborted).toBe(true), { timeout: 5_000 });
  });

  it("a watch stream ending in UNAVAILABLE is reopened", async () => {
    const { gw, client } = setup();
    const committed = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    gw.inject({ method: "watchConfigUpdateOperations", code: Code.Unavailable });
    const events: ProgressEvent[] = [];

    const completion = await client.awaitCompletion(committed.handle, {
      timeoutMs: 2_000,
      onProgress: completeWhenSeenPending(gw, events),
    });

    expect(completion.state).toBe("applied");
    expect(gw.calls.watchConfigUpdateOperations).toBe(2);
    const retry = events.find((e) => e.type === "retry");
    expect(retry).toMatchObject({ type: "retry", attempt: 1 });
    expect(ConnectError.from((retry as { error: unknown }).error).code).toBe(Code.Unavailable);
  });

  it("an idempotency key reused for a different change throws IdempotencyConflictError", async () => {
    const { gw, client } = setup();
    await client.updatePolicy({ sandbox: "dev", idempotencyKey: "same-key", policy: samplePolicy() });

    const err = await client
      .updatePolicy({ sandbox: "dev", idempotencyKey: "same-key", policy: samplePolicy("extra") })
      .catch((e: unknown) => e);

    expect(err).toBeInstanceOf(IdempotencyConflictError);
    expect(err).toBeInstanceOf(OpenShellConfigError);
    expect(err).toMatchObject({ code: "idempotency-conflict", connectCode: Code.InvalidArgument });
    expect(gw.commits).toHaveLength(1);
  });

  it("the same key and change replays the committed update instead of committing again", async () => {
    const { gw, client } = setup();
    const first = await client.updatePolicy({ sandbox: "dev", idempotencyKey: "same-key", policy: samplePolicy() });
    const again = await client.updatePolicy({ sandbox: "dev", idempotencyKey: "same-key", policy: samplePolicy() });

    expect(again.policyVersion).toBe(first.policyVersion);
    expect(again.operation!.operationId).toBe(first.operation!.operationId);
    expect(gw.commits).toHaveLength(1);
  });

  it("a bearer token string is sent over https on unary calls and on the watch stream", async () => {
    const { gw, log, client } = setup({ token: "s3cret" }, { token: "s3cret" });
    const committed = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    const completion = await client.awaitCompletion(committed.handle, {
      timeoutMs: 2_000,
      onProgress: completeWhenSeenPending(gw, []),
    });

    expect(completion.state).toBe("applied");
    expect(log.map((r) => r.path)).toEqual([UPDATE, WATCH]);
    for (const r of log) {
      expect(new URL(r.url).protocol).toBe("https:");
      expect(r.authorization).toBe("Bearer s3cret");
    }
    expect(gw.authorizations).toEqual(["Bearer s3cret", "Bearer s3cret"]);
  });

  it("an async token function is called before each request and its current token is sent", async () => {
    let issued = 0;
    const { log, client } = setup({}, { token: async () => `tok-${++issued}` });
    const committed = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    await client.getOperation(committed.handle);

    expect(issued).toBe(2);
    expect(log.map((r) => r.authorization)).toEqual(["Bearer tok-1", "Bearer tok-2"]);
  });

  it("a token the gateway rejects throws UnauthenticatedError", async () => {
    const { gw, client } = setup({ token: "s3cret" }, { token: "wrong" });
    const err = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() }).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(UnauthenticatedError);
    expect(gw.commits).toHaveLength(0);
  });

  it("UNAVAILABLE after the commit is retried with the same idempotency key and commits once", async () => {
    const { gw, client } = setup({
      autoComplete: () => ({ state: State.APPLIED, outcome: Outcome.APPLIED, delayMs: 5 }),
    });
    gw.inject({ method: "updateConfig", code: Code.Unavailable, afterCommit: true });
    const events: ProgressEvent[] = [];

    const res = await client.updatePolicy({
      sandbox: "dev",
      policy: samplePolicy(),
      wait: { timeoutMs: 2_000, onProgress: (e) => events.push(e) },
    });

    expect(res.completion.state).toBe("applied");
    expect(gw.calls.updateConfig).toBe(2);
    expect(gw.requests.map((r) => r.idempotencyKey)).toEqual([res.idempotencyKey, res.idempotencyKey]);
    expect(gw.commits).toHaveLength(1);
    expect(events.filter((e) => e.type === "retry")).toHaveLength(1);
  });

  it("UNAVAILABLE on a commit without wait is retried with the same idempotency key", async () => {
    const { gw, client } = setup();
    gw.inject({ method: "updateConfig", code: Code.Unavailable }, 2);

    const res = await client.updatePolicy({ sandbox: "dev", idempotencyKey: "retry-me", policy: samplePolicy() });

    expect(res.policyVersion).toBe(2);
    expect(gw.requests.map((r) => r.idempotencyKey)).toEqual(["retry-me", "retry-me", "retry-me"]);
    expect(gw.commits).toHaveLength(1);
  });

  it("UNAVAILABLE on every attempt throws UnavailableError once retries run out", async () => {
    const { gw, client } = setup({}, { retry: { retries: 2, minDelayMs: 1, maxDelayMs: 2 } });
    gw.inject({ method: "updateConfig", code: Code.Unavailable }, 5);

    const err = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() }).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(UnavailableError);
    expect(gw.calls.updateConfig).toBe(3);
    expect(gw.commits).toHaveLength(0);
  });
});
