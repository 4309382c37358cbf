// Fleet rollouts against real processes: one gateway on SQLite and one supervisor process running
// 260 sandboxes. Every rollout's per-sandbox outcome is checked against what the gateway stored:
// the sandbox's policy version says how many revisions a rollout created.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workspaceScope } from "openshell-config/raw";
import { restoreRolloutState, rollout, type RolloutEvent, type RolloutState } from "openshell-config/rollout";
import { fleetNames, policy, startE2EStack, untilFleetReady, type E2EStack, type RuleSpec } from "./stack.js";

const names = fleetNames("ro-", 260);
const groupA = names.slice(0, 200);
const groupB = names.slice(200);
// In group B, every third of the first 30 sandboxes has an L4 "api" endpoint: L7 rules added to it
// are invalid there (the supervisor rejects them) and valid everywhere else.
const l4 = new Set(groupB.filter((_, i) => i < 30 && i % 3 === 0));
const stopped = "ro-stopped";

const base: Record<string, RuleSpec> = { github: { host: "github.com" } };
const withApi = (protocol: string) => policy({ ...base, api: { host: "api.example.com", protocol } });

let stack: E2EStack;

/** Each sandbox's newest desired policy version at the gateway (one ListSandboxes page). */
async function policyVersions(): Promise<Map<string, number>> {
  const res = await stack.raw.listSandboxes({ pageSize: 1000, workspaceScope: workspaceScope() });
  return new Map(res.sandboxes.map((sb) => [sb.metadata!.name, sb.status!.desiredPolicyVersion]));
}

beforeAll(async () => {
  stack = await startE2EStack({ sandboxes: names });
  for (const name of groupA) await stack.raw.createSandbox({ name, labels: { env: "prod", fleet: "a" }, spec: { policy: policy(base) }, workspaceScope: workspaceScope() });
  for (const name of groupB) {
    await stack.raw.createSandbox({ name, labels: { env: "prod", fleet: "b" }, spec: { policy: withApi(l4.has(name) ? "" : "rest") }, workspaceScope: workspaceScope() });
  }
  await stack.raw.createSandbox({ name: stopped, labels: { fleet: "s" }, spec: { policy: policy(base) }, workspaceScope: workspaceScope() });
  await stack.raw.stopSandbox({ name: stopped, workspaceScope: workspaceScope() });
  stack.startSupervisor({ fleet: { prefix: "ro-", count: names.length } });
  await untilFleetReady(stack.raw, names.length, "env=prod");
}, 150_000);

afterAll(async () => {
  await stack?.stop();
});

