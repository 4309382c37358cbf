// Wave planning, gates and the rollout state's restore, as pure functions.

import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../../src/index.js";
import { restoreRolloutState } from "../../src/rollout.js";
import { fnv1a, planWaves, shuffleFor, type Gate } from "../../src/rollout/waves.js";
import { failsGate, judgeWave } from "../../src/rollout/gate.js";
import type { SandboxRolloutResult } from "../../src/rollout/result.js";

const base: Gate = { maxFailures: 1, maxTotalFailures: null, failOnDegraded: false, pause: null };
const fleet = (n: number) => Array.from({ length: n }, (_, i) => `sb-${String(i).padStart(3, "0")}`);

describe("planWaves", () => {
  it("turns cumulative counts and percentages into wave sizes, rounding percentages up", () => {
    const waves = planWaves([1, "10%", "50%", "100%"], fleet(205), "r1", base);
    expect(waves.map((w) => w.sandboxes.length)).toEqual([1, 20, 82, 102]);
    expect(new Set(waves.flatMap((w) => w.sandboxes)).size).toBe(205);
  });

  it("adds a last wave with the rest, and drops waves that would add nobody", () => {
    expect(planWaves([1, "10%"], fleet(5), "r1", base).map((w) => w.sandboxes.length)).toEqual([1, 4]);
    expect(planWaves([2, 50], fleet(5), "r1", base).map((w) => w.sandboxes.length)).toEqual([2, 3]);
  });

  it("keeps a named wave's own sandboxes, in the given order, and counts them towards later sizes", () => {
    const waves = planWaves([["sb-009", "sb-003"], 5, "100%"], fleet(10), "r1", base);
    expect(waves[0]!.sandboxes).toEqual(["sb-009", "sb-003"]);
    expect(waves.map((w) => w.sandboxes.length)).toEqual([2, 3, 5]);
    expect(waves[1]!.sandboxes).not.toContain("sb-009");
  });

  it("orders the unnamed sandboxes by a hash of rollout id and name: the same for the same id, different for another", () => {
    const a = planWaves([3], fleet(50), "rollout-a", base)[0]!.sandboxes;
    expect(planWaves([3], [...fleet(50)].reverse(), "rollout-a", base)[0]!.sandboxes).toEqual(a);
    expect(planWaves([3], fleet(50), "rollout-b", base)[0]!.sandboxes).not.toEqual(a);
    expect(shuffleFor("x", ["b", "a"])).toEqual(shuffleFor("x", ["a", "b"]));
    expect(fnv1a("")).toBe(0x811c9dc5);
    expect(fnv1a("a")).toBe(0xe40c292c);
  });

  it("resolves each wave's gate over the rollout's, field by field", () => {
    const waves = planWaves([{ size: 1, gate: { pause: "approval" } }, { size: "100%", gate: { maxFailures: 3 } }], fleet(4), "r", base);
    expect(waves[0]!.gate).toEqual({ ...base, pause: "approval" });
    expect(waves[1]!.gate).toEqual({ ...base, maxFailures: 3 });
  });

  const bad: [string, unknown, string][] = [
    ["an empty list", [], "waves"],
    ["a zero size", [0], "waves[0]"],
    ["a fraction", [1.5], "waves[0]"],
    ["a percentage above 100", [1, "150%"], "waves[1]"],
    ["a percentage that is no number", ["ten%"], "waves[0]"],
    ["counts that do not increase", [5, 5], "waves[1]"],
    ["percentages that decrease", ["50%", "10%"], "waves[1]"],
    ["a name that is not a target", [["nope"]], "waves[0]"],
    ["a name in two waves", [["sb-001"], ["sb-001"]], "waves[1]"],
    ["an object with neither size nor sandboxes", [{}], "waves[0]"],
    ["a gate with maxFailures 0", [{ size: 1, gate: { maxFailures: 0 } }], "waves[0].gate.maxFailures"],
    ["a bad pause", [{ size: 1, gate: { pause: "later" } }], "waves[0].gate.pause"],
  ];
  it.each(bad)("rejects %s with InvalidArgumentError naming the wave", (_what, waves, field) => {
    let error: unknown;
    try {
      planWaves(waves, fleet(10), "r", base);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toMatchObject({ field });
  });
});

describe("gates", () => {
  const completed = (state: string, outcome = "applied") => ({ status: "completed", sandbox: "s", wave: 0, completion: { state, outcome } }) as unknown as SandboxRolloutResult;
  const pending = { status: "pending", sandbox: "p", wave: 0 } as unknown as SandboxRolloutResult;

  it("count failed, cancelled and errored results, and degraded ones only with failOnDegraded", () => {
    expect(failsGate(completed("failed"), base)).toBe(true);
    expect(failsGate(completed("cancelled"), base)).toBe(true);
    expect(failsGate(completed("inactive"), base)).toBe(false);
    expect(failsGate(completed("applied", "degraded"), base)).toBe(false);
    expect(failsGate(completed("applied", "degraded"), { failOnDegraded: true })).toBe(true);
  });

  it("fail with a sentence naming the wave and the limit, stay pending while a result is open, else pass", () => {
    expect(judgeWave(base, [completed("failed")], 1, "wave 1 (canary)")).toEqual({ verdict: "failed", reason: "wave 1 (canary): 1 of 1 failed, limit 1" });
    expect(judgeWave({ ...base, maxFailures: 5, maxTotalFailures: 3 }, [completed("failed")], 3, "wave 2").reason).toBe("wave 2: 3 failed in the rollout so far, limit 3");
    expect(judgeWave(base, [completed("applied"), pending], 0, "wave 2").verdict).toBe("pending");
    expect(judgeWave(base, [completed("applied")], 0, "wave 2")).toEqual({ verdict: "passed", reason: "wave 2: 1 of 1 succeeded" });
  });
});

describe("restoreRolloutState across formats", () => {
  const v1 = { kind: "openshell-config/rollout@1", id: "r1", request: { settingKey: "k", settingValue: { stringValue: "v" } }, concurrency: 4, maxFailures: 2, sandboxes: ["a", "b"], refs: {} };
  const gate = { maxFailures: 1, maxTotalFailures: null, failOnDegraded: false, pause: null };
  const v2 = { ...v1, kind: "openshell-config/rollout@2", waves: [{ sandboxes: ["a"], gate }, { sandboxes: ["b"], gate }], wave: 1, phase: "paused", rollback: "on-halt", before: { a: {} }, undoRefs: {} };

  it("reads an @1 state as one wave halting after its maxFailures, rolling nothing back", () => {
    expect(restoreRolloutState(JSON.stringify(v1))).toMatchObject({
      kind: "openshell-config/rollout@2",
      waves: [{ sandboxes: ["a", "b"], gate: { maxFailures: 2, maxTotalFailures: 2, failOnDegraded: false, pause: null } }],
      wave: 0,
      phase: "running",
      rollback: "never",
      before: {},
      undoRefs: {},
    });
  });

  it("reads an @2 state back as it was", () => {
    expect(restoreRolloutState(JSON.stringify(v2))).toEqual(v2);
  });

  const cases: [string, unknown, string][] = [
    ["waves that are not a list", { ...v2, waves: {} }, "state.waves"],
    ["a wave naming a non-target", { ...v2, waves: [{ sandboxes: ["a", "z"], gate }] }, "state.waves[0].sandboxes"],
    ["waves that miss a target", { ...v2, waves: [{ sandboxes: ["a"], gate }], wave: 0 }, "state.waves"],
    ["a bad gate", { ...v2, waves: [{ sandboxes: ["a"], gate: { ...gate, maxFailures: 0 } }, { sandboxes: ["b"], gate }] }, "state.waves[0].gate.maxFailures"],
    ["a wave index past the end", { ...v2, wave: 3 }, "state.wave"],
    ["an unknown phase", { ...v2, phase: "sleeping" }, "state.phase"],
    ["a pausedUntil that is no time", { ...v2, pausedUntil: "soon" }, "state.pausedUntil"],
    ["a gate failure naming no wave", { ...v2, gateFailure: { wave: 5, reason: "x" } }, "state.gateFailure"],
    ["an unknown rollback mode", { ...v2, rollback: "always" }, "state.rollback"],
    ["before-state of a non-target", { ...v2, before: { z: {} } }, "state.before.z"],
    ["a bad before version", { ...v2, before: { a: { policyVersion: 0 } } }, "state.before.a.policyVersion"],
    ["an undo ref that is no handle", { ...v2, undoRefs: { a: { kind: "x" } } }, "state.undoRefs.a"],
  ];
  it.each(cases)("rejects %s naming the field", (_what, input, field) => {
    expect(() => restoreRolloutState(JSON.stringify(input))).toThrow(expect.objectContaining({ field }));
  });
});
