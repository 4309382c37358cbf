// The SDK against a gateway without the shared rollout record (an upstream gateway, here the fake
// one): a rollout works from local state as before, the capability says records are absent, the
// calls that only a record can answer say so in one error, and `share: "required"` refuses to
// start rather than run unshared.

import { describe, expect, it } from "vitest";
import { ConfigApplyOutcome as Outcome, ConfigUpdateOperationState as State } from "../../src/gen/openshell/v1/config_pb.js";
import {
  getRolloutCapabilities,
  listRollouts,
  getRollout,
  resumeRollout,
  rollout,
  SharedRolloutsUnsupportedError,
} from "../../src/rollout.js";
import { samplePolicy, setup } from "./helpers.js";

describe("rollouts against a gateway without shared records", () => {
  it("reports no shared rollouts, and still rolls out from local state", async () => {
    const { gw, client } = setup({ autoComplete: () => ({ state: State.APPLIED, outcome: Outcome.APPLIED, delayMs: 1 }) });
    gw.addSandbox("a");
    gw.addSandbox("b");
    expect(await getRolloutCapabilities(client)).toEqual({ sharedRollouts: false });
    const states: unknown[] = [];
    const result = await rollout(client, { sandboxes: ["a", "b"], policy: samplePolicy(), onState: (s) => void states.push(s) });
    expect(result.phase).toBe("complete");
    expect(result.counts.byStatus.completed).toBe(2);
    expect(states.length).toBeGreaterThan(0);
  });

  it("says in one error that records are absent when asked for one", async () => {
    const { client } = setup();
    await expect(listRollouts(client)).rejects.toBeInstanceOf(SharedRolloutsUnsupportedError);
    await expect(getRollout(client, "r1")).rejects.toThrow(/keeps no shared rollouts/);
    await expect(resumeRollout(client, "r1")).rejects.toBeInstanceOf(SharedRolloutsUnsupportedError);
  });

  it("refuses to start unshared when sharing is required, before sending anything", async () => {
    const { gw, client } = setup();
    gw.addSandbox("a");
    const run = rollout(client, { sandboxes: ["a"], policy: samplePolicy(), share: "required" });
    await expect(run.result).rejects.toBeInstanceOf(SharedRolloutsUnsupportedError);
    expect(gw.commits).toEqual([]);
  });

  it.each([
    ["share", { share: "always" }],
    ["driver", { driver: "" }],
    ["driver", { driver: "bad\nname" }],
    ["leaseTtlMs", { leaseTtlMs: 10 }],
  ] as const)("rejects a bad %s before anything is sent", (field, extra) => {
    const { client } = setup();
    expect(() => rollout(client, { sandboxes: ["dev"], policy: samplePolicy(), ...(extra as object) })).toThrow(expect.objectContaining({ field, code: "invalid-argument" }));
  });
});
