import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  ConfigApplyOutcome,
  ConfigApplyOutcomeSchema,
  ConfigComponentSchema,
  ConfigUpdateOperationSchema,
  ConfigUpdateOperationState,
  ConfigUpdateOperationStateSchema,
} from "../../src/gen/openshell/v1/config_pb.js";
import { PolicySourceSchema } from "../../src/gen/openshell/sandbox/v1/sandbox_pb.js";
import { COMPONENT_NAMES, OUTCOME_NAMES, STATE_NAMES, fromOperation, isTerminal } from "../../src/completion.js";
import { POLICY_SOURCE_NAMES } from "../../src/convert/revision.js";
import type { Completion, OperationStatus } from "../../src/index.js";

// Compile-time guard: adding a state to the union without handling it here breaks the build.
function describeCompletion(c: Completion): string {
  switch (c.state) {
    case "applied":
      return c.outcome === "degraded" ? "running with reduced function" : "running";
    case "failed":
      return `failed: ${c.error ?? c.outcome}`;
    case "superseded":
      return "replaced by a newer revision";
    case "inactive":
      return "stored; applies when the sandbox starts";
    case "cancelled":
      return "will never apply";
    default: {
      const unreachable: never = c;
      return unreachable;
    }
  }
}

function op(init: Parameters<typeof create<typeof ConfigUpdateOperationSchema>>[1]) {
  return create(ConfigUpdateOperationSchema, { operationId: "op-1", sandboxId: "sbx-1", ...init });
}

describe("enum name maps", () => {
  it.each([
    ["ConfigUpdateOperationState", ConfigUpdateOperationStateSchema, STATE_NAMES],
    ["ConfigApplyOutcome", ConfigApplyOutcomeSchema, OUTCOME_NAMES],
    ["ConfigComponent", ConfigComponentSchema, COMPONENT_NAMES],
    ["PolicySource", PolicySourceSchema, POLICY_SOURCE_NAMES],
  ] as const)("%s has a name for every wire value and no name for a value the wire lacks", (_, schema, names) => {
    const wire = schema.values.map((v) => v.number).sort((a, b) => a - b);
    const mapped = Object.keys(names).map(Number).sort((a, b) => a - b);
    expect(mapped).toEqual(wire);
  });

  it("gives every state except UNSPECIFIED a distinct SDK name", () => {
    const named = Object.entries(STATE_NAMES).filter(([n]) => Number(n) !== ConfigUpdateOperationState.UNSPECIFIED);
    const names = named.map(([, v]) => v);
    expect(names).not.toContain(undefined);
    expect(new Set(names).size).toBe(names.length);
  });

  it("gives every outcome a distinct kebab-case name derived from its wire name", () => {
    for (const v of ConfigApplyOutcomeSchema.values) {
      const expected = v.localName.toLowerCase().replace(/_/g, "-");
      expect(OUTCOME_NAMES[v.number as ConfigApplyOutcome]).toBe(expected);
    }
  });
});

describe("fromOperation", () => {
  it("maps a degraded application to state applied with outcome degraded and keeps the explanation", () => {
    const status = fromOperation(
      op({
        state: ConfigUpdateOperationState.APPLIED,
        outcome: ConfigApplyOutcome.DEGRADED,
        sanitizedError: "middleware audit-log unreachable",
        createdTime: timestampFromMs(1_700_000_000_000),
        updatedTime: timestampFromMs(1_700_000_000_500),
        completedTime: timestampFromMs(1_700_000_000_500),
      }),
    );
    expect(status).toMatchObject({ state: "applied", outcome: "degraded", error: "middleware audit-log unreachable" });
    expect(isTerminal(status)).toBe(true);
    if (isTerminal(status)) expect(describeCompletion(status)).toBe("running with reduced function");
    expect(status.createdAt).toEqual(new Date(1_700_000_000_000));
    expect(status.completedAt).toEqual(new Date(1_700_000_000_500));
  });

  it("leaves absent timestamps undefined instead of the epoch", () => {
    const status = fromOperation(op({ state: ConfigUpdateOperationState.PENDING }));
    expect(status.state).toBe("pending");
    expect(status.createdAt).toBeUndefined();
    expect(status.updatedAt).toBeUndefined();
    expect(status.completedAt).toBeUndefined();
    expect(status.target).toBeUndefined();
    expect(status.error).toBeUndefined();
  });

  it("keeps 64-bit revisions as exact bigints", () => {
    const big = 2n ** 63n - 1n;
    const status = fromOperation(
      op({
        state: ConfigUpdateOperationState.PENDING,
        targetRevision: {
          component: {
            case: "sandboxConfig",
            value: { configRevision: big, policyVersion: 4_000_000_000, settingsRevision: big - 1n },
          },
        },
      }),
    );
    expect(status.target).toEqual({
      kind: "sandbox-config",
      configRevision: big,
      policyVersion: 4_000_000_000,
      policySource: "unspecified",
      globalPolicyVersion: 0,
      settingsRevision: big - 1n,
    });
  });

  it("maps each failure outcome to state failed", () => {
    for (const outcome of [
      ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE,
      ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD,
      ConfigApplyOutcome.FAILED_CLOSED,
      ConfigApplyOutcome.UNSUPPORTED,
    ]) {
      const s = fromOperation(op({ state: ConfigUpdateOperationState.FAILED, outcome, sanitizedError: "bad rule" }));
      expect(s.state).toBe("failed");
      expect(s.outcome).toBe(OUTCOME_NAMES[outcome]);
      expect(s.error).toBe("bad rule");
    }
  });

  it("reports an unknown state as pending so that a waiter keeps waiting", () => {
    const s: OperationStatus = fromOperation(op({ state: 99 as ConfigUpdateOperationState }));
    expect(s.state).toBe("pending");
    expect(isTerminal(s)).toBe(false);
  });

  it("describes every terminal state", () => {
    const states = [
      ConfigUpdateOperationState.APPLIED,
      ConfigUpdateOperationState.FAILED,
      ConfigUpdateOperationState.SUPERSEDED,
      ConfigUpdateOperationState.INACTIVE,
      ConfigUpdateOperationState.CANCELLED,
    ];
    const described = states.map((state) => {
      const s = fromOperation(op({ state }));
      if (!isTerminal(s)) throw new Error(`state ${state} should be terminal`);
      return describeCompletion(s);
    });
    expect(new Set(described).size).toBe(states.length);
  });
});
