// Progressive rollouts against real processes: one gateway on SQLite and one supervisor process
// hosting the fleet. Waves, gates and rollbacks are checked against what the gateway stored:
// each sandbox's desired policy version says how many revisions the rollout (and its rollback)
// created, and its effective policy what it was returned to.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PolicyMergeOperationInput } from "openshell-config";
import { workspaceScope } from "openshell-config/raw";
import { rollout, undoRollout, type RolloutEvent } from "openshell-config/rollout";
import { fleetNames, policy, startE2EStack, untilFleetReady, type E2EStack, type RuleSpec } from "./stack.js";

const names = fleetNames("rw-", 200);
const groupA = names.slice(0, 150);
const groupB = names.slice(150, 190);
const groupS = names.slice(190);
// In group B every fifth sandbox has an L4 "api" endpoint: L7 rules added to it are invalid there.
const l4 = new Set(groupB.filter((_, i) => i % 5 === 0));

const base: Record<string, RuleSpec> = { github: { host: "github.com" } };
const withApi = (protocol: string) => policy({ ...base, api: { host: "api.example.com", protocol } });
const addL7: PolicyMergeOperationInput[] = [
  { operation: { case: "addAllowRules", value: { target: { ruleName: "api", anyBinary: true }, rules: [{ allow: { method: "GET", path: "/v1/**" } }] } } },
];

let stack: E2EStack;

async function policyVersions(): Promise<Map<string, number>> {
  const res = await stack.raw.listSandboxes({ pageSize: 1000, workspaceScope: workspaceScope() });
  return new Map(res.sandboxes.map((sb) => [sb.metadata!.name, sb.status!.desiredPolicyVersion]));
}

/** The network policy names and L7 rule counts of the sandbox's desired policy. */
async function desiredRules(sandbox: string): Promise<string> {
  const cfg = await stack.client.getConfig({ sandbox });
  const np = cfg.desired.policy?.networkPolicies ?? {};
  return Object.keys(np)
    .sort()
    .map((k) => `${k}:${np[k]!.endpoints.map((e) => `${e.protocol}/${e.rules.length}`).join(",")}`)
    .join(" ");
}

beforeAll(async () => {
  stack = await startE2EStack({ sandboxes: names });
  for (const name of groupA) await stack.raw.createSandbox({ name, labels: { fleet: "a" }, spec: { policy: policy(base) }, workspaceScope: workspaceScope() });
  for (const name of groupB) await stack.raw.createSandbox({ name, labels: { fleet: "b" }, spec: { policy: withApi(l4.has(name) ? "" : "rest") }, workspaceScope: workspaceScope() });
  for (const name of groupS) await stack.raw.createSandbox({ name, labels: { fleet: "s" }, spec: { policy: policy(base) }, workspaceScope: workspaceScope() });
  stack.startSupervisor({ fleet: { prefix: "rw-", count: names.length } });
  await untilFleetReady(stack.raw, names.length);
}, 150_000);

afterAll(async () => {
  await stack?.stop();
});

