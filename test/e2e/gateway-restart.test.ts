// The gateway crashes (SIGKILL) with operations pending and is started again on the same SQLite
// file and port. The supervisors reconnect by themselves, every operation reaches a terminal
// state, and the SDK's waits — one in progress across the crash, others resumed afterwards by
// idempotency key or operation id — return the outcomes, with no second revision committed.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Completion, IdempotencyKeyRef } from "openshell-config";
import { SandboxPhase, workspaceScope } from "openshell-config/raw";
import { fleetNames, jsonLines, policy, sleep, startE2EStack, until, type E2EStack, type StackProcess } from "./stack.js";

const [alpha, beta] = fleetNames("rs-", 2) as [string, string];
const base = { github: { host: "api.github.com" } };

let stack: E2EStack;
let fleet: StackProcess;

beforeAll(async () => {
  stack = await startE2EStack({ sandboxes: [alpha, beta], gatewayArgs: ["--reconcile", "250ms", "--ack-timeout", "5s"] });
  await stack.createSandbox(alpha, policy(base));
  await stack.createSandbox(beta, policy(base));
  // Slow applies keep the updates pending while the gateway goes down.
  fleet = stack.startSupervisor({ fleet: { prefix: "rs-", count: 2 }, args: ["--apply-delay-ms", "1200"] });
  await Promise.all([alpha, beta].map((n) => stack.waitPhase(n, SandboxPhase.READY, 30_000)));
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

const accepted = (sandbox: string) => jsonLines(fleet).filter((l) => l.sandbox === sandbox && l.msg === "session accepted").length;

describe("gateway restart with operations pending", () => {
  it("after a SIGKILL and a restart on the same database, supervisors reconnect by themselves and every pending operation completes, for waits in progress and waits resumed by key or id", async () => {
    const { client } = stack;
    // alpha: a policy update waited from the start (the wait spans the crash) and a settings update.
    const alphaChange = { policy: policy({ ...base, npm: { host: "registry.npmjs.org" } }) };
    const alphaRef: IdempotencyKeyRef = { sandbox: alpha, idempotencyKey: "restart-alpha-policy", request: alphaChange };
    const waitedAcrossCrash = client.updatePolicy({ sandbox: alpha, ...alphaChange, idempotencyKey: alphaRef.idempotencyKey, wait: { timeoutMs: 30_000 } });
    await until(async () => (await client.getOperation(alphaRef)).target !== undefined, "alpha's policy update to be delivered");
    const setting = await client.updateSettings({ sandbox: alpha, key: "log_level", value: "debug" });
    // beta: two policy updates; the first is superseded at once, the second is pending.
    const b1 = await client.updatePolicy({ sandbox: beta, policy: policy({ ...base, b1: { host: "b1.example.com" } }) });
    const betaChange = { policy: policy({ ...base, b2: { host: "b2.example.com" } }) };
    const betaRef: IdempotencyKeyRef = { sandbox: beta, idempotencyKey: "restart-beta-policy", request: betaChange };
    const b2 = await client.updatePolicy({ sandbox: beta, ...betaChange, idempotencyKey: betaRef.idempotencyKey });
    expect([setting.operation?.state, b2.operation?.state]).toEqual(["pending", "pending"]);
    expect((await client.getOperation(b1.handle)).state).toBe("superseded");
    const sessionsBefore = [accepted(alpha), accepted(beta)];

    await sleep(200);
    const pendingBefore = await Promise.all([client.getOperation(alphaRef), client.getOperation(setting.handle), client.getOperation(b2.handle)]);
    expect(pendingBefore.map((s) => s.state)).toEqual(["pending", "pending", "pending"]);
    const started = Date.now();
    await stack.killGateway("SIGKILL");
    expect(stack.gateway.running).toBe(false);
    await stack.startGateway();

    // The new gateway found the pending operations in the database.
    const resumed = jsonLines(stack.gateway).find((l) => l.msg === "store open; its pending operations resume once the gateway listens");
    expect(resumed?.pending).toBeGreaterThanOrEqual(3);
    // The supervisors reconnect without being told.
    await until(() => accepted(alpha) > sessionsBefore[0]! && accepted(beta) > sessionsBefore[1]!, "both supervisors to reconnect", 15_000);

    const outcomes: Completion[] = await Promise.all([
      waitedAcrossCrash.then((r) => r.completion),
      client.awaitCompletion(alphaRef, { timeoutMs: 20_000 }),
      client.awaitCompletion({ operationId: setting.operation!.operationId }, { timeoutMs: 20_000 }),
      client.awaitCompletion(betaRef, { timeoutMs: 20_000 }),
      client.awaitCompletion({ operationId: b1.operation!.operationId }, { timeoutMs: 20_000 }),
    ]);
    const elapsed = Date.now() - started;
    expect(outcomes.map((c) => c.state), `see ${stack.logFile}`).toEqual(["applied", "applied", "applied", "applied", "superseded"]);
    expect(outcomes[0]!.operationId).toBe(outcomes[1]!.operationId);
    expect(elapsed).toBeLessThan(20_000);

    // Nothing was committed twice: one revision per distinct change.
    expect((await stack.raw.listSandboxPolicies({ sandbox: alpha, workspaceScope: workspaceScope() })).revisions.map((r) => r.version).sort()).toEqual([1, 2]);
    expect((await stack.raw.listSandboxPolicies({ sandbox: beta, workspaceScope: workspaceScope() })).revisions.map((r) => r.version).sort()).toEqual([1, 2, 3]);
    // And the supervisors enforce the final desired state.
    await until(() => stack.effective(alpha)?.revision?.policyVersion === 2 && stack.effective(beta)?.revision?.policyVersion === 3, "the supervisors to enforce the final versions");
    expect(Object.keys((stack.effective(alpha) as unknown as { settings: Record<string, unknown> }).settings)).toContain("log_level");
    expect(Object.keys(stack.effective(beta)!.policy.networkPolicies ?? {}).sort()).toEqual(["b2", "github"]);
  });
});
