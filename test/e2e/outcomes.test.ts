// Every terminal outcome of an update, through real processes: the SDK in this process, one
// gateway process on SQLite, reference supervisor processes (two fleets and a single sandbox with
// a local policy). Also coalescing of rapid updates and the refusal of a supervisor that cannot
// apply streamed configuration. One stack for the whole file.

import { writeFileSync } from "node:fs";
import { freePort } from "../../examples/free-port.js";
import { join } from "node:path";
import { toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Completion } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, PolicyStatus, SandboxPhase, SandboxPolicySchema, SupervisorHelloSchema, SupervisorMessageSchema, workspaceScope, type SupervisorMessage } from "openshell-config/raw";
import { create } from "@bufbuild/protobuf";
import { fleetNames, policy, startE2EStack, until, type E2EStack, type StackProcess } from "./stack.js";

const [web, audited, closed, reborn] = fleetNames("fast-", 4) as [string, string, string, string];
const [replaced, doomed, busy] = fleetNames("slow-", 3) as [string, string, string];
const pinned = "pinned";
const paused = "paused";
const legacy = "legacy";

const base = { github: { host: "api.github.com" } };
/** What the supervisor says about an endpoint with protocol "ftp". */
const FTP_REJECTED = 'protocol "ftp" is not supported';

/** A loopback port with nothing listening on it (see examples/free-port.ts for why not listen(0)). */
const closedPort = freePort;

let stack: E2EStack;
let fast: StackProcess;
let slow: StackProcess;
let unreachable: string;

