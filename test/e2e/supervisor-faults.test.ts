// Supervisors that misbehave, as real processes: one that drops its stream after every update,
// one killed (SIGKILL) in the middle of applying an update and replaced, one that never sends a
// result (--drop-acks), and one slower than the gateway's --ack-timeout. One gateway for the file,
// with a 1 s ack timeout and a fast reconciler.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CompletionTimeoutError } from "openshell-config";
import { SandboxPhase, workspaceScope } from "openshell-config/raw";
import { jsonLines, policy, sleep, startE2EStack, until, type E2EStack, type LogLine, type StackProcess } from "./stack.js";

const flaky = "flaky";
const crashy = "crashy";
const mute = "mute";
const laggy = "laggy";
const base = { github: { host: "api.github.com" } };
const RESEND = "configuration update not acknowledged in time; re-sending";

let stack: E2EStack;
const sandboxIds = new Map<string, string>();
let flakySup: StackProcess;
let crashySup: StackProcess;
let muteSup: StackProcess;
let laggySup: StackProcess;

beforeAll(async () => {
  stack = await startE2EStack({ sandboxes: [flaky, crashy, mute, laggy], gatewayArgs: ["--ack-timeout", "1s", "--reconcile", "250ms"] });
  for (const name of [flaky, crashy, mute, laggy]) {
    await stack.createSandbox(name, policy(base));
    sandboxIds.set(name, (await stack.raw.getSandbox({ name, workspaceScope: workspaceScope() })).sandbox!.metadata!.id);
  }
  // Started together so that their start-up (and slow bootstraps) overlap.
  flakySup = stack.startSupervisor({ sandbox: flaky, args: ["--disconnect-after", "1"] });
  crashySup = stack.startSupervisor({ sandbox: crashy, args: ["--apply-delay-ms", "2000"] });
  muteSup = stack.startSupervisor({ sandbox: mute, args: ["--drop-acks"] });
  // Every apply (duplicates included) outlasts the 1 s ack timeout.
  laggySup = stack.startSupervisor({ sandbox: laggy, args: ["--apply-delay-ms", "1500"] });
  await Promise.all([flaky, crashy, laggy].map((n) => stack.waitPhase(n, SandboxPhase.READY, 30_000)));
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

/** "sandbox config processed" lines of `proc` for `sandbox`: what the supervisor did with each snapshot. */
function processed(proc: StackProcess, sandbox: string): { version: number; outcome: string }[] {
  return stack.supervisorLines(proc, sandbox, "sandbox config processed").map((l) => ({ version: l.policyVersion as number, outcome: l.outcome as string }));
}

const gatewayLines = (sandbox: string, msg: string): LogLine[] => stack.gatewayLog().filter((l) => l.sandboxId === sandboxIds.get(sandbox) && l.msg === msg);

describe("reconnects", () => {
  it("a supervisor that ends its stream after every update reconnects by itself; every update completes applied and no revision is applied twice", async () => {
    const sup = flakySup;
    const versions: number[] = [];
    for (const host of ["one.example.com", "two.example.com", "three.example.com"]) {
      const res = await stack.client.updatePolicy({ sandbox: flaky, policy: policy({ ...base, [host.split(".")[0]!]: { host } }), wait: { timeoutMs: 15_000 } });
      expect(res.completion, `see ${stack.logFile}`).toMatchObject({ state: "applied" });
      versions.push(res.policyVersion);
    }
    expect(versions).toEqual([2, 3, 4]);
    // It reconnected after the first update at least (a live update is always followed by a new
    // connection; later ones may arrive in a re-bootstrap instead)…
    await until(() => jsonLines(sup).filter((l) => l.sandbox === flaky && l.msg === "session accepted").length >= 2, "the supervisor to reconnect");
    // …and a revision it already ran, delivered again on a new connection, is a duplicate, not a second apply.
    await until(() => processed(sup, flaky).some((p) => p.version === 4), "the supervisor's log of version 4");
    const seen = processed(sup, flaky);
    for (const v of [1, ...versions]) expect(seen.filter((p) => p.version === v && p.outcome === "APPLIED"), JSON.stringify(seen)).toHaveLength(1);
    expect(seen.every((p) => p.outcome === "APPLIED" || p.outcome === "IGNORED_DUPLICATE"), JSON.stringify(seen)).toBe(true);
    expect(stack.effective(flaky)?.revision?.policyVersion).toBe(4);
  });

  it("a supervisor killed while applying an update is replaced, and the pending update completes applied, exactly once, for the wait begun before the crash", async () => {
    const first = crashySup;
    const waited = stack.client.updatePolicy({ sandbox: crashy, policy: policy({ ...base, late: { host: "late.example.com" } }), idempotencyKey: "crashy-v2", wait: { timeoutMs: 25_000 } });
    // The gateway has associated the operation with the snapshot it sends: the supervisor is applying it.
    const ref = { sandbox: crashy, idempotencyKey: "crashy-v2", request: { policy: policy({ ...base, late: { host: "late.example.com" } }) } };
    await until(async () => (await stack.client.getOperation(ref)).target !== undefined, "the update to be delivered");
    await sleep(300);
    await first.kill("SIGKILL");
    expect(processed(first, crashy).map((p) => p.version)).toEqual([1]);
    expect((await stack.client.getOperation(ref)).state).toBe("pending");

    const second = stack.startSupervisor({ sandbox: crashy });
    const res = await waited;
    expect(res.completion, `see ${stack.logFile}`).toMatchObject({ state: "applied", outcome: "applied" });
    expect(res.policyVersion).toBe(2);
    await until(() => processed(second, crashy).length > 0, "the new supervisor's log");
    expect(processed(second, crashy)).toEqual([{ version: 2, outcome: "APPLIED" }]);
    expect(stack.effective(crashy)?.revision?.policyVersion).toBe(2);
    expect((await stack.raw.listSandboxPolicies({ sandbox: crashy, workspaceScope: workspaceScope() })).revisions.map((r) => r.version).sort()).toEqual([1, 2]);
  });
});

describe("supervisors that do not acknowledge", () => {
  it("with --drop-acks even the bootstrap goes unacknowledged: the sandbox stays PROVISIONING, nothing is pushed, the wait times out resumably, and an acknowledging supervisor completes it", async () => {
    const deaf = muteSup;
    // It received and applied the bootstrap locally, but never said so.
    await until(() => stack.effective(mute)?.revision?.policyVersion === 1, "the supervisor to apply the bootstrap");
    let timeout: CompletionTimeoutError | undefined;
    try {
      await stack.client.updatePolicy({ sandbox: mute, policy: policy({ ...base, quiet: { host: "quiet.example.com" } }), wait: { timeoutMs: 2_500 } });
    } catch (err) {
      if (!(err instanceof CompletionTimeoutError)) throw err;
      timeout = err;
    }
    expect(timeout?.reason).toBe("deadline");
    expect(timeout?.operationId).toBeDefined();
    expect((await stack.client.getOperation({ operationId: timeout!.operationId! })).state).toBe("pending");
    expect(await stack.phase(mute)).toBe(SandboxPhase.PROVISIONING);
    // Without a bootstrap result the session never starts live delivery: no update, no re-send.
    expect(processed(deaf, mute).map((p) => p.version)).toEqual([1]);
    expect(gatewayLines(mute, "supervisor bootstrapped")).toEqual([]);
    expect(gatewayLines(mute, RESEND)).toEqual([]);

    await deaf.kill("SIGTERM");
    const hearing = stack.startSupervisor({ sandbox: mute });
    const c = await stack.client.awaitCompletion(timeout!.ref!, { timeoutMs: 15_000 });
    expect(c, `see ${stack.logFile}`).toMatchObject({ state: "applied", operationId: timeout!.operationId });
    await until(() => processed(hearing, mute).length > 0, "the new supervisor's log");
    expect(processed(hearing, mute)).toEqual([{ version: 2, outcome: "APPLIED" }]);
    await stack.waitPhase(mute, SandboxPhase.READY);
    // The gateway logs asynchronously: its line may land just after READY is readable.
    await until(() => gatewayLines(mute, "supervisor bootstrapped").length > 0, "the gateway's bootstrap log line");
    expect(gatewayLines(mute, "supervisor bootstrapped")).toHaveLength(1);
  });

  it("an update not acknowledged within --ack-timeout is re-sent while its operation stays pending, and the late result still completes it", async () => {
    const slowpoke = laggySup;
    const res = await stack.client.updatePolicy({ sandbox: laggy, policy: policy({ ...base, lag: { host: "lag.example.com" } }) });
    const c = await stack.client.awaitCompletion(res.handle, { timeoutMs: 10_000 });
    expect(c, `see ${stack.logFile}`).toMatchObject({ state: "applied", outcome: "applied" });
    // The gateway re-sent the update while the operation was still pending.
    const resends = gatewayLines(laggy, RESEND);
    expect(resends.length).toBeGreaterThanOrEqual(1);
    expect(Date.parse(resends[0]!.time as string)).toBeLessThan(c.completedAt!.getTime());
    // The re-sent copy reached the supervisor and was answered as a duplicate, not applied again.
    await until(() => processed(slowpoke, laggy).filter((p) => p.version === 2).length >= 2, "the supervisor to process the re-sent update", 10_000);
    const seen = processed(slowpoke, laggy).filter((p) => p.version === 2);
    expect(seen[0]).toEqual({ version: 2, outcome: "APPLIED" });
    expect(seen.slice(1).every((p) => p.outcome === "IGNORED_DUPLICATE"), JSON.stringify(seen)).toBe(true);
    expect((await stack.client.getOperation(res.handle)).state).toBe("applied");
  });
});
