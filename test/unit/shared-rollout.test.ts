// The shared rollout record's plain-data view (src/rollout/shared-rollout.ts): a driver's state
// and run tally become the summary a list shows, and a FULL record gives back the exact state to
// resume from, with the change stored once (in `request`, never inside the state JSON).

import { describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { createHash } from "node:crypto";
import { RolloutLeaseSchema, RolloutRecordPhase, RolloutRecordResult, RolloutRecordSchema, RolloutApprovalSchema } from "../../src/gen/openshell/v1/rollouts_pb.js";
import { UpdateConfigRequestSchema } from "../../src/gen/openshell/v1/config_pb.js";
import { changeHashOf, changeSummaryOf, fromRecord, requestOf, stateJsonOf, summaryOf, type RunTally } from "../../src/rollout/shared-rollout.js";
import { ROLLOUT_KIND, rolloutKey, undoKey, type RolloutState } from "../../src/rollout/state.js";
import { decodeRecordState, encodeRecordState } from "../../src/rollout/record-state.js";
import { HANDLE_KIND } from "../../src/handle.js";

const state: RolloutState = {
  kind: ROLLOUT_KIND,
  id: "ship-7",
  labelSelector: "env=prod",
  request: { settingKey: "log_level", settingValue: { stringValue: "info" } },
  concurrency: 4,
  sandboxes: ["a", "b", "c"],
  refs: {},
  waves: [
    { sandboxes: ["a"], gate: { maxFailures: 1, maxTotalFailures: 1, failOnDegraded: false, pause: "approval" } },
    { sandboxes: ["b", "c"], gate: { maxFailures: 1, maxTotalFailures: 1, failOnDegraded: false, pause: null } },
  ],
  wave: 1,
  phase: "paused",
  rollback: "never",
  before: {},
  undoRefs: {},
};

const tally = (): RunTally => ({ outcomes: new Map([["a", "applied"]]), rolledBack: new Set(), end: "paused" });

describe("the shared rollout record's plain view", () => {
  it("summarizes a rollout paused for approval after its first wave", () => {
    const s = summaryOf(state, tally());
    expect(s.phase).toBe(RolloutRecordPhase.PAUSED);
    expect(s.result).toBe(RolloutRecordResult.PAUSED);
    expect(s.awaitingApproval).toBe(true);
    expect([s.wavesDone, s.wavesTotal, s.targets, s.applied, s.failed]).toEqual([1, 2, 3, 1, 0]);
    expect(summaryOf({ ...state, pausedUntil: new Date(Date.now() + 60_000).toISOString() }, tally()).awaitingApproval).toBe(false);
  });

  it("stores the state without its change, and a FULL record restores the same state", () => {
    const json = stateJsonOf(state);
    expect(JSON.parse(json)).not.toHaveProperty("request");
    const at = new Date("2026-12-04T06:00:00Z");
    const record = create(RolloutRecordSchema, {
      id: "ship-7",
      workspace: "default",
      resourceVersion: 4n,
      createdBy: "alice",
      createdTime: timestampFromDate(at),
      updatedTime: timestampFromDate(at),
      labelSelector: "env=prod",
      changeSummary: changeSummaryOf(state),
      summary: summaryOf(state, tally()),
      approvals: [create(RolloutApprovalSchema, { wave: 1, principal: "bob", approvedTime: timestampFromDate(at) })],
      lease: create(RolloutLeaseSchema, { holder: "cli bob@host pid 1", principal: "bob", expireTime: timestampFromDate(at) }),
      request: requestOf(state),
      stateJson: json,
    });
    const view = fromRecord(record);
    expect(view).toMatchObject({
      id: "ship-7",
      createdBy: "alice",
      changeSummary: "setting log_level",
      phase: "paused",
      result: "paused",
      waves: { done: 1, total: 2 },
      awaitingApproval: true,
      approvals: [{ wave: 1, by: "bob", at }],
      lease: { holder: "cli bob@host pid 1", principal: "bob", expiresAt: at },
    });
    expect(view.state).toEqual(state);
    expect(fromRecord({ ...record, stateJson: "", request: undefined }).state).toBeUndefined();
  });

  it("hashes the change as the gateway does: SHA-256 of the request template's binary form", async () => {
    const expected = createHash("sha256").update(toBinary(UpdateConfigRequestSchema, requestOf(state))).digest("hex");
    expect(await changeHashOf(state)).toBe(expected);
  });

  it("stores no policy body twice: refs name the change, rollbacks share one body per distinct earlier policy", () => {
    const big = "x".repeat(5000);
    const change = { policy: { version: 1, networkPolicies: { big: { name: big } } } };
    const before = (host: string) => ({ policy: { version: 1, networkPolicies: { old: { name: host } } }, expectedResourceVersion: "7" });
    const handle = (sandbox: string, key: string, body: object) => ({
      kind: HANDLE_KIND as typeof HANDLE_KIND,
      operationId: `op-${key}`,
      sandbox,
      idempotencyKey: key,
      dimension: "policy" as const,
      request: { ...body, sandbox, idempotencyKey: key },
    });
    const names = ["a", "b", "c"];
    const full: RolloutState = {
      ...state,
      id: "big-1",
      request: change,
      refs: Object.fromEntries(names.map((n) => [n, handle(n, rolloutKey("big-1", n), change)])),
      undoRefs: { a: handle("a", undoKey("big-1", "a"), before("old-one")), b: handle("b", undoKey("big-1", "b"), before("old-one")), c: handle("c", undoKey("big-1", "c"), before("old-two")) },
    };
    const text = encodeRecordState(full);
    expect(text.split(big).length - 1, "the change is not in the state at all (the record's request holds it)").toBe(0);
    expect(text.split("old-one").length - 1, "two sandboxes that had one policy share its body").toBe(1);
    expect(text.split("old-two").length - 1).toBe(1);
    expect(decodeRecordState(text, change)).toEqual(full);
    // What the state says already is not repeated per handle, yet comes back exactly: a handle in
    // the rollout's workspace, one without a workspace, one with a key of its own.
    const inWorkspace: RolloutState = {
      ...full,
      workspace: "team",
      refs: { a: { ...full.refs.a!, workspace: "team" }, b: full.refs.b!, c: { ...full.refs.c!, workspace: "team", idempotencyKey: "own-key", request: { ...full.refs.c!.request, idempotencyKey: "own-key" } } },
    };
    const compact = encodeRecordState(inWorkspace);
    expect(compact.split("openshell-config/operation-handle@1").length - 1).toBe(0);
    expect(compact).not.toContain(`"idempotencyKey":"${rolloutKey("big-1", "a")}"`);
    expect(compact).toContain(`"idempotencyKey":"own-key"`);
    expect(decodeRecordState(compact, change)).toEqual(inWorkspace);
  });
});
