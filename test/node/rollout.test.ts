import { describe, expect, it } from "vitest";
import { ConfigApplyOutcome as Outcome, ConfigUpdateOperationState as State } from "../../src/gen/openshell/v1/config_pb.js";
import { InvalidArgumentError } from "../../src/index.js";
import { restoreRolloutState, rollout, rolloutKey, withRollout, type RolloutEvent, type RolloutOptions } from "../../src/rollout.js";
import { samplePolicy, setup } from "./helpers.js";

const fleet = (n: number) => Array.from({ length: n }, (_, i) => `sb-${String(i).padStart(3, "0")}`);

/** A fake gateway with `names` ready; each commit completes after `delayMs` with what `outcome` says. */
function fleetHarness(names: readonly string[], outcome: (sandbox: string) => State = () => State.APPLIED, delayMs = 5) {
  const inFlight = { now: 0, max: 0 };
  const h = setup({
    autoComplete: (_op, req) => {
      inFlight.now++;
      inFlight.max = Math.max(inFlight.max, inFlight.now);
      setTimeout(() => inFlight.now--, delayMs);
      const state = outcome(req.sandbox);
      return {
        state,
        outcome: state === State.FAILED ? Outcome.FAILED_RETAINED_LAST_KNOWN_GOOD : Outcome.APPLIED,
        ...(state === State.FAILED ? { error: "invalid policy" } : {}),
        delayMs,
      };
    },
  });
  for (const n of names) h.gw.addSandbox(n);
  return { ...h, inFlight };
}