describe("progressive rollouts against a real fleet", () => {
  it("sends a clean rollout in three waves of the planned sizes, every gate passing, one revision per sandbox", async () => {
    const before = await policyVersions();
    const events: RolloutEvent[] = [];
    const result = await rollout(stack.client, {
      id: "waves-clean",
      labelSelector: "fleet=a",
      policy: policy({ ...base, npm: { host: "registry.npmjs.org" } }),
      waves: [1, "10%", "100%"],
      concurrency: 32,
      onProgress: (e) => events.push(e),
    });
    expect(result.phase, `see ${stack.logFile}`).toBe("complete");
    expect(result.waves.map((w) => w.sandboxes.length)).toEqual([1, 14, 135]);
    expect(result.waves.map((w) => w.gate)).toEqual(["passed", "passed", "passed"]);
    expect(result.counts.byState).toEqual({ applied: 150 });
    expect(new Set(result.waves.flatMap((w) => w.sandboxes))).toEqual(new Set(groupA));
    // A wave starts only after the one before it has every result.
    const order = events.flatMap((e) => (e.type === "wave-started" ? ["w"] : e.type === "result" ? ["r"] : []));
    expect(order.join("")).toBe(`w${"r".repeat(1)}w${"r".repeat(14)}w${"r".repeat(135)}`);
    for (const r of result.sandboxes) expect(result.waves[r.wave]!.sandboxes).toContain(r.sandbox);
    const after = await policyVersions();
    for (const name of groupA) expect(after.get(name), name).toBe(before.get(name)! + 1);
  }, 60_000);

  it("rolls back a canary that fails on one of its sandboxes: every changed sandbox back on its previous policy with one rollback revision, nothing sent to later waves", async () => {
    const before = await policyVersions();
    const rulesBefore = new Map(await Promise.all(groupB.map(async (s) => [s, await desiredRules(s)] as const)));
    const bad = [...l4][0]!;
    const good = groupB.filter((s) => !l4.has(s)).slice(0, 3);
    const events: RolloutEvent[] = [];
    const result = await rollout(stack.client, {
      id: "waves-canary-fails",
      labelSelector: "fleet=b",
      mergeOperations: addL7,
      waves: [[...good, bad], "50%", "100%"],
      rollback: "on-halt",
      concurrency: 4,
      onProgress: (e) => events.push(e),
    });
    expect(result.phase, `see ${stack.logFile}`).toBe("rolled-back");
    expect(result.halted).toBe(true);
    expect(result.gateFailure).toEqual({ wave: 0, reason: "wave 1 (canary): 1 of 4 failed, limit 1" });
    expect(result.waves.map((w) => w.gate)).toEqual(["failed", "not-reached", "not-reached"]);
    expect(result.rollback).toEqual({ rolledBack: 4, leftAlone: [], failed: [], pending: [] });
    const canary = new Set([...good, bad]);
    const after = await policyVersions();
    for (const r of result.sandboxes) {
      if (canary.has(r.sandbox)) {
        expect(r.rollback, r.sandbox).toMatchObject({ status: "completed", completion: { state: "applied" } });
        expect(after.get(r.sandbox), r.sandbox).toBe(before.get(r.sandbox)! + 2);
        expect(await desiredRules(r.sandbox), r.sandbox).toBe(rulesBefore.get(r.sandbox));
      } else {
        expect(r).toMatchObject({ status: "skipped", reason: "halted" });
        expect(after.get(r.sandbox), r.sandbox).toBe(before.get(r.sandbox));
      }
    }
    expect(Object.keys(result.state.undoRefs).sort()).toEqual([...canary].sort());
    expect(events.filter((e) => e.type === "sent")).toHaveLength(4);
    expect(events.find((e) => e.type === "gate")).toMatchObject({ wave: 0, verdict: "failed" });
    expect(events.filter((e) => e.type === "rollback-result")).toHaveLength(4);
    // The rollback revision is marked as such.
    const history = await stack.raw.listSandboxPolicies({ sandbox: good[0]!, pageSize: 1, workspaceScope: workspaceScope() });
    expect(history.revisions[0]!.provenance).toMatchObject({ "openshell-config/rollback-of": "waves-canary-fails" });

    // Undoing again (e.g. a second operator) replays: no further revision.
    const again = await undoRollout(stack.client, result.state);
    expect(again.rollback).toMatchObject({ rolledBack: 4 });
    const later = await policyVersions();
    for (const s of canary) expect(later.get(s), s).toBe(before.get(s)! + 2);
  }, 60_000);

  it("leaves alone a sandbox someone else changed between its wave and the rollback, and reports it", async () => {
    const [a, b] = groupB.filter((s) => !l4.has(s)).slice(3, 5) as [string, string];
    const bad = [...l4][1]!;
    const before = await policyVersions();
    const result = await rollout(stack.client, {
      id: "waves-changed-by-others",
      sandboxes: [a, b, bad],
      mergeOperations: addL7,
      waves: [[a, b], [bad]],
      gate: { pause: 1_000 },
      rollback: "on-halt",
      onProgress: (e) => {
        // During the pause after wave 1: another operator changes `a`.
        if (e.type === "paused") void stack.client.updatePolicy({ sandbox: a, policy: withApi("rest"), annotations: { who: "someone-else" } });
      },
    });
    expect(result.phase, `see ${stack.logFile}`).toBe("rolled-back");
    expect(result.gateFailure?.wave).toBe(1);
    expect(result.rollback).toEqual({ rolledBack: 2, leftAlone: [{ sandbox: a, reason: "changed-by-others" }], failed: [], pending: [] });
    expect(result.sandboxes[0]!.rollback).toMatchObject({ status: "changed-by-others" });
    const after = await policyVersions();
    expect(after.get(a)).toBe(before.get(a)! + 2); // ours, then theirs; no rollback
    expect(after.get(b)).toBe(before.get(b)! + 2); // ours, then the rollback
    expect(after.get(bad)).toBe(before.get(bad)! + 2);
    expect(result.state.undoRefs[a]).toBeUndefined();
  }, 60_000);

  it("rolls a settings rollout back: a sandbox that had its own value gets it again, one that had none loses the setting", async () => {
    const [withValue, without] = groupS as [string, string];
    await stack.client.updateSettings({ sandbox: withValue, key: "log_level", value: "info", wait: true });
    const first = await rollout(stack.client, { id: "waves-settings", sandboxes: [withValue, without], settings: { key: "log_level", value: "debug" }, waves: [1, "100%"] });
    expect(first.phase, `see ${stack.logFile}`).toBe("complete");
    expect((await stack.client.getConfig({ sandbox: without })).desired.settings.log_level).toMatchObject({ value: "debug", scope: "sandbox" });

    const undone = await undoRollout(stack.client, first.state);
    expect(undone.phase).toBe("rolled-back");
    expect(undone.rollback).toEqual({ rolledBack: 2, leftAlone: [], failed: [], pending: [] });
    expect((await stack.client.getConfig({ sandbox: withValue })).desired.settings.log_level).toEqual({ value: "info", scope: "sandbox" });
    expect((await stack.client.getConfig({ sandbox: without })).desired.settings.log_level?.scope ?? "absent").not.toBe("sandbox");
  }, 60_000);
});
