// Undoing rollouts started without waves or a rollback mode, and what "identical" means after
// one, against real processes (a gateway on SQLite, one supervisor process hosting the fleet).
// Issue 30, items 7 and 14: every rollout records each sandbox's before-state, so every one can be
// undone; a policy whose content equals the sandbox's latest revision is an ignored duplicate
// whatever annotations the rollout and its undo left on the sandbox.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workspaceScope } from "openshell-config/raw";
import { rollout, undoRollout } from "openshell-config/rollout";
import { fleetNames, policy, startE2EStack, untilFleetReady, type E2EStack, type RuleSpec } from "./stack.js";

const names = fleetNames("ru-", 6);
const solo = names.slice(0, 1);
const several = names.slice(1, 4);
const dup = names.slice(4);
const base: Record<string, RuleSpec> = { github: { host: "github.com" } };

let stack: E2EStack;

/** Each sandbox's latest policy revision: its version and hash. */
async function latest(sandboxes: readonly string[]): Promise<Map<string, { version: number; hash: string }>> {
  const out = new Map<string, { version: number; hash: string }>();
  for (const sandbox of sandboxes) {
    const r = await stack.raw.getSandboxPolicyStatus({ sandbox, version: 0, workspaceScope: workspaceScope() });
    out.set(sandbox, { version: r.revision!.version, hash: r.revision!.policyHash });
  }
  return out;
}

beforeAll(async () => {
  stack = await startE2EStack({ sandboxes: names });
  const group = (name: string) => (solo.includes(name) ? "solo" : several.includes(name) ? "several" : "dup");
  // Each sandbox starts on a policy of its own, so "back on its before-state" is its own.
  for (const [i, name] of names.entries()) {
    await stack.raw.createSandbox({ name, labels: { group: group(name) }, spec: { policy: policy({ ...base, [`own${i}`]: { host: `own${i}.example.com` } }) }, workspaceScope: workspaceScope() });
  }
  stack.startSupervisor({ fleet: { prefix: "ru-", count: names.length } });
  await untilFleetReady(stack.raw, names.length);
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

describe("undoing a rollout without waves (issue 30, item 7)", () => {
  for (const [label, targets] of [
    ["one sandbox", solo],
    ["several sandboxes", several],
  ] as const) {
    it(`returns ${label} to the policy each had before, as a new revision, and the state says rolled back`, async () => {
      const group = targets === solo ? "solo" : "several";
      const before = await latest(targets);
      const done = await rollout(stack.client, { labelSelector: `group=${group}`, policy: policy({ ...base, npm: { host: "registry.npmjs.org" } }) });
      expect(done.phase, `see ${stack.logFile}`).toBe("complete");
      // Recorded without waves or a rollback mode: what each sandbox had.
      expect(Object.keys(done.state.before).sort()).toEqual([...targets]);
      for (const s of targets) expect(done.state.before[s], s).toEqual({ policyVersion: before.get(s)!.version });

      const undone = await undoRollout(stack.client, done.state);
      expect(undone.phase, `see ${stack.logFile}`).toBe("rolled-back");
      expect(undone.rollback).toMatchObject({ rolledBack: targets.length, leftAlone: [], failed: [], pending: [] });
      const after = await latest(targets);
      for (const s of targets) {
        expect(after.get(s)!.version, s).toBe(before.get(s)!.version + 2);
        expect(after.get(s)!.hash, s).toBe(before.get(s)!.hash);
      }
      expect(undone.state.phase).toBe("done");
      expect(Object.keys(undone.state.undoRefs).sort()).toEqual([...targets]);
    }, 60_000);
  }
});

describe("an identical policy after a rollout and its undo (issue 30, item 14)", () => {
  it("is an ignored duplicate with no new revision: the content decides, not the rollout's annotations", async () => {
    const [sandbox] = dup as [string];
    const own = await stack.client.getConfig({ sandbox });
    const ownPolicy = own.desired.policy!;
    const rolled = policy({ ...base, pypi: { host: "pypi.org" } });
    const done = await rollout(stack.client, { labelSelector: "group=dup", policy: rolled, annotations: { "example.com/change": "CHG-1" } });
    expect(done.phase, `see ${stack.logFile}`).toBe("complete");

    // The rolled-out policy again, by hand, with other annotations: nothing to change.
    const v = (await latest([sandbox])).get(sandbox)!;
    const again = await stack.client.updatePolicy({ sandbox, policy: rolled, wait: { timeoutMs: 20_000 } });
    expect(again.completion).toMatchObject({ state: "applied", outcome: "ignored-duplicate" });
    expect(again.policyVersion).toBe(v.version);
    expect((await latest([sandbox])).get(sandbox)).toEqual(v);

    const undone = await undoRollout(stack.client, done.state);
    expect(undone.phase).toBe("rolled-back");
    const back = (await latest([sandbox])).get(sandbox)!;
    expect(back.version).toBe(v.version + 1);
    // The policy it had before, sent again, is no change, though the sandbox carries the undo's annotation.
    const same = await stack.client.updatePolicy({ sandbox, policy: ownPolicy, wait: { timeoutMs: 20_000 } });
    expect(same.annotations).toMatchObject({ "openshell-config/rollback-of": done.id, "example.com/change": "CHG-1" });
    expect(same.completion).toMatchObject({ state: "applied", outcome: "ignored-duplicate" });
    expect(same.policyVersion).toBe(back.version);
    expect((await latest([sandbox])).get(sandbox)).toEqual(back);
    // With annotations of its own too.
    const annotated = await stack.client.updatePolicy({ sandbox, policy: ownPolicy, annotations: { "example.com/change": "CHG-2" }, wait: { timeoutMs: 20_000 } });
    expect(annotated.completion).toMatchObject({ state: "applied", outcome: "ignored-duplicate" });
    expect((await latest([sandbox])).get(sandbox)).toEqual(back);
  }, 90_000);
});