beforeAll(async () => {
  unreachable = `127.0.0.1:${await closedPort()}`;
  stack = await startE2EStack({
    sandboxes: [web, audited, closed, reborn, replaced, doomed, busy, pinned, legacy],
    gatewayArgs: ["--reconcile", "250ms"],
  });
  await stack.createSandbox(web, policy(base));
  await stack.createSandbox(audited, policy(base, unreachable));
  // Invalid from the start: the supervisor never has a last known good policy for it.
  await stack.createSandbox(closed, policy({ ...base, files: { host: "files.example.com", protocol: "ftp" } }));
  for (const name of [reborn, replaced, doomed, busy, pinned, paused, legacy]) await stack.createSandbox(name, policy(base));
  await stack.raw.stopSandbox({ name: paused, workspaceScope: workspaceScope() });

  const localPolicy = join(stack.dir, "local-policy.json");
  writeFileSync(localPolicy, toJsonString(SandboxPolicySchema, policy({ internal: { host: "internal.example.com" } })));
  fast = stack.startSupervisor({ fleet: { prefix: "fast-", count: 4 } });
  // Slow enough that an update is still pending when the next commit or the delete arrives.
  slow = stack.startSupervisor({ fleet: { prefix: "slow-", count: 3 }, args: ["--apply-delay-ms", "400"] });
  stack.startSupervisor({ sandbox: pinned, args: ["--local-policy", localPolicy] });
  await Promise.all([web, audited, reborn, replaced, doomed, busy, pinned].map((n) => stack.waitPhase(n, SandboxPhase.READY, 30_000)));
  // Its bootstrap is refused (failed closed): the sandbox goes to ERROR, its session stays open.
  await stack.waitPhase(closed, SandboxPhase.ERROR, 30_000);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

/** Fails with the stack log's location, so a red test says where to look. */
function expectCompletion(c: Completion, expected: Partial<Completion>): void {
  expect(c, `see ${stack.logFile}`).toMatchObject(expected);
}

describe("every outcome through real processes", () => {
  it("an update the supervisor applies completes as applied, and the supervisor enforces exactly that version", async () => {
    const res = await stack.client.updatePolicy({ sandbox: web, policy: policy({ ...base, npm: { host: "registry.npmjs.org" } }), wait: { timeoutMs: 10_000 } });
    expectCompletion(res.completion, { state: "applied", outcome: "applied", error: undefined });
    expect(res.policyVersion).toBe(2);
    expect(res.completion.target).toMatchObject({ kind: "sandbox-config", policyVersion: 2 });
    const eff = stack.effective(web)!;
    expect(eff.source).toBe("gateway");
    expect(eff.revision?.policyVersion).toBe(2);
    expect(Object.keys(eff.policy.networkPolicies ?? {}).sort()).toEqual(["github", "npm"]);
  });

  it("an update whose middleware service is unreachable completes as applied/degraded, naming the service", async () => {
    const res = await stack.client.updatePolicy({ sandbox: audited, policy: policy({ ...base, pypi: { host: "pypi.org" } }, unreachable), wait: { timeoutMs: 10_000 } });
    expectCompletion(res.completion, { state: "applied", outcome: "degraded" });
    expect(res.completion.error).toMatch(/'audit-log'.*unreachable/);
    expect(res.completion.error).toContain(unreachable);
    const eff = stack.effective(audited)!;
    expect(eff.revision?.policyVersion).toBe(2);
    expect(eff.degradedServices).toEqual(["audit-log"]);
  });

  it("a rule the supervisor rejects fails with the supervisor's message, and the last known good policy stays in force", async () => {
    const before = stack.effective(web)!;
    const res = await stack.client.updatePolicy({ sandbox: web, policy: policy({ ...base, files: { host: "files.example.com", protocol: "ftp" } }), wait: { timeoutMs: 10_000 } });
    expectCompletion(res.completion, { state: "failed", outcome: "failed-retained-last-known-good" });
    expect(res.policyVersion).toBe(3);
    expect(res.completion.error).toContain(FTP_REJECTED);
    expect(res.completion.error).toContain('network_policies["files"]');
    const after = stack.effective(web)!;
    expect(after.revision?.policyVersion).toBe(2);
    expect(after.writtenAt).toBe(before.writtenAt);
    const v3 = (await stack.raw.getSandboxPolicyStatus({ sandbox: web, version: 3, workspaceScope: workspaceScope() })).revision;
    expect(v3).toMatchObject({ version: 3, status: PolicyStatus.FAILED });
    expect(v3?.loadError).toContain(FTP_REJECTED);
    expect((await stack.raw.getSandboxPolicyStatus({ sandbox: web, workspaceScope: workspaceScope() })).activeVersion).toBe(2);
  });

  it("without a last known good policy an invalid update fails closed (deny-all), and a valid one then makes the sandbox READY", async () => {
    expect(await stack.phase(closed)).toBe(SandboxPhase.ERROR);
    expect(stack.effective(closed)?.source).toBe("deny_all");
    const res = await stack.client.updatePolicy({
      sandbox: closed,
      policy: policy({ ...base, files: { host: "files.example.com", protocol: "ftp" }, more: { host: "more.example.com", protocol: "ftp" } }),
      wait: { timeoutMs: 10_000 },
    });
    expectCompletion(res.completion, { state: "failed", outcome: "failed-closed" });
    expect(res.completion.error).toContain(FTP_REJECTED);
    expect(stack.effective(closed)).toMatchObject({ source: "deny_all", policy: {} });
    expect(stack.effective(closed)!.reason).toContain(FTP_REJECTED);

    const fixed = await stack.client.updatePolicy({ sandbox: closed, policy: policy(base), wait: { timeoutMs: 10_000 } });
    expectCompletion(fixed.completion, { state: "applied", outcome: "applied" });
    expect(stack.effective(closed)).toMatchObject({ source: "gateway", revision: { policyVersion: fixed.policyVersion } });
    expect(await stack.phase(closed)).toBe(SandboxPhase.READY);
  });

  // The gateway builds every snapshot with policy_validation_failure_mode "retain_last_valid"
  // (gateway/src/model/snapshot.ts) and offers no way to ask for "fail_closed", so a sandbox WITH a
  // last known good policy cannot be made to fail closed end to end. The test above covers
  // failed-closed through the other path: no last known good policy.
  it.skip("with policy_validation_failure_mode fail_closed an invalid update fails closed although a last known good policy exists (the gateway cannot produce that mode)", () => {});

  it("of two quick updates the first is superseded before it is applied and the second is applied", async () => {
    const first = await stack.client.updatePolicy({ sandbox: replaced, policy: policy({ ...base, a: { host: "a.example.com" } }) });
    const second = await stack.client.updatePolicy({ sandbox: replaced, policy: policy({ ...base, b: { host: "b.example.com" } }) });
    expect(second.policyVersion).toBe(first.policyVersion + 1);
    const [c1, c2] = await Promise.all([stack.client.awaitCompletion(first.handle, { timeoutMs: 10_000 }), stack.client.awaitCompletion(second.handle, { timeoutMs: 10_000 })]);
    expectCompletion(c1, { state: "superseded", outcome: "ignored-stale" });
    expect(c1.error).toMatch(/newer desired revision/);
    expectCompletion(c2, { state: "applied", outcome: "applied" });
    await until(() => stack.effective(replaced)?.revision?.policyVersion === second.policyVersion, "the supervisor to enforce the second update");
    expect(Object.keys(stack.effective(replaced)!.policy.networkPolicies ?? {}).sort()).toEqual(["b", "github"]);
  });

  it("an update to a stopped sandbox completes at once as inactive", async () => {
    expect(await stack.phase(paused)).toBe(SandboxPhase.STOPPED);
    const res = await stack.client.updatePolicy({ sandbox: paused, policy: policy({ ...base, c: { host: "c.example.com" } }), wait: { timeoutMs: 5_000 } });
    expectCompletion(res.completion, { state: "inactive" });
    expect(res.completion.error).toMatch(/stopped/);
    expect(res.policyVersion).toBe(2);
  });

  it("deleting a sandbox while its supervisor is still applying an update cancels the update", async () => {
    const pending = await stack.client.updatePolicy({ sandbox: doomed, policy: policy({ ...base, d: { host: "d.example.com" } }) });
    expect(pending.operation?.state).toBe("pending");
    const waiting = stack.client.awaitCompletion(pending.handle, { timeoutMs: 10_000 });
    await stack.raw.deleteSandbox({ name: doomed, workspaceScope: workspaceScope() });
    const c = await waiting;
    expectCompletion(c, { state: "cancelled" });
    expect(c.error).toMatch(/no longer exists/);
    // The slow supervisor finishes its apply afterwards; the cancelled operation stays cancelled.
    await new Promise((r) => setTimeout(r, 600));
    expect((await stack.client.getOperation({ operationId: c.operationId })).state).toBe("cancelled");
  });

  // Until issue 29 (finding 2) the re-created sandbox got the old supervisor back, which then
  // enforced whatever policy whoever re-created the name chose.
  it("deleting a sandbox ends its supervisor's session, and a sandbox re-created under the same name is a new instance that supervisor is refused for, while its fleet carries on", async () => {
    const ends = () => stack.supervisorLines(fast, reborn, "supervisor stream ended; reconnecting");
    expect(ends()).toEqual([]);
    const first = (await stack.raw.getSandbox({ name: reborn, workspaceScope: workspaceScope() })).sandbox!.metadata!.id;
    await stack.raw.deleteSandbox({ name: reborn, workspaceScope: workspaceScope() });
    await until(() => ends().length > 0, "the deleted sandbox's session to end", 5_000);
    await stack.createSandbox(reborn, policy({ ...base, again: { host: "again.example.com" } }));
    const refused = await until(
      () => ends().find((l) => String(l.reason).includes(`the sandbox "${reborn}" this supervisor served (id ${first}) was deleted; a new instance needs its own credential`)),
      "the old supervisor's reconnect to be refused",
      15_000,
    );
    expect(refused.reason).toMatch(/^stream failed: \[PermissionDenied\] /);
    expect(await stack.phase(reborn)).toBe(SandboxPhase.PROVISIONING);
    expect(Object.keys(stack.effective(reborn)!.policy.networkPolicies ?? {})).toEqual(["github"]);
    expect(fast.running).toBe(true);
    const res = await stack.client.updatePolicy({ sandbox: web, policy: policy({ ...base, later: { host: "later.example.com" } }), wait: { timeoutMs: 10_000 } });
    expectCompletion(res.completion, { state: "applied", outcome: "applied" });
  });

  it("a sandbox with a local policy reports failed/retained-local-override and stores the gateway's policy without enforcing it", async () => {
    const res = await stack.client.updatePolicy({ sandbox: pinned, policy: policy({ ...base, e: { host: "e.example.com" } }), wait: { timeoutMs: 10_000 } });
    expectCompletion(res.completion, { state: "failed", outcome: "retained-local-override" });
    expect(res.completion.error).toMatch(/local policy/);
    const eff = stack.effective(pinned)!;
    expect(eff.source).toBe("local_override");
    expect(Object.keys(eff.policy.networkPolicies ?? {})).toEqual(["internal"]);
    expect(stack.gatewayDesired(pinned)).toMatchObject({ source: "gateway_desired", revision: { policyVersion: res.policyVersion } });
  });
});

describe("coalescing", () => {
  it("20 rapid updates all end applied or superseded within a bound, the last one applied, with fewer than 20 snapshots applied", async () => {
    const started = Date.now();
    const commits = [];
    for (let i = 0; i < 20; i++) {
      commits.push(await stack.client.updatePolicy({ sandbox: busy, policy: policy({ ...base, [`r${i}`]: { host: `r${i}.example.com` } }) }));
    }
    expect(commits.map((c) => c.policyVersion)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
    const completions = await Promise.all(commits.map((c) => stack.client.awaitCompletion(c.handle, { timeoutMs: 15_000 })));
    const elapsed = Date.now() - started;

    expect(completions.every((c) => c.state === "applied" || c.state === "superseded"), JSON.stringify(completions.map((c) => c.state))).toBe(true);
    expectCompletion(completions[19]!, { state: "applied", outcome: "applied" });
    for (const c of completions.filter((x) => x.state === "superseded")) expect(c.outcome).toBe("ignored-stale");
    expect(completions.filter((c) => c.state === "superseded").length).toBeGreaterThan(0);
    expect(elapsed).toBeLessThan(12_000);

    // What the supervisor saw: fewer snapshots than commits, versions only ever increasing.
    await until(() => stack.effective(busy)?.revision?.policyVersion === 21, "the supervisor to enforce version 21");
    const processed = stack.supervisorLines(slow, busy, "sandbox config processed").map((l) => l.policyVersion as number).filter((v) => v >= 2);
    expect(processed.length).toBeGreaterThan(0);
    expect(processed.length).toBeLessThan(20);
    expect(processed).toEqual([...processed].sort((a, b) => a - b));
    expect(new Set(processed).size).toBe(processed.length);
    expect(processed.at(-1)).toBe(21);
  });
});

describe("capability negotiation", () => {
  it("a supervisor whose hello lacks supports_config_apply is refused with FAILED_PRECONDITION telling it to upgrade", async () => {
    const client = createClient(OpenShell, createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }));
    const done = new AbortController();
    // The outgoing stream must be an async generator (connect calls its throw()); it stays open
    // like a real supervisor's until the call ends.
    async function* outgoing(): AsyncGenerator<SupervisorMessage> {
      yield create(SupervisorMessageSchema, {
        payload: {
          case: "hello",
          value: create(SupervisorHelloSchema, { sandboxId: legacy, instanceId: "legacy-1", connectionEpoch: 1n, supportsConfigSnapshots: true, supportsConfigApply: false }),
        },
      });
      await new Promise<void>((r) => done.signal.addEventListener("abort", () => r(), { once: true }));
    }
    const received: string[] = [];
    let error: unknown;
    try {
      for await (const m of client.connectSupervisor(outgoing(), { headers: { authorization: `Bearer ${stack.tokenFor(legacy)}` }, signal: done.signal, timeoutMs: 10_000 })) {
        received.push(m.payload.case ?? "empty");
      }
    } catch (err) {
      error = err;
    } finally {
      done.abort();
    }
    expect(received).toEqual([]);
    const ce = ConnectError.from(error);
    expect(ce.code).toBe(Code.FailedPrecondition);
    expect(ce.rawMessage).toMatch(/supports_config_apply/);
    expect(ce.rawMessage).toMatch(/upgrade the supervisor/);
    expect(await stack.phase(legacy)).toBe(SandboxPhase.PROVISIONING);
  });
});
