import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { CompletionTimeoutError, IdempotencyConflictError, ConflictError, InvalidArgumentError } from "openshell-config";
import { ConfigApplyOutcome, ConfigUpdateWaitMode, PolicyStatus, workspaceScope } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "./harness.js";
import { createSandbox, dumpState, policy, policyMessage, resolve } from "./fixtures.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
  await createSandbox(gw, "dev");
});
afterAll(() => gw.close());

describe("UpdateConfig through the SDK against a real gateway", () => {
  it("a committed policy update returns a new version and a pending operation", async () => {
    const res = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ github: "api.github.com", npm: "registry.npmjs.org" }) });
    expect(res.policyVersion).toBe(2);
    expect(res.policyHash).toMatch(/^[0-9a-f]{64}$/);
    expect(res.operation?.state).toBe("pending");
    expect(res.operation?.createdAt).toBeInstanceOf(Date);
    expect(res.operation?.completedAt).toBeUndefined();
    const status = await gw.raw("admin").getSandboxPolicyStatus({ sandbox: "dev", version: 2, workspaceScope: workspaceScope() });
    expect(status.revision?.status).toBe(PolicyStatus.PENDING);
  });

  it("a waited update returns once the supervisor's result completes its operation", async () => {
    const client = gw.sdk();
    const since = Date.now();
    const waiting = client.updatePolicy({ sandbox: "dev", policy: policy({ pypi: "pypi.org" }), wait: { timeoutMs: 5_000 } });
    let opId: string | undefined;
    while (!opId) {
      await new Promise((r) => setTimeout(r, 5));
      const ops = await gw.store.operationsOfSandbox((await gw.store.sandboxByName("default", "dev"))!.id, 1);
      if (ops[0] && ops[0].state === 1 && ops[0].createdAt.getTime() >= since) opId = ops[0].id;
    }
    await resolve(gw, opId, ConfigApplyOutcome.DEGRADED, "middleware audit unreachable");
    const res = await waiting;
    expect(res.completion).toMatchObject({ state: "applied", outcome: "degraded", error: "middleware audit unreachable", operationId: opId });
    expect(res.completion.completedAt).toBeInstanceOf(Date);
  });

  it("a server wait that times out answers DEADLINE_EXCEEDED naming the operation, and leaves it pending", async () => {
    const err = await gw
      .raw("admin")
      .updateConfig({
        sandbox: "dev",
        policy: policy({ one: "one.example.com" }),
        idempotencyKey: "deadline-1",
        waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION,
        waitTimeout: { seconds: 0n, nanos: 50_000_000 },
        workspaceScope: workspaceScope(),
      })
      .catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.DeadlineExceeded);
    const id = (err as ConnectError).metadata.get("operation-id");
    expect(id).toBeTruthy();
    const op = await gw.store.operation(id!);
    expect(op?.state).toBe(1);
    // Resumed by key: the same operation, no second revision.
    const again = await gw.sdk().awaitCompletion(
      { sandbox: "dev", idempotencyKey: "deadline-1", request: { policy: policy({ one: "one.example.com" }) } },
      { timeoutMs: 600 },
    ).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(CompletionTimeoutError);
    expect((again as CompletionTimeoutError).operationId).toBe(id);
    await resolve(gw, id!, ConfigApplyOutcome.APPLIED);
    const done = await gw.sdk().awaitCompletion({ operationId: id! }, { timeoutMs: 2_000 });
    expect(done.state).toBe("applied");
  });

  it("the same key with another payload is INVALID_ARGUMENT and changes nothing", async () => {
    await gw.sdk().updatePolicy({ sandbox: "dev", idempotencyKey: "k-conflict", policy: policy({ a: "a.example.com" }) });
    const before = await dumpState(gw);
    const err = await gw.sdk().updatePolicy({ sandbox: "dev", idempotencyKey: "k-conflict", policy: policy({ b: "b.example.com" }) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IdempotencyConflictError);
    expect(await dumpState(gw)).toBe(before);
  });

  it("concurrent duplicates with one key produce one revision and one operation", async () => {
    const client = gw.sdk();
    const sameRequest = () => client.updatePolicy({ sandbox: "dev", idempotencyKey: "k-race", policy: policy({ race: "race.example.com" }) });
    const results = await Promise.all(Array.from({ length: 12 }, sameRequest));
    expect(new Set(results.map((r) => r.operation?.operationId)).size).toBe(1);
    expect(new Set(results.map((r) => r.policyVersion)).size).toBe(1);
    const sb = await gw.store.sandboxByName("default", "dev");
    const revisions = await gw.store.listPolicyRevisions(sb!.id, 1000, "");
    expect(revisions.items.filter((r) => r.version === results[0]!.policyVersion)).toHaveLength(1);
  });

  it("an expected_resource_version mismatch is ABORTED and changes nothing", async () => {
    const before = await dumpState(gw);
    const err = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ x: "x.example.com" }), expectedResourceVersion: 1n }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect(await dumpState(gw)).toBe(before);
  });

  it("changing a static field is INVALID_ARGUMENT naming it, and changes nothing", async () => {
    const before = await dumpState(gw);
    const changed = policyMessage();
    changed.filesystem!.readWrite.push("/");
    const err = await gw.sdk().updatePolicy({ sandbox: "dev", policy: changed }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InvalidArgumentError);
    expect((err as Error).message).toMatch(/filesystem/);
    expect(await dumpState(gw)).toBe(before);
  });
});
