// The rollout form's logic without a browser (src/rollout-form.ts, src/rollout-conflict.ts): the
// selector read by the parser the command line uses (so `env in (dev,staging)` is accepted), the
// form a kept rollout shows after a reload, the SDK options the form makes, and which paused
// rollouts a new one would overlap.

import { describe, expect, it } from "vitest";
import { parseLabelSelector, ROLLOUT_KIND, type RolloutState } from "openshell-config/rollout";
import { create } from "@bufbuild/protobuf";
import { SandboxPolicySchema } from "openshell-config/raw";
import { DEFAULT_FORM, formFromState, readSelector, rolloutOptions } from "../src/rollout-form.js";
import { conflictMessage, conflictsWith, targetsOf, type LabelledSandbox } from "../src/rollout-conflict.js";

describe("the selector field", () => {
  it("accepts what the command line accepts, set forms included", () => {
    expect(readSelector("env in (dev,staging)")).toEqual({ ok: true, selector: parseLabelSelector("env in (dev,staging)"), text: "env in (dev,staging)" });
    expect(readSelector(" app = web , !legacy ")).toMatchObject({ ok: true, text: "app=web,!legacy" });
  });

  it("refuses what the command line refuses, saying what is wrong where", () => {
    expect(readSelector("env in (dev")).toEqual({ ok: false, message: 'selector "env in (dev": "env in (" is not closed by ")"' });
  });
});

const GATE = { maxFailures: 2, maxTotalFailures: null, failOnDegraded: false, pause: "approval" as const };
const state = (over: Partial<RolloutState>): RolloutState => ({
  kind: ROLLOUT_KIND,
  id: "r1",
  labelSelector: "app=web",
  request: {},
  concurrency: 3,
  sandboxes: ["a", "b", "c", "d"],
  refs: {},
  waves: [
    { sandboxes: ["a"], gate: GATE },
    { sandboxes: ["b", "c", "d"], gate: GATE },
  ],
  wave: 1,
  phase: "paused",
  rollback: "on-halt",
  before: {},
  undoRefs: {},
  ...over,
});

describe("the form of a kept rollout", () => {
  it("shows its waves, limits, pause and rollback, not the defaults", () => {
    expect(formFromState(state({}))).toEqual({ selector: "app=web", waves: "1, 4", concurrency: 3, maxFailures: 2, approval: true, rollback: true });
    expect(formFromState(state({}))).not.toMatchObject({ waves: DEFAULT_FORM.waves });
  });

  it("shows one wave as an empty waves field, with the rollout's own failure limit", () => {
    const one = state({ waves: [{ sandboxes: ["a", "b"], gate: { ...GATE, pause: null } }], maxFailures: 5, rollback: "never" });
    expect(formFromState(one)).toEqual({ selector: "app=web", waves: "", concurrency: 3, maxFailures: 5, approval: false, rollback: false });
  });
});

describe("the options of a new rollout", () => {
  const policy = create(SandboxPolicySchema, { version: 1 });

  it("gives the SDK the waves, each gate's limit and pause, and the rollback", () => {
    expect(rolloutOptions({ selector: "x", waves: "1, 50%, 100%", concurrency: 2, maxFailures: 3, approval: true, rollback: true }, "env in (dev,staging)", policy)).toEqual({
      labelSelector: "env in (dev,staging)",
      policy,
      concurrency: 2,
      waves: [1, "50%", "100%"],
      gate: { maxFailures: 3, pause: "approval" },
      rollback: "on-halt",
    });
  });

  it("without waves, makes the failure limit the rollout's", () => {
    expect(rolloutOptions({ ...DEFAULT_FORM, waves: "", maxFailures: 1 }, "app=web", policy)).toEqual({ labelSelector: "app=web", policy, concurrency: 4, maxFailures: 1 });
  });
});

describe("a new rollout over a paused one's sandboxes", () => {
  const fleet: LabelledSandbox[] = [
    { name: "dev", labels: { env: "dev" } },
    { name: "staging", labels: { env: "staging" } },
    { name: "web-1", labels: { app: "web" } },
    { name: "web-2", labels: { app: "web" } },
  ];

  it("finds the paused rollouts that target any sandbox the selector matches, with the sandboxes in common", () => {
    const targets = targetsOf(parseLabelSelector("env in (dev,staging)"), fleet);
    expect(targets).toEqual(["dev", "staging"]);
    const paused = [
      { id: "p-web", selector: "app=web", sandboxes: ["web-1", "web-2"] },
      { id: "p-env", selector: "env", sandboxes: ["staging", "dev"] },
    ];
    expect(conflictsWith(targets, paused)).toEqual([{ id: "p-env", selector: "env", sandboxes: ["dev", "staging"] }]);
    expect(conflictsWith(["other"], paused)).toEqual([]);
  });

  it("names the paused rollout and the sandboxes, and says what to do", () => {
    const text = conflictMessage([{ id: "0123456789abcdef", selector: "app=web", sandboxes: ["web-1", "web-2", "web-3", "web-4", "web-5"] }]);
    expect(text).toBe(
      "Rollout 01234567 (app=web) is paused over 5 of these sandboxes: web-1, web-2, web-3, … (2 more). A new rollout would leave it waiting over sandboxes it changes, and Continue would later send the older change over the new one. Continue or Undo it first, or roll out anyway.",
    );
  });
});
