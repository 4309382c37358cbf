// The words and JSON of `policy get`'s enforced line and `sandbox list`'s DESIRED/ENFORCED/DRIFT
// columns, for every enforcement state, including a gateway without our extension fields (where
// nothing may be guessed). The real stack is exercised by cli.test.ts and e2e/enforcement.test.ts.

import { create } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import type { Enforcement } from "openshell-config";
import { ConfigApplyOutcome, PolicyEnforcementState, PolicySource, SandboxSchema, type PolicyEnforcement } from "openshell-config/raw";
import { enforcedCell, enforcedText, enforcementJson, listedEnforcement } from "../../cli/enforcement.js";

const at = new Date("2026-12-01T09:00:00.000Z");
const REASON = 'invalid policy: network_policies["files"].endpoints[0]: protocol "ftp" is not supported';

type EnforcementInit = Partial<Pick<PolicyEnforcement, "state" | "policyVersion" | "reportedPolicyVersion" | "outcome" | "reason">>;

function listed(status: { currentPolicyVersion?: number; desiredPolicyVersion?: number; policyEnforcement?: EnforcementInit }) {
  const { policyEnforcement, ...rest } = status;
  return create(SandboxSchema, {
    metadata: { name: "dev" },
    status: { ...rest, policyEnforcement: policyEnforcement && { observedTime: timestampFromDate(at), policySource: PolicySource.SANDBOX, ...policyEnforcement } },
  });
}

describe("sandbox list: desired, enforced and drift from one list entry", () => {
  it("in sync: the same version, no drift", () => {
    const v = listedEnforcement(listed({ currentPolicyVersion: 3, desiredPolicyVersion: 3, policyEnforcement: { state: PolicyEnforcementState.ENFORCING, policyVersion: 3, reportedPolicyVersion: 3, outcome: ConfigApplyOutcome.APPLIED } }));
    expect(v).toMatchObject({ desiredVersion: 3, drift: [] });
    expect(enforcedCell(v.enforced)).toBe("v3");
  });

  it("behind after a rejected update: the last known good, behind and last-update-failed", () => {
    const v = listedEnforcement(
      listed({
        currentPolicyVersion: 2,
        desiredPolicyVersion: 3,
        policyEnforcement: { state: PolicyEnforcementState.ENFORCING, policyVersion: 2, reportedPolicyVersion: 3, outcome: ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD, reason: REASON },
      }),
    );
    expect(v.drift).toEqual(["behind", "last-update-failed"]);
    expect(enforcedCell(v.enforced)).toBe("v2");
  });

  it("failing closed: deny-all, never a version", () => {
    const v = listedEnforcement(
      listed({ currentPolicyVersion: 0, desiredPolicyVersion: 3, policyEnforcement: { state: PolicyEnforcementState.FAILED_CLOSED, reportedPolicyVersion: 3, outcome: ConfigApplyOutcome.FAILED_CLOSED, reason: REASON } }),
    );
    expect(v.drift).toEqual(["failed-closed", "last-update-failed"]);
    expect(enforcedCell(v.enforced)).toBe("deny-all");
    expect(enforcementJson(v.enforced)).toMatchObject({ state: "failed-closed", policyVersion: null, reason: REASON, observedAt: at, source: "gateway-record" });
  });

  it("a local override: local", () => {
    const v = listedEnforcement(listed({ desiredPolicyVersion: 3, policyEnforcement: { state: PolicyEnforcementState.LOCAL_OVERRIDE, reportedPolicyVersion: 3, outcome: ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE } }));
    expect(v.drift).toEqual(["local-override"]);
    expect(enforcedCell(v.enforced)).toBe("local");
  });

  it("nothing reported yet by the sandbox: -, unreported", () => {
    const v = listedEnforcement(listed({ desiredPolicyVersion: 1 }));
    expect(v).toMatchObject({ desiredVersion: 1, drift: ["unreported"], enforced: { state: "unknown", source: "gateway-record" } });
    expect(enforcedCell(v.enforced)).toBe("-");
  });

  it("a gateway without the extension fields: current_policy_version as it says, desired and drift unknown", () => {
    const v = listedEnforcement(listed({ currentPolicyVersion: 2 }));
    expect(v).toMatchObject({ desiredVersion: undefined, drift: undefined, enforced: { state: "enforcing", policyVersion: 2, source: "active-version" } });
  });
});

describe("policy get: the enforced line", () => {
  const base = { source: "gateway-record", reportedPolicyVersion: 3, outcome: "applied", reason: undefined, observedAt: at } as const;
  const enforcing = (policyVersion: number, extra: Partial<Enforcement> = {}): Enforcement =>
    ({ ...base, state: "enforcing", policyVersion, policyHash: "h", policySource: "sandbox", settingsRevision: 0n, configRevision: 0n, degraded: false, ...extra }) as Enforcement;

  it("names what runs, and why it is not the desired version", () => {
    expect(enforcedText(enforcing(3), 3, { version: 3, status: "loaded", loadError: undefined, createdAt: at, loadedAt: at }, [])).toBe("v3");
    expect(enforcedText(enforcing(2), 3, { version: 3, status: "failed", loadError: REASON, createdAt: at, loadedAt: undefined }, ["behind", "last-update-failed"])).toBe(
      "v2 (last known good; v3 was rejected)",
    );
    expect(enforcedText(enforcing(2), 3, { version: 3, status: "pending", loadError: undefined, createdAt: at, loadedAt: undefined }, ["behind"])).toBe("v2 (v3 not applied yet)");
    expect(enforcedText(enforcing(3, { degraded: true, reason: "audit unreachable" }), 3, undefined, [])).toBe("v3 (degraded: audit unreachable)");
  });

  it("fails closed, local override, not reported", () => {
    expect(enforcedText({ ...base, state: "failed-closed", outcome: "failed-closed", reason: REASON }, 3, undefined, ["failed-closed"])).toBe(
      `fails closed (deny all) since 2026-12-01T09:00:00.000Z: ${REASON}`,
    );
    expect(enforcedText({ ...base, state: "local-override", outcome: "retained-local-override" }, 3, undefined, ["local-override"])).toBe(
      "local policy overrides the gateway's since 2026-12-01T09:00:00.000Z",
    );
    expect(enforcedText({ ...base, state: "unknown", observedAt: undefined }, 3, undefined, ["unreported"])).toBe("not reported yet");
  });
});
