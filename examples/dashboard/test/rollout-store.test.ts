// The rollouts the dashboard keeps (src/rollout-store.ts), without a browser: a new rollout never
// replaces a paused one, the list is bounded by dropping the oldest finished rollouts and never an
// unfinished one, a full storage makes room the same way, the form a rollout started with is kept
// for the next reload, and the one rollout an earlier version kept is taken over.

import { describe, expect, it } from "vitest";
import { ROLLOUT_KIND, type RolloutState } from "openshell-config/rollout";
import { createRolloutStore, isFinished, MAX_KEPT, type RolloutForm } from "../src/rollout-store.js";

/** localStorage in memory; `quota`: the most characters it holds (keys and values). */
function memoryStorage(quota = Infinity) {
  const data = new Map<string, string>();
  const used = () => [...data].reduce((n, [k, v]) => n + k.length + v.length, 0);
  return {
    data,
    getItem: (k: string) => data.get(k) ?? null,
    setItem(k: string, v: string) {
      const before = data.get(k);
      data.set(k, v);
      if (used() > quota) {
        if (before === undefined) data.delete(k);
        else data.set(k, before);
        throw new DOMException("quota exceeded", "QuotaExceededError");
      }
    },
    removeItem: (k: string) => void data.delete(k),
  };
}

const GATE = { maxFailures: 1, maxTotalFailures: null, failOnDegraded: false, pause: "approval" as const };
const handle = (sandbox: string) => ({ kind: "openshell-config/operation-handle@1", sandbox, idempotencyKey: `k/${sandbox}`, dimension: "policy", request: {} }) as never;
const POLICY_REQUEST = { policy: { version: 1 } };

/** A rollout over `sandboxes` in one wave per sandbox, `phase`: how it stands. */
function state(id: string, how: "paused" | "complete" | "halted" | "rolled-back", sandboxes = ["a", "b"]): RolloutState {
  const refs = Object.fromEntries(sandboxes.slice(0, 1).map((s) => [s, handle(s)]));
  return {
    kind: ROLLOUT_KIND,
    id,
    labelSelector: "app=web",
    request: POLICY_REQUEST,
    concurrency: 2,
    sandboxes,
    refs,
    waves: sandboxes.map((s) => ({ sandboxes: [s], gate: GATE })),
    wave: how === "paused" ? 1 : sandboxes.length,
    phase: how === "paused" ? "paused" : "done",
    rollback: "never",
    before: Object.fromEntries(sandboxes.map((s) => [s, { policyVersion: 1 }])),
    undoRefs: how === "rolled-back" ? refs : {},
    ...(how === "halted" ? { gateFailure: { wave: 0, reason: "wave 1: 1 of 1 failed, limit 1" } } : {}),
  };
}

