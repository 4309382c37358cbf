// A gateway whose every wait ends at once (a server-side wait answered DEADLINE_EXCEEDED without
// waiting, a watch stream closed without the outcome, an operation that stays PENDING) must not
// be asked again and again without pause: the SDK pauses after each slice that ended early (from
// 100 ms, doubling, capped), yields to the event loop, and its own deadline ends the wait with
// CompletionTimeoutError. The gateway is in memory, so a loop that never yields would never see
// its deadline timer fire; each gateway stops answering after STORM requests so that such a
// regression fails here instead of hanging the test run.
//
// Assertions count requests and allow generous wall-clock bounds (the machine may be loaded).

import { describe, it, type ExpectStatic } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createRouterTransport, type ConnectRouter } from "@connectrpc/connect";
import { OpenShell } from "../../src/gen/openshell/v1/openshell_pb.js";
import {
  ConfigComponent,
  ConfigUpdateOperationSchema,
  ConfigUpdateOperationState as State,
  PolicyStatus,
  UpdateConfigResponseSchema,
} from "../../src/gen/openshell/v1/config_pb.js";
import { CompletionTimeoutError, createConfigClient, type ConfigClient } from "../../src/index.js";
import { rejectionOf, samplePolicy } from "./helpers.js";

const OPERATION_ID = "6f1c9a52-0b7e-4f0e-9a43-1d2f3e4a5b6c";
// A client that re-asks without pause makes hundreds of requests in a second; a paced one about ten.
const STORM = 300;
// At most this many requests of one kind during a 1 s wait: 100, 200, 400 and 800 ms pauses leave
// room for 5 (with retries of transient failures and the first request, 12 is generous).
const MAX_REQUESTS = 12;
const WAIT_MS = 1_000;
// The wait must end at its deadline, not long after it (generous: the machine may be loaded).
const LATEST_END_MS = 6_000;

interface Behaviour {
  /** The waited UpdateConfig: answers DEADLINE_EXCEEDED at once (with or without operation-id), or PENDING, or no operation. */
  update: "deadline-with-id" | "deadline-without-id" | "pending" | "no-operation";
  /** The watch: UNIMPLEMENTED, or a stream that ends at once (after the PENDING state, or empty). */
  watch: "unimplemented" | "ends-after-pending" | "ends-empty";
}

interface InstantGateway {
  readonly calls: Record<string, number>;
  client(options?: Parameters<typeof createConfigClient>[0]): ConfigClient;
}

function pendingOperation() {
  const now = timestampNow();
  return create(ConfigUpdateOperationSchema, {
    operationId: OPERATION_ID,
    sandboxId: "sbx-1",
    component: ConfigComponent.SANDBOX_CONFIG,
    state: State.PENDING,
    createdTime: now,
    updatedTime: now,
  });
}

/** A gateway on which every wait ends at once and nothing ever completes. */
function instantGateway(behaviour: Behaviour): InstantGateway {
  const calls: Record<string, number> = {};
  const count = (method: string) => {
    calls[method] = (calls[method] ?? 0) + 1;
    if (calls[method]! > STORM) throw new ConnectError(`request storm: ${method} asked ${STORM} times`, Code.PermissionDenied);
  };
  const routes = (router: ConnectRouter) =>
    router.service(OpenShell, {
      async updateConfig(req) {
        count("updateConfig");
        if (req.waitMode !== 2 /* WAIT_FOR_COMPLETION */ || behaviour.update === "pending") {
          return create(UpdateConfigResponseSchema, { version: 2, policyHash: "sha256:2", operation: pendingOperation() });
        }
        if (behaviour.update === "no-operation") return create(UpdateConfigResponseSchema, { version: 2, policyHash: "sha256:2" });
        const metadata = behaviour.update === "deadline-with-id" ? { "operation-id": OPERATION_ID } : undefined;
        throw new ConnectError(`timed out waiting for update operation ${OPERATION_ID}`, Code.DeadlineExceeded, metadata);
      },
      async *watchConfigUpdateOperations() {
        count("watchConfigUpdateOperations");
        if (behaviour.watch === "unimplemented") throw new ConnectError("method not implemented", Code.Unimplemented);
        if (behaviour.watch === "ends-after-pending") yield { operation: pendingOperation(), initial: true };
      },
      async getConfigUpdateOperation() {
        count("getConfigUpdateOperation");
        return { operation: pendingOperation() };
      },
      async getSandboxPolicyStatus(req) {
        count("getSandboxPolicyStatus");
        return { activeVersion: 1, revision: { version: req.version, policyHash: "sha256:2", status: PolicyStatus.PENDING } };
      },
    });
  return {
    calls,
    // Default delays and retries, as an application gets them.
    client: (options) => createConfigClient({ ...options, transport: createRouterTransport(routes) }),
  };
}

