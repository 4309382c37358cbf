// How the workspace's rollouts panel reads a shared rollout, without a browser (issue 31): its
// standing (paused for approval, driverless once its driver's lease ran out, …) and which buttons
// this page gets, disabled with the reason when it may not act.

import { describe, expect, it } from "vitest";
import type { SharedRollout } from "openshell-config/rollout";
import { actionsOf, ageText, phaseOfRecord, standingOf } from "../src/shared-rollouts.js";

const NOW = Date.parse("2026-12-02T10:00:00Z");

function record(over: Partial<SharedRollout> = {}): SharedRollout {
  return {
    id: "3f2a9c1e-0000-4000-8000-000000000001",
    workspace: "default",
    resourceVersion: 3n,
    createdBy: "alice",
    createdAt: new Date(NOW - 90_000),
    updatedAt: new Date(NOW - 1000),
    labelSelector: "app=web",
    changeHash: "ab",
    changeSummary: "policy",
    phase: "paused",
    result: "paused",
    waves: { done: 1, total: 3 },
    counts: { targets: 4, sent: 1, applied: 1, failed: 0, rolledBack: 0 },
    awaitingApproval: true,
    pausedUntil: undefined,
    gateFailure: undefined,
    approvals: [],
    lease: undefined,
    requireDistinctApprover: false,
    state: undefined,
    ...over,
  };
}

const admin = { refused: undefined, me: "bob", driving: undefined };
const lease = (msFromNow: number) => ({ holder: "dashboard 1a2b3c4d", principal: "carol", expiresAt: new Date(NOW + msFromNow) });

describe("a shared rollout's standing", () => {
  it("is paused for approval while it waits for one, and a paused one reads as paused in this browser's list", () => {
    expect(standingOf(record(), NOW)).toBe("awaiting-approval");
    expect(phaseOfRecord(record(), NOW)).toBe("paused");
  });

  it("is running while its driver's lease is live, and driverless once it has run out", () => {
    const running = record({ phase: "running", result: undefined, awaitingApproval: false });
    expect(standingOf({ ...running, lease: lease(5000) }, NOW)).toBe("running");
    expect(standingOf({ ...running, lease: lease(-1) }, NOW)).toBe("driverless");
    expect(standingOf(running, NOW)).toBe("driverless");
  });

  it("is halted, rolled back or done once over, as its last run said", () => {
    expect(standingOf(record({ phase: "done", result: "halted", awaitingApproval: false }), NOW)).toBe("halted");
    expect(standingOf(record({ phase: "done", result: undefined, awaitingApproval: false, counts: { targets: 4, sent: 4, applied: 4, failed: 0, rolledBack: 4 } }), NOW)).toBe("rolled-back");
    expect(standingOf(record({ phase: "done", result: "complete", awaitingApproval: false }), NOW)).toBe("complete");
  });
});

describe("the buttons an admin gets", () => {
  it("offers Approve & continue and Undo on a rollout paused for approval", () => {
    const a = actionsOf(record(), NOW, admin);
    expect(a.proceed).toMatchObject({ label: "Approve & continue", enabled: true });
    expect(a.undo).toMatchObject({ label: "Undo", enabled: true });
  });

  it("disables both while another driver's lease is live, naming it, and offers Take over once it ran out", () => {
    const running = record({ phase: "running", result: undefined, awaitingApproval: false });
    const held = actionsOf({ ...running, lease: lease(5000) }, NOW, admin);
    expect(held.proceed?.enabled).toBe(false);
    expect(held.undo?.enabled).toBe(false);
    expect(held.undo?.title).toMatch(/^Driven by dashboard 1a2b3c4d \(carol\) until .+; it can be taken over after that\.$/);
    expect(actionsOf({ ...running, lease: lease(-1) }, NOW, admin).proceed).toMatchObject({ label: "Take over", enabled: true });
  });

  it("disables the approval for its creator under four eyes, but not Undo", () => {
    const a = actionsOf(record({ requireDistinctApprover: true, createdBy: "bob" }), NOW, admin);
    expect(a.proceed?.enabled).toBe(false);
    expect(a.proceed?.title).toBe("Four eyes: bob created it, so another admin must approve wave 2.");
    expect(a.undo?.enabled).toBe(true);
  });

  it("gives a user disabled buttons saying why, and offers no Continue on a finished rollout", () => {
    const user = actionsOf(record(), NOW, { ...admin, refused: "Only an admin may." });
    expect(user.proceed).toMatchObject({ enabled: false, title: "Only an admin may." });
    expect(user.undo).toMatchObject({ enabled: false, title: "Only an admin may." });
    const done = actionsOf(record({ phase: "done", result: "rolled-back", awaitingApproval: false }), NOW, admin);
    expect(done).toEqual({});
  });
});

it("writes ages as the command line's AGE column does", () => {
  expect([0, 42_000, 5 * 60_000, 3 * 3_600_000, 2 * 86_400_000].map((ms) => ageText(new Date(NOW - ms), NOW))).toEqual(["just now", "42s", "5m", "3h", "2d"]);
});