describe("rollout against a real fleet", () => {
  it("applies one policy to every sandbox a label selects, with one revision each", async () => {
    const before = await policyVersions();
    const events: RolloutEvent[] = [];
    const result = await rollout(stack.client, {
      labelSelector: "fleet=a",
      policy: policy({ ...base, npm: { host: "registry.npmjs.org" } }),
      concurrency: 32,
      onProgress: (e) => events.push(e),
    });

    expect(result.complete, `see ${stack.logFile}`).toBe(true);
    expect(result.counts).toMatchObject({ total: 200, byStatus: { completed: 200, pending: 0, error: 0, skipped: 0 }, byState: { applied: 200 } });
    expect(result.counts.byOutcome).toEqual({ applied: 200 });
    expect(result.halted).toBe(false);
    expect(result.sandboxes.map((r) => r.sandbox)).toEqual(groupA);
    expect(result.slowest).toHaveLength(5);
    expect(result.slowest[0]!.durationMs).toBeGreaterThanOrEqual(result.slowest[4]!.durationMs);
    const after = await policyVersions();
    for (const name of groupA) expect(after.get(name), name).toBe(before.get(name)! + 1);
    for (const name of groupB) expect(after.get(name), name).toBe(before.get(name));

    expect(events[0]).toMatchObject({ type: "started", sandboxes: groupA, alreadyCommitted: 0 });
    expect(events.filter((e) => e.type === "sent")).toHaveLength(200);
    const progress = events.flatMap((e) => (e.type === "result" ? [e.progress.done] : []));
    expect(progress).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(events.at(-1)).toMatchObject({ type: "finished", result: { id: result.id } });
  }, 60_000);

  it("halts new commits after maxFailures sandboxes rejected the change, and commits nothing more", async () => {
    const before = await policyVersions();
    const result = await rollout(stack.client, {
      labelSelector: "fleet=b",
      mergeOperations: [
        { operation: { case: "addAllowRules", value: { target: { ruleName: "api", anyBinary: true }, rules: [{ allow: { method: "GET", path: "/v1/**" } }] } } },
      ],
      concurrency: 4,
      maxFailures: 3,
    });

    expect(result.halted, `see ${stack.logFile}`).toBe(true);
    expect(result.complete).toBe(false);
    expect(result.failures).toBeGreaterThanOrEqual(3);
    const skipped = result.sandboxes.filter((r) => r.status === "skipped");
    expect(skipped.length).toBeGreaterThan(0);
    for (const r of skipped) expect(r).toMatchObject({ reason: "halted" });
    for (const r of result.sandboxes) {
      if (r.status !== "completed") continue;
      if (l4.has(r.sandbox)) {
        expect(r.completion).toMatchObject({ state: "failed", outcome: "failed-retained-last-known-good" });
        expect(r.completion.error).toMatch(/L7 rules are not allowed on an L4 endpoint/);
      } else expect(r.completion.state).toBe("applied");
    }
    expect(result.counts.byState.failed).toBe(result.failures);
    // Only committed sandboxes got a revision; a halted rollout left the others untouched.
    const after = await policyVersions();
    const committed = new Set(Object.keys(result.state.refs));
    expect(committed.size).toBe(result.sandboxes.length - skipped.length);
    for (const name of groupB) expect(after.get(name), name).toBe(before.get(name)! + (committed.has(name) ? 1 : 0));
  }, 60_000);

  it("resumes an aborted rollout from its saved state without a second revision for any sandbox", async () => {
    const before = await policyVersions();
    const change = policy({ ...base, pypi: { host: "pypi.org" } });
    const controller = new AbortController();
    const first = await rollout(stack.client, {
      id: "resume-test",
      sandboxes: groupA,
      policy: change,
      concurrency: 8,
      signal: controller.signal,
      onProgress: (e) => {
        if (e.type === "result" && e.progress.done === 40) controller.abort();
      },
    });
    expect(first.aborted).toBe(true);
    expect(first.complete).toBe(false);
    expect(first.counts.byStatus.skipped).toBeGreaterThan(100);
    expect(first.state.id).toBe("resume-test");

    // Another process would read the state back from a file.
    const saved: RolloutState = restoreRolloutState(JSON.stringify(first.state));
    const events: RolloutEvent[] = [];
    const run = rollout(stack.client, { resume: saved, concurrency: 32 });
    for await (const e of run) events.push(e);
    const second = await run;
    expect(second.id).toBe("resume-test");
    expect(second.complete, `see ${stack.logFile}`).toBe(true);
    expect(second.counts.byState.applied).toBe(200);
    expect(events[0]).toMatchObject({ type: "started", alreadyCommitted: Object.keys(first.state.refs).length });
    expect(events.at(-1)).toMatchObject({ type: "finished" });

    // Re-running by id alone (same change, no state) replays every commit.
    const third = await rollout(stack.client, { id: "resume-test", sandboxes: groupA, policy: change, concurrency: 32 });
    expect(third.counts.byState.applied).toBe(200);

    const after = await policyVersions();
    for (const name of groupA) expect(after.get(name), name).toBe(before.get(name)! + 1);
    for (const r of [...second.sandboxes, ...third.sandboxes]) {
      expect(r.status).toBe("completed");
      if (r.status === "completed") expect(r.completion.target).toMatchObject({ policyVersion: before.get(r.sandbox)! + 1 });
    }
  }, 90_000);

  it("counts a stopped sandbox as inactive, not as a failure", async () => {
    // One at a time, the stopped sandbox first: were it a failure, the rollout would halt before the second.
    const result = await rollout(stack.client, {
      sandboxes: [stopped, groupA[0]!],
      settings: { key: "log_level", value: "debug" },
      concurrency: 1,
      maxFailures: 1,
    });
    expect(result.counts.byState).toEqual({ applied: 1, inactive: 1 });
    expect(result.failures).toBe(0);
    expect(result.halted).toBe(false);
    expect(result.sandboxes[0]).toMatchObject({ status: "completed", sandbox: stopped, completion: { state: "inactive" } });
  }, 30_000);

  it("reports a sandbox that does not exist as an error result with NotFoundError", async () => {
    const result = await rollout(stack.client, { sandboxes: [groupA[1]!, "ro-missing"], settings: { key: "log_level", value: "info" } });
    expect(result.sandboxes[0]).toMatchObject({ status: "completed", completion: { state: "applied" } });
    expect(result.sandboxes[1]).toMatchObject({ status: "error", sandbox: "ro-missing", error: { code: "not-found" } });
    expect(result.failures).toBe(1);
  }, 30_000);
});