/** Runs `wait`, expecting it to end with the local deadline; returns how long it took. */
async function endsAtDeadline(expect: ExpectStatic, wait: Promise<unknown>): Promise<number> {
  const started = Date.now();
  const err = await rejectionOf(wait);
  const elapsed = Date.now() - started;
  expect(err).toBeInstanceOf(CompletionTimeoutError);
  expect((err as CompletionTimeoutError).reason).toBe("deadline");
  expect(elapsed).toBeGreaterThanOrEqual(WAIT_MS - 50);
  expect(elapsed).toBeLessThan(LATEST_END_MS);
  return elapsed;
}

function requests(gw: InstantGateway): number {
  return Object.values(gw.calls).reduce((a, b) => a + b, 0);
}

// Concurrent: the tests mostly sleep, and each has its own gateway and client.
describe.concurrent("a gateway whose waits end at once", () => {
  it("a server-side wait answered DEADLINE_EXCEEDED at once is re-asked after a growing pause, and the local deadline ends the wait", async ({ expect }) => {
    const gw = instantGateway({ update: "deadline-with-id", watch: "unimplemented" });
    const update = gw.client().updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: WAIT_MS } });
    await endsAtDeadline(expect, update);
    expect(gw.calls.updateConfig).toBeGreaterThanOrEqual(2);
    expect(gw.calls.updateConfig).toBeLessThanOrEqual(MAX_REQUESTS);
  });

  it("DEADLINE_EXCEEDED at once without an operation-id is paced the same way", async ({ expect }) => {
    const gw = instantGateway({ update: "deadline-without-id", watch: "unimplemented" });
    await endsAtDeadline(expect, gw.client().updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: WAIT_MS } }));
    expect(gw.calls.updateConfig).toBeGreaterThanOrEqual(2);
    expect(requests(gw)).toBeLessThanOrEqual(MAX_REQUESTS);
  });

  it("a watch stream that ends right after the PENDING state is re-opened after a growing pause", async ({ expect }) => {
    const gw = instantGateway({ update: "deadline-with-id", watch: "ends-after-pending" });
    await endsAtDeadline(expect, gw.client().updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: WAIT_MS } }));
    expect(gw.calls.watchConfigUpdateOperations).toBeGreaterThanOrEqual(2);
    expect(gw.calls.watchConfigUpdateOperations).toBeLessThanOrEqual(MAX_REQUESTS);
    expect(requests(gw)).toBeLessThanOrEqual(MAX_REQUESTS + 1);
  });

  it("a watch stream that ends without any message is re-opened after a growing pause", async ({ expect }) => {
    const gw = instantGateway({ update: "pending", watch: "ends-empty" });
    await endsAtDeadline(expect, gw.client().awaitCompletion({ operationId: OPERATION_ID }, { timeoutMs: WAIT_MS }));
    expect(gw.calls.watchConfigUpdateOperations).toBeGreaterThanOrEqual(2);
    expect(gw.calls.watchConfigUpdateOperations).toBeLessThanOrEqual(MAX_REQUESTS);
  });

  it("a waited update answered PENDING at once is followed by paced operation polls", async ({ expect }) => {
    const gw = instantGateway({ update: "pending", watch: "unimplemented" });
    await endsAtDeadline(expect, gw.client().updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: WAIT_MS } }));
    expect(gw.calls.getConfigUpdateOperation).toBeGreaterThanOrEqual(2);
    expect(gw.calls.getConfigUpdateOperation).toBeLessThanOrEqual(MAX_REQUESTS);
  });

  it("a gateway that returns no operation is followed by paced policy-status polls", async ({ expect }) => {
    const gw = instantGateway({ update: "no-operation", watch: "unimplemented" });
    await endsAtDeadline(expect, gw.client().updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: WAIT_MS } }));
    expect(gw.calls.getSandboxPolicyStatus).toBeGreaterThanOrEqual(2);
    expect(gw.calls.getSandboxPolicyStatus).toBeLessThanOrEqual(MAX_REQUESTS);
  });

  it("the pause never ends a wait early: a 3 s wait against the same gateway still lasts 3 s", async ({ expect }) => {
    const gw = instantGateway({ update: "deadline-with-id", watch: "unimplemented" });
    const started = Date.now();
    const err = await rejectionOf(gw.client().updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 3_000 } }));
    expect(err).toBeInstanceOf(CompletionTimeoutError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_950);
    // 100 + 200 + 400 + 800 + 2000 (capped) ≈ 3.5 s: the growth is capped at 2 s, not unbounded.
    expect(gw.calls.updateConfig).toBeGreaterThanOrEqual(4);
    expect(gw.calls.updateConfig).toBeLessThanOrEqual(MAX_REQUESTS);
  });
});