describe("the rollouts kept in this browser", () => {
  it("keeps a paused rollout, with Continue and Undo possible, when a new one starts", () => {
    const store = createRolloutStore(memoryStorage());
    store.saveState(state("paused-1", "paused"));
    store.saveState(state("new-2", "complete"));
    expect(store.list().map((r) => [r.id, r.phase, r.undoable])).toEqual([
      ["new-2", "complete", true],
      ["paused-1", "paused", true],
    ]);
    expect(store.state("paused-1")?.phase).toBe("paused");
  });

  it("survives a reload: a new store on the same storage lists the same rollouts", () => {
    const storage = memoryStorage();
    createRolloutStore(storage).saveState(state("paused-1", "paused"));
    createRolloutStore(storage).saveState(state("new-2", "complete"));
    expect(createRolloutStore(storage).list().map((r) => r.id)).toEqual(["new-2", "paused-1"]);
  });

  it(`keeps at most ${MAX_KEPT}, dropping the oldest finished ones and never an unfinished one`, () => {
    const storage = memoryStorage();
    const store = createRolloutStore(storage);
    store.saveState(state("old-paused", "paused"));
    store.saveState(state("old-halted", "halted"));
    for (let i = 0; i < MAX_KEPT + 5; i++) store.saveState(state(`done-${i}`, "complete"));
    const ids = store.list().map((r) => r.id);
    expect(ids).toHaveLength(MAX_KEPT);
    expect(ids).toContain("old-paused");
    expect(ids).toContain("old-halted");
    expect(ids).not.toContain("done-0");
    expect(ids[0]).toBe(`done-${MAX_KEPT + 4}`);
    // A dropped rollout leaves nothing behind.
    expect([...storage.data.keys()].filter((k) => k.includes("done-0"))).toEqual([]);
  });

  it("keeps every unfinished rollout even past the bound", () => {
    const store = createRolloutStore(memoryStorage(), 3);
    for (let i = 0; i < 5; i++) store.saveState(state(`paused-${i}`, "paused"));
    expect(store.list()).toHaveLength(5);
  });

  it("makes room in a full storage by dropping finished rollouts, and throws rather than drop an unfinished one", () => {
    const fill = (store: ReturnType<typeof createRolloutStore>) => ["paused-0", "done-1", "paused-2"].forEach((id) => store.saveState(state(id, id.startsWith("done") ? "complete" : "paused")));
    // Room for these three and a little more, not for a fourth.
    const measure = memoryStorage();
    fill(createRolloutStore(measure));
    const size = [...measure.data].reduce((n, [k, v]) => n + k.length + v.length, 0);
    const store = createRolloutStore(memoryStorage(size + 200));
    fill(store);
    expect(store.list().map((r) => r.id)).toEqual(["paused-2", "done-1", "paused-0"]);
    store.saveState(state("paused-3", "paused"));
    expect(store.list().map((r) => r.id)).toEqual(["paused-3", "paused-2", "paused-0"]);
    expect(() => store.saveState(state("paused-4", "paused"))).toThrow(/quota/);
    expect(store.list().map((r) => r.id)).toEqual(["paused-3", "paused-2", "paused-0"]);
  });

  it("keeps the form a rollout started with, also when later states are saved without it", () => {
    const storage = memoryStorage();
    const form: RolloutForm = { selector: "app=web", waves: "2, 100%", concurrency: 3, maxFailures: 2, approval: true, rollback: true };
    const store = createRolloutStore(storage);
    store.saveState(state("r1", "paused"), form);
    store.saveState(state("r1", "complete"));
    expect(createRolloutStore(storage).list()[0]?.form).toEqual(form);
  });

  it("takes the phase of the view saved when a run ended, and forgets on request", () => {
    const store = createRolloutStore(memoryStorage());
    store.saveState(state("r1", "paused"));
    store.saveView({ id: "r1", phase: "aborted", waves: [], summary: { text: "Stopped", tone: "warn" } });
    expect(store.list()[0]?.phase).toBe("aborted");
    expect(store.view("r1")?.summary.text).toBe("Stopped");
    store.forget("r1");
    expect(store.list()).toEqual([]);
    expect(store.state("r1")).toBeUndefined();
  });

  it("takes over the one rollout an earlier version kept, with its view", () => {
    const storage = memoryStorage();
    storage.setItem("openshell-dashboard.rollout", JSON.stringify(state("legacy", "paused")));
    storage.setItem("openshell-dashboard.rollout-view", JSON.stringify({ id: "legacy", phase: "paused", waves: [], summary: { text: "Paused", tone: "warn" } }));
    const store = createRolloutStore(storage);
    expect(store.list().map((r) => [r.id, r.phase])).toEqual([["legacy", "paused"]]);
    expect(store.view("legacy")?.summary.text).toBe("Paused");
    expect(storage.getItem("openshell-dashboard.rollout")).toBeNull();
  });

  it("drops a rollout whose state cannot be read", () => {
    const storage = memoryStorage();
    const store = createRolloutStore(storage);
    store.saveState(state("r1", "paused"));
    storage.setItem("openshell-dashboard.rollout/r1", "{not json");
    expect(store.state("r1")).toBeUndefined();
    expect(store.list()).toEqual([]);
  });

  it("counts only done and rolled-back rollouts as finished", () => {
    expect(["complete", "rolled-back", "paused", "halted", "incomplete", "aborted"].map((p) => isFinished(p as never))).toEqual([true, true, false, false, false, false]);
  });
});
