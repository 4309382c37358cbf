// What a sandbox enforces, derived from each validated supervisor result (bootstrap or update)
// and kept as one durable record per sandbox. Results say what is in force, not only whether the
// requested revision took: a failure may leave the last known good policy running, deny
// everything, or defer to a local policy. The record is the gateway's answer to "what does this
// sandbox enforce now", on every surface and across restarts of either side.

import { create, fromBinary } from "@bufbuild/protobuf";
import { timestampFromDate } from "@bufbuild/protobuf/wkt";
import {
  ConfigApplyOutcome as Outcome,
  PolicyEnforcementSchema,
  PolicyEnforcementState as Enforcement,
  PolicySource,
  type ConfigComponentApplyResult,
  type ConfigSnapshotRevision,
  type PolicyEnforcement,
  type SandboxConfigSnapshot,
} from "openshell-config/raw";
import type { EnforcementRecord } from "../store/store.js";
import { sanitizeError } from "../operations/states.js";
import { encodeMessage } from "./binary-encoder.js";

/** The policy a FAILED_RETAINED_LAST_KNOWN_GOOD result keeps: its version and where it comes from. */
export function keptPolicy(result: ConfigComponentApplyResult): { version: number; source: PolicySource } | undefined {
  if (result.outcome !== Outcome.FAILED_RETAINED_LAST_KNOWN_GOOD) return undefined;
  const kept = result.appliedRevision;
  const r = kept?.component.case === "sandboxConfig" ? kept.component.value : undefined;
  if (!r) return undefined;
  return { version: r.policySource === PolicySource.GLOBAL ? r.globalPolicyVersion : r.policyVersion, source: r.policySource };
}

/**
 * The enforcement a result reports, or `undefined` when it says nothing about what is in force
 * (IGNORED_STALE and UNSUPPORTED answer for an old or unknown snapshot). `keptHash` is the hash of
 * the policy a FAILED_RETAINED_LAST_KNOWN_GOOD result keeps (see keptPolicy; the caller looks it up).
 */
export function enforcementOfResult(
  snapshot: SandboxConfigSnapshot,
  delivered: ConfigSnapshotRevision,
  result: ConfigComponentApplyResult,
  reason: string,
  keptHash: string,
): PolicyEnforcement | undefined {
  const reported = snapshot.policySource === PolicySource.GLOBAL ? snapshot.globalPolicyVersion : snapshot.version;
  const reportedReason = sanitizeError(reason);
  const running = (rev: ConfigSnapshotRevision | undefined, hash: string) => {
    const r = rev?.component.case === "sandboxConfig" ? rev.component.value : undefined;
    return create(PolicyEnforcementSchema, {
      reportedPolicyVersion: reported,
      outcome: result.outcome,
      reason: reportedReason,
      state: Enforcement.ENFORCING,
      policyVersion: r?.policyVersion ?? 0,
      policyHash: hash,
      policySource: r?.policySource ?? PolicySource.UNSPECIFIED,
      globalPolicyVersion: r?.globalPolicyVersion ?? 0,
      settingsRevision: r?.settingsRevision ?? 0n,
      configRevision: r?.configRevision ?? 0n,
    });
  };
  switch (result.outcome) {
    case Outcome.APPLIED:
    case Outcome.IGNORED_DUPLICATE:
    case Outcome.DEGRADED:
      return running(delivered, snapshot.policyHash);
    case Outcome.FAILED_RETAINED_LAST_KNOWN_GOOD:
      return running(result.appliedRevision, keptHash);
    case Outcome.FAILED_CLOSED:
      return create(PolicyEnforcementSchema, { reportedPolicyVersion: reported, outcome: result.outcome, reason: reportedReason, state: Enforcement.FAILED_CLOSED });
    case Outcome.RETAINED_LOCAL_OVERRIDE:
      return create(PolicyEnforcementSchema, { reportedPolicyVersion: reported, outcome: result.outcome, reason: reportedReason, state: Enforcement.LOCAL_OVERRIDE });
    default:
      return undefined;
  }
}

/** The sandbox policy version a record says is in force (0 = none: failing closed, local or global policy). */
export function enforcedSandboxVersion(e: PolicyEnforcement): number {
  return e.state === Enforcement.ENFORCING && e.policySource !== PolicySource.GLOBAL ? e.policyVersion : 0;
}

export function toEnforcementRecord(sandboxId: string, e: PolicyEnforcement, observedAt: Date): EnforcementRecord {
  return { sandboxId, state: e.state, policyVersion: enforcedSandboxVersion(e), detail: encodeMessage(PolicyEnforcementSchema, e), observedAt };
}

export function fromEnforcementRecord(r: EnforcementRecord): PolicyEnforcement {
  const e = fromBinary(PolicyEnforcementSchema, r.detail);
  e.observedTime = timestampFromDate(r.observedAt);
  return e;
}
