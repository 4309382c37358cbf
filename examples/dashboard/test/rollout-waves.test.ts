// The rollout card's pure parts, without a browser: the waves field, what a saved state says about
// each wave's gate and how the rollout stands after a reload, and the counts of a wave's rows.

import { describe, expect, it } from "vitest";
import { ROLLOUT_KIND, type RolloutState } from "openshell-config/rollout";
import { countWave, gatesFromState, parseWaves } from "../src/rollout-waves.js";
import { canUndo, phaseOfState } from "../src/rollout-store.js";

const GATE = { maxFailures: 1, maxTotalFailures: null, failOnDegraded: false, pause: "approval" as const };
const handle = (sandbox: string) => ({ kind: "openshell-config/operation-handle@1", sandbox, idempotencyKey: `rollout/r1/${sandbox}`, dimension: "policy", request: {} }) as never;
const state = (over: Partial<RolloutState>): RolloutState => ({
  kind: ROLLOUT_KIND,
  id: "r1",
  request: {},
  concurrency: 2,
  sandboxes: ["a", "b", "c"],
  refs: {},
  waves: [
    { sandboxes: ["a"], gate: GATE },
    { sandboxes: ["b"], gate: GATE },
    { sandboxes: ["c"], gate: GATE },
  ],
  wave: 0,
  phase: "running",
  rollback: "never",
  before: {},
  undoRefs: {},
  ...over,
});

describe("parseWaves", () => {
  it("reads counts, percentages and named waves; empty is one wave", () => {
    expect(parseWaves("1, 50%, 100%")).toEqual([1, "50%", "100%"]);
    expect(parseWaves(" web-1  web-2 , 12.5 %,100%")).toEqual([["web-1", "web-2"], "12.5%", "100%"]);
    expect(parseWaves("  ")).toBeUndefined();
    expect(parseWaves(",")).toBeUndefined();
  });
});

describe("a saved state after a reload", () => {
  it("paused for approval: the waves before passed, the next one waits, the rest not reached", () => {
    const s = state({ wave: 1, phase: "paused", refs: { a: handle("a") }, before: { a: { policyVersion: 1 } } });
    expect(gatesFromState(s)).toEqual([{ gate: "passed" }, { gate: "approval" }, { gate: "not-reached" }]);
    expect(phaseOfState(s)).toBe("paused");
    expect(canUndo(s)).toBe(true);
  });

  it("a timed pause says when the next wave starts", () => {
    const s = state({ wave: 1, phase: "paused", pausedUntil: "2026-12-01T09:00:00.000Z" });
    expect(gatesFromState(s)[1]).toEqual({ gate: "timed", until: "2026-12-01T09:00:00.000Z" });
  });

  it("halted: the failed gate with its reason; rolled back once a rollback was sent; cut short is incomplete", () => {
    const halted = state({ phase: "done", gateFailure: { wave: 0, reason: "wave 1 (canary): 1 of 1 failed, limit 1" }, refs: { a: handle("a") } });
    expect(gatesFromState(halted)[0]).toEqual({ gate: "failed", reason: "wave 1 (canary): 1 of 1 failed, limit 1" });
    expect(phaseOfState(halted)).toBe("halted");
    expect(canUndo(halted)).toBe(false); // no before-state recorded
    expect(phaseOfState({ ...halted, undoRefs: { a: handle("a") } })).toBe("rolled-back");
    expect(phaseOfState(state({ phase: "rolling-back" }))).toBe("incomplete");
    expect(phaseOfState(state({ phase: "done", wave: 3 }))).toBe("complete");
  });
});

describe("countWave", () => {
  it("counts degraded as applied, errors as failed, sending as pending, the rest queued", () => {
    const states: Record<string, string> = { a: "applied", b: "degraded", c: "error", d: "committing", e: "skipped", f: "waiting" };
    expect(countWave(["a", "b", "c", "d", "e", "f", "g"], (s) => states[s])).toEqual({ applied: 2, failed: 1, pending: 1, skipped: 1, queued: 2 });
  });
});
