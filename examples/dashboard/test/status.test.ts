// The dashboard's formatting, without a browser: what an operation row says it changed, dates,
// plurals and the one-word health of a sandbox's enforcement.

import { describe, expect, it } from "vitest";
import { labelOperations, plural, timeText, type OperationView } from "../src/status.js";
import { healthOf, summaryText, type EnforcementView } from "../src/enforcement.js";

let clock = Date.UTC(2026, 11, 1, 9, 0, 0);
const op = (id: string, policyVersion: number | undefined, settingsRevision: bigint | undefined): OperationView => ({
  operationId: id,
  state: "applied",
  outcome: "applied",
  error: undefined,
  target: policyVersion === undefined ? "" : `policy v${policyVersion} · settings r${settingsRevision}`,
  policyVersion,
  settingsRevision,
  createdAt: new Date((clock += 1000)),
  updatedAt: undefined,
});
const none = { sentPolicies: new Map<string, number>(), settingKeys: new Map<bigint, string[]>() };

describe("labelOperations", () => {
  it("reads policy and setting changes from the revisions of consecutive operations", () => {
    const ops = [op("a", 2, 0n), op("b", 3, 0n), op("c", 3, 1n), op("d", 3, 2n), op("e", 4, 2n)];
    const labels = labelOperations(ops.reverse(), { ...none, settingKeys: new Map([[2n, ["log_level"]]]) });
    expect(Object.fromEntries([...labels].map(([id, l]) => [id, l.label]))).toEqual({
      a: "policy v2",
      b: "policy v3",
      c: "setting (r1)",
      d: "setting log_level",
      e: "policy v4",
    });
    expect(labels.get("c")!.title).toContain("does not say which key");
  });

  it("labels the oldest operation only when its revisions tell, and trusts what this page sent", () => {
    expect(labelOperations([op("a", 5, 0n)], none).get("a")).toMatchObject({ kind: "policy", label: "policy v5" });
    expect(labelOperations([op("a", 1, 3n)], none).get("a")).toMatchObject({ kind: "setting", label: "setting (r3)" });
    expect(labelOperations([op("a", 5, 3n)], none).get("a")).toMatchObject({ kind: "unknown", label: "policy v5 · settings r3" });
    expect(labelOperations([op("a", 5, 3n)], { ...none, sentPolicies: new Map([["a", 5]]) }).get("a")).toMatchObject({ kind: "policy", label: "policy v5" });
    // No target yet (a stopped sandbox): sent from this page it is still a policy change.
    expect(labelOperations([op("a", undefined, undefined)], { ...none, sentPolicies: new Map([["a", 7]]) }).get("a")!.label).toBe("policy v7");
    expect(labelOperations([op("a", undefined, undefined)], none).get("a")!.label).toBe("—");
  });

  it("does not call a repeat of the same revision a policy or a setting change", () => {
    const labels = labelOperations([op("a", 2, 0n), op("b", 2, 0n)], none);
    expect(labels.get("b")).toMatchObject({ kind: "unknown", label: "policy v2 · settings r0" });
  });
});

describe("formatting", () => {
  it("says 1 sandbox, 2 sandboxes", () => {
    expect(plural(1, "sandbox", "sandboxes")).toBe("1 sandbox");
    expect(plural(2, "sandbox", "sandboxes")).toBe("2 sandboxes");
    expect(plural(0, "error")).toBe("0 errors");
    expect(plural(1, "error")).toBe("1 error");
  });

  it("gives times a date", () => {
    const text = timeText(new Date(2026, 11, 1, 9, 16, 37));
    expect(text).toContain("09:16:37");
    expect(text).toMatch(/Dec|12/);
    expect(timeText(undefined)).toBe("");
  });
});

describe("healthOf", () => {
  const enforcing = (policyVersion: number, extra: Partial<{ degraded: boolean }> = {}) =>
    ({
      state: "enforcing",
      policyVersion,
      policyHash: undefined,
      policySource: "sandbox",
      settingsRevision: undefined,
      configRevision: undefined,
      degraded: false,
      source: "gateway-record",
      reportedPolicyVersion: policyVersion,
      outcome: "applied",
      reason: undefined,
      observedAt: undefined,
      ...extra,
    }) as const;
  const view = (v: Partial<EnforcementView>): EnforcementView => ({ desiredVersion: 3, enforced: enforcing(3), drift: [], loadError: undefined, pending: false, ...v });

  it("is in sync only when the sandbox runs the desired policy cleanly", () => {
    expect(healthOf(view({}))).toBe("in-sync");
    expect(summaryText(view({}))).toBe("enforces v3");
    expect(healthOf(view({ enforced: enforcing(3, { degraded: true }) }))).toBe("drift");
  });

  it("tells applying from drift, rejection and failing closed", () => {
    expect(healthOf(view({ enforced: enforcing(2), drift: ["behind"], pending: true }))).toBe("applying");
    expect(summaryText(view({ enforced: enforcing(2), drift: ["behind"], pending: true }))).toBe("applying v3 (runs v2)");
    expect(healthOf(view({ enforced: enforcing(2), drift: ["behind"] }))).toBe("drift");
    expect(summaryText(view({ enforced: enforcing(2), drift: ["behind"] }))).toBe("runs v2, desired v3");
    expect(summaryText(view({ enforced: enforcing(2), drift: ["behind", "last-update-failed"] }))).toBe("v3 rejected, runs v2");
    const closed = { state: "failed-closed", source: "gateway-record", reportedPolicyVersion: 3, outcome: "failed-closed", reason: "x", observedAt: undefined } as const;
    expect(healthOf(view({ enforced: closed, drift: ["failed-closed"] }))).toBe("failed-closed");
    expect(healthOf(view({ drift: undefined }))).toBe("unknown");
  });
});