describe("rollout input checks", () => {
  const bad: [string, Partial<RolloutOptions>, string][] = [
    ["no targets", { policy: samplePolicy() }, "sandboxes"],
    ["both target forms", { sandboxes: ["a"], labelSelector: "env=prod", policy: samplePolicy() }, "sandboxes"],
    ["no change", { sandboxes: ["a"] }, "policy"],
    ["two changes", { sandboxes: ["a"], policy: samplePolicy(), settings: { key: "k", value: "v" } }, "settings"],
    ["an empty target list", { sandboxes: [], policy: samplePolicy() }, "sandboxes"],
    ["a name the gateway would refuse", { sandboxes: ["ok", "Not Valid"], policy: samplePolicy() }, "sandboxes[1]"],
    ["a repeated name", { sandboxes: ["a", "a"], policy: samplePolicy() }, "sandboxes[1]"],
    ["a malformed selector", { labelSelector: "env in (dev", policy: samplePolicy() }, "labelSelector"],
    ["a rollout id with spaces", { id: "my rollout", sandboxes: ["a"], policy: samplePolicy() }, "id"],
    ["zero concurrency", { sandboxes: ["a"], policy: samplePolicy(), concurrency: 0 }, "concurrency"],
    ["maxFailures of zero", { sandboxes: ["a"], policy: samplePolicy(), maxFailures: 0 }, "maxFailures"],
    ["a negative wait bound", { sandboxes: ["a"], policy: samplePolicy(), waitTimeoutMs: -1 }, "waitTimeoutMs"],
    ["empty merge operations", { sandboxes: ["a"], mergeOperations: [] }, "mergeOperations"],
    ["an unrepresentable setting", { sandboxes: ["a"], settings: { key: "k", value: 1.5 } }, "value"],
  ];
  it.each(bad)("rejects %s with InvalidArgumentError naming the field, before sending anything", (_what, options, field) => {
    const { client, gw } = setup();
    let error: unknown;
    try {
      rollout(client, options as RolloutOptions);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toMatchObject({ field });
    expect(gw.calls.UpdateConfig ?? 0).toBe(0);
  });

  it("refuses targets or a change given again next to resume", async () => {
    const { client } = fleetHarness(["a"]);
    const { state } = await rollout(client, { sandboxes: ["a"], policy: samplePolicy() });
    expect(() => rollout(client, { resume: state, policy: samplePolicy() })).toThrow(expect.objectContaining({ field: "policy" }));
  });
});

describe("rollout against a fake gateway", () => {
  it("commits each sandbox once with a key derived from the rollout id, never exceeding the concurrency", async () => {
    const names = fleet(40);
    const { client, gw, inFlight } = fleetHarness(names, () => State.APPLIED, 15);
    const result = await rollout(client, { id: "r1", sandboxes: names, policy: samplePolicy(), concurrency: 5 });
    expect(result.complete).toBe(true);
    expect(result.counts.byState).toEqual({ applied: 40 });
    expect(inFlight.max).toBeLessThanOrEqual(5);
    expect(inFlight.max).toBeGreaterThan(1);
    expect(gw.commits).toHaveLength(40);
    expect(new Set(gw.requests.map((r) => r.idempotencyKey))).toEqual(new Set(names.map((n) => rolloutKey("r1", n))));
  });

  it("withRollout gives a client a rollout method that runs the same rollout, its other methods untouched", async () => {
    const names = fleet(6);
    const { client, gw } = fleetHarness(names, () => State.APPLIED, 5);
    const withIt = withRollout(client);
    expect(withIt.updatePolicy).toBe(client.updatePolicy);
    const result = await withIt.rollout({ id: "m1", sandboxes: names, policy: samplePolicy() });
    expect(result.counts.byState).toEqual({ applied: 6 });
    expect(new Set(gw.requests.map((r) => r.idempotencyKey))).toEqual(new Set(names.map((n) => rolloutKey("m1", n))));
  });

  it("halts new commits once maxFailures sandboxes failed, still awaiting the commits in flight", async () => {
    const names = fleet(30);
    const { client, gw } = fleetHarness(names, (sb) => (sb < "sb-010" ? State.FAILED : State.APPLIED));
    const events: RolloutEvent[] = [];
    const result = await rollout(client, { sandboxes: names, policy: samplePolicy(), concurrency: 2, maxFailures: 3, onProgress: (e) => events.push(e) });
    expect(result.halted).toBe(true);
    expect(result.failures).toBeGreaterThanOrEqual(3);
    expect(result.failures).toBeLessThanOrEqual(4);
    expect(gw.commits.length).toBe(result.failures);
    expect(result.counts.byStatus.skipped).toBe(30 - gw.commits.length);
    expect(events.filter((e) => e.type === "halted")).toEqual([{ type: "halted", failures: 3, maxFailures: 3 }]);
  });

  it("says it halted when the failure limit was reached even if every sandbox had already been sent", async () => {
    const { client } = fleetHarness(["a", "b"], () => State.FAILED);
    const result = await rollout(client, { sandboxes: ["a", "b"], policy: samplePolicy(), concurrency: 2, maxFailures: 1 });
    expect(result).toMatchObject({ halted: true, failures: 2, counts: { byState: { failed: 2 }, byStatus: { skipped: 0 } } });
  });

  it("reports a sandbox whose wait ran out as pending, and finishes it when resumed from the state", async () => {
    const { client, gw } = setup();
    gw.addSandbox("slow");
    const first = await rollout(client, { sandboxes: ["dev", "slow"], settings: { key: "k", value: 1 }, waitTimeoutMs: 50 });
    expect(first.sandboxes.map((r) => r.status)).toEqual(["pending", "pending"]);
    expect(first.slowest.map((s) => s.state)).toEqual(["pending", "pending"]);
    for (const op of gw.operations()) gw.complete(op.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED });

    const second = await rollout(client, { resume: restoreRolloutState(JSON.stringify(first.state)) });
    expect(second.counts.byState).toEqual({ applied: 2 });
    expect(gw.commits).toHaveLength(2);
  });

  it("reports every sandbox of a rollout id re-run with a different change as an idempotency conflict, committing nothing", async () => {
    const names = fleet(3);
    const { client, gw } = fleetHarness(names);
    await rollout(client, { id: "r2", sandboxes: names, settings: { key: "k", value: "one" } });
    const again = await rollout(client, { id: "r2", sandboxes: names, settings: { key: "k", value: "two" }, maxFailures: 1, concurrency: 1 });
    expect(again.sandboxes[0]).toMatchObject({ status: "error", error: { code: "idempotency-conflict" } });
    expect(again.halted).toBe(true);
    expect(again.counts.byStatus).toEqual({ completed: 0, pending: 0, error: 1, skipped: 2 });
    expect(again.state.refs).toEqual({});
    expect(gw.commits).toHaveLength(3);
  });

  it("streams events to an async iterator that ends with the result", async () => {
    const names = fleet(6);
    const { client } = fleetHarness(names);
    const run = rollout(client, { sandboxes: names, settings: { key: "log_level", delete: true } });
    const types: string[] = [];
    for await (const e of run) types.push(e.type);
    expect(types[0]).toBe("started");
    expect(types.filter((t) => t === "sent")).toHaveLength(6);
    expect(types.filter((t) => t === "result")).toHaveLength(6);
    expect(types.at(-1)).toBe("finished");
    expect((await run).complete).toBe(true);
  });

  it("keeps going when the progress callback throws", async () => {
    const { client } = fleetHarness(["a", "b"]);
    const result = await rollout(client, {
      sandboxes: ["a", "b"],
      policy: samplePolicy(),
      onProgress: () => {
        throw new Error("a broken progress bar");
      },
    });
    expect(result.counts.byState).toEqual({ applied: 2 });
  });

  it("skips every sandbox when the signal is already aborted", async () => {
    const { client, gw } = fleetHarness(["a", "b"]);
    const result = await rollout(client, { sandboxes: ["a", "b"], policy: samplePolicy(), signal: AbortSignal.abort() });
    expect(result.aborted).toBe(true);
    expect(result.sandboxes.map((r) => r.status === "skipped" && r.reason)).toEqual(["aborted", "aborted"]);
    expect(gw.commits).toHaveLength(0);
  });
});

describe("restoreRolloutState", () => {
  const valid = {
    kind: "openshell-config/rollout@1",
    id: "r1",
    request: { settingKey: "k", settingValue: { stringValue: "v" } },
    concurrency: 4,
    sandboxes: ["a"],
    refs: {},
  };
  const cases: [string, unknown, string][] = [
    ["text that is not JSON", "{", "state"],
    ["another kind of object", { ...valid, kind: "x" }, "state.kind"],
    ["a bad id", { ...valid, id: "" }, "state.id"],
    ["a request that changes nothing", { ...valid, request: {} }, "state.request"],
    ["a zero concurrency", { ...valid, concurrency: 0 }, "state.concurrency"],
    ["targets that are not names", { ...valid, sandboxes: [1] }, "state.sandboxes"],
    ["a ref for a sandbox that is no target", { ...valid, refs: { b: {} } }, "state.refs.b"],
    ["a ref that is not a handle", { ...valid, refs: { a: { kind: "x" } } }, "state.refs.a"],
  ];
  it.each(cases)("rejects %s naming the field", (_what, input, field) => {
    expect(() => restoreRolloutState(typeof input === "string" ? input : JSON.stringify(input))).toThrow(expect.objectContaining({ field }));
  });

  it("accepts a state and its JSON text alike", () => {
    expect(restoreRolloutState(valid)).toEqual(restoreRolloutState(JSON.stringify(valid)));
  });
});
