import { afterEach, describe, expect, it } from "vitest";
import { ResourceExhaustedError } from "openshell-config";
import { ConfigApplyOutcome as Outcome, SandboxPhase, workspaceScope } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "../rpc/harness.js";
import { createSandbox, policy } from "../rpc/fixtures.js";
import { connectSupervisorDouble, type SupervisorDouble } from "./supervisor-double.js";

let gw: TestGateway | undefined;
let sup: SupervisorDouble | undefined;
afterEach(async () => {
  sup?.close();
  await gw?.close();
});

describe("delivery bounds", () => {
  it("an update the supervisor does not acknowledge is re-sent after the ack timeout, and then completes", async () => {
    gw = await startTestGateway("sqlite", { session: { ackTimeoutMs: 200 } });
    await createSandbox(gw, "dev");
    let dropped = 0;
    sup = connectSupervisorDouble(gw, {
      decide: (s) => (s.version === 2 && dropped++ === 0 ? "drop" : { outcome: Outcome.APPLIED }),
    });
    await sup.ready;
    const res = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ late: "late.example.com" }), wait: { timeoutMs: 5_000 } });
    expect(res.completion.state).toBe("applied");
    const deliveries = sup.updates.filter((u) => u.component.case === "sandboxConfig" && u.component.value.version === 2);
    expect(deliveries.length).toBeGreaterThanOrEqual(2);
    expect(new Set(deliveries.map((u) => u.updateId)).size).toBe(deliveries.length);
    expect(gw.logs()).toMatch(/not acknowledged in time/);
  });

  // Issue 29, finding 4: such an update used to commit and then fail here ("larger than 4000
  // bytes"), leaving a configuration no supervisor could receive; it is now refused at commit.
  it("a snapshot over the message limit is never sent: the update is refused at commit with a clear error", async () => {
    gw = await startTestGateway("sqlite", { session: { maxMessageBytes: 4_000 } });
    await createSandbox(gw, "dev");
    sup = connectSupervisorDouble(gw);
    await sup.ready;
    const huge = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`rule-${i}`, `host-${i}.a-rather-long-domain-name.example.com`]));
    const err = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy(huge), wait: { timeoutMs: 5_000 } }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(ResourceExhaustedError);
    expect((err as Error).message).toMatch(/over the 3\.9 KiB \(4000 bytes\) a supervisor accepts/);
    expect(sup.updates.some((u) => u.component.case === "sandboxConfig" && u.component.value.version === 2)).toBe(false);
  });

  it("a rejected bootstrap leaves the sandbox in ERROR, and an accepted fix makes it READY", async () => {
    gw = await startTestGateway();
    await createSandbox(gw, "dev");
    sup = connectSupervisorDouble(gw, {
      decide: (s) => (s.version === 1 ? { outcome: Outcome.FAILED_CLOSED, message: "bad bootstrap" } : { outcome: Outcome.APPLIED }),
    });
    await sup.ready;
    const phase = async () => (await gw!.raw("admin").getSandbox({ name: "dev", workspaceScope: workspaceScope() })).sandbox?.status?.phase;
    await expect.poll(phase).toBe(SandboxPhase.ERROR);
    const res = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ fixed: "fixed.example.com" }), wait: { timeoutMs: 5_000 } });
    expect(res.completion.state).toBe("applied");
    await expect.poll(phase).toBe(SandboxPhase.READY);
  });

  it("a bootstrap that never comes back fails the session with DEADLINE_EXCEEDED", async () => {
    gw = await startTestGateway("sqlite", { session: { bootstrapTimeoutMs: 200 } });
    await createSandbox(gw, "dev");
    sup = connectSupervisorDouble(gw, { decide: () => "drop" });
    const err = await sup.ended;
    expect(String(err)).toMatch(/bootstrap timed out/);
  });
});
