// What a sandbox enforces, as plain data: the gateway's record of the sandbox's latest result
// (our extension field), or, from a gateway without it, what upstream's `active_version` says.
// Kept apart from the desired configuration on purpose: the two differ exactly when something
// went wrong, and that difference is what a caller needs to see.

import {
  PolicyEnforcementState,
  type GetSandboxPolicyStatusResponse,
  type PolicyEnforcement,
} from "./gen/openshell/v1/config_pb.js";
import { OUTCOME_NAMES, type ApplyOutcome } from "./completion.js";
import { POLICY_SOURCE_NAMES, type PolicySourceName } from "./convert/revision.js";
import { toDate } from "./convert/timestamp.js";

/** Where an enforcement answer comes from. */
export type EnforcementSource =
  /** The gateway's durable record of the sandbox's latest result (bootstrap or update). */
  | "gateway-record"
  /** Only upstream's `active_version` (a gateway without the record): no time, reason or hash. */
  | "active-version";

/** Fields every enforcement answer has. */
export interface EnforcementBase {
  /** Where this answer comes from. */
  readonly source: EnforcementSource;
  /** The policy version the latest result answered for (0 when unknown). */
  readonly reportedPolicyVersion: number;
  /** How the latest result answered (`unspecified` when unknown). */
  readonly outcome: ApplyOutcome;
  /** Why the sandbox does not run the reported revision cleanly (sanitized); undefined when it does. */
  readonly reason: string | undefined;
  /** When the gateway learnt it; undefined when unknown. */
  readonly observedAt: Date | undefined;
}

/** The sandbox runs this exact revision, possibly degraded. */
export interface EnforcingPolicy extends EnforcementBase {
  /** Discriminates the enforcement states. */
  readonly state: "enforcing";
  /** The policy version in force (the global policy's version when `policySource` is global). */
  readonly policyVersion: number;
  /** Hash of the policy in force; undefined when the gateway does not say. */
  readonly policyHash: string | undefined;
  /** The sandbox's own policy or the global one. */
  readonly policySource: PolicySourceName;
  /** The settings revision in force (undefined when unknown). */
  readonly settingsRevision: bigint | undefined;
  /** The configuration fingerprint in force (undefined when unknown). */
  readonly configRevision: bigint | undefined;
  /** True when it applied but reported a degraded part (e.g. an unreachable middleware service). */
  readonly degraded: boolean;
}

/** The sandbox denies everything: no valid policy is in force. */
export interface FailingClosed extends EnforcementBase {
  /** Discriminates the enforcement states. */
  readonly state: "failed-closed";
}

/** An explicit local policy inside the sandbox takes precedence over the gateway's. */
export interface LocalOverride extends EnforcementBase {
  /** Discriminates the enforcement states. */
  readonly state: "local-override";
}

/** Nothing reported yet (or the gateway cannot tell). */
export interface EnforcementUnknown extends EnforcementBase {
  /** Discriminates the enforcement states. */
  readonly state: "unknown";
}

/** What a sandbox enforces. Switch on `state`. */
export type Enforcement = EnforcingPolicy | FailingClosed | LocalOverride | EnforcementUnknown;

/**
 * One way the enforced configuration differs from the desired one:
 * `behind`: the sandbox runs another revision than the desired one (an older one, or the last
 * known good after a failure); `failed-closed`: it denies everything; `local-override`: a local
 * policy wins; `last-update-failed`: the newest desired policy revision failed to load;
 * `unreported`: the sandbox has not said what it enforces yet.
 */
export type Drift = "behind" | "failed-closed" | "local-override" | "last-update-failed" | "unreported";

/** The revision a sandbox should run, as far as a caller knows it. */
export interface WantedRevision {
  /** The desired policy version (the global one's when `policySource` is global). */
  readonly policyVersion: number;
  /** Undefined when unknown: then a sandbox running the global policy is not called behind. */
  readonly policySource?: PolicySourceName;
  /** The desired configuration fingerprint, when known (it also covers settings). */
  readonly configRevision?: bigint;
}

/** How `enforced` differs from `wanted`, before the revision history is considered (no `last-update-failed`). */
export function enforcementDrift(enforced: Enforcement, wanted: WantedRevision): Drift[] {
  switch (enforced.state) {
    case "unknown":
      return ["unreported"];
    case "failed-closed":
      return ["failed-closed"];
    case "local-override":
      return ["local-override"];
    case "enforcing": {
      const source = wanted.policySource ?? (enforced.policySource === "global" ? undefined : enforced.policySource);
      const otherPolicy = source !== undefined && (enforced.policySource !== source || enforced.policyVersion !== wanted.policyVersion);
      // The fingerprint also covers settings; compare it only when both sides know it.
      const otherConfig = wanted.configRevision !== undefined && enforced.configRevision !== undefined && enforced.configRevision !== wanted.configRevision;
      return otherPolicy || otherConfig ? ["behind"] : [];
    }
  }
}

/** The enforcement a GetSandboxPolicyStatus answer (or a Sandbox's status, from its fields) describes. */
export function enforcementOfStatus(res: Pick<GetSandboxPolicyStatusResponse, "enforcement" | "activeVersion">): Enforcement {
  if (res.enforcement) return fromPolicyEnforcement(res.enforcement);
  const base = { source: "active-version", reportedPolicyVersion: 0, outcome: "unspecified", reason: undefined, observedAt: undefined } as const;
  if (res.activeVersion === 0) return { ...base, state: "unknown" };
  return {
    ...base,
    state: "enforcing",
    policyVersion: res.activeVersion,
    policyHash: undefined,
    policySource: "sandbox",
    settingsRevision: undefined,
    configRevision: undefined,
    degraded: false,
  };
}

/** Maps our extension message (from GetSandboxPolicyStatus or a Sandbox's status) to plain data. */
export function fromPolicyEnforcement(e: PolicyEnforcement): Enforcement {
  const outcome = OUTCOME_NAMES[e.outcome] ?? "unspecified";
  const base = {
    source: "gateway-record",
    reportedPolicyVersion: e.reportedPolicyVersion,
    outcome,
    reason: e.reason === "" ? undefined : e.reason,
    observedAt: toDate(e.observedTime),
  } as const;
  switch (e.state) {
    case PolicyEnforcementState.ENFORCING: {
      const source = POLICY_SOURCE_NAMES[e.policySource] ?? "unspecified";
      return {
        ...base,
        state: "enforcing",
        policyVersion: source === "global" ? e.globalPolicyVersion : e.policyVersion,
        policyHash: e.policyHash === "" ? undefined : e.policyHash,
        policySource: source,
        settingsRevision: e.settingsRevision,
        configRevision: e.configRevision,
        degraded: outcome === "degraded",
      };
    }
    case PolicyEnforcementState.FAILED_CLOSED:
      return { ...base, state: "failed-closed" };
    case PolicyEnforcementState.LOCAL_OVERRIDE:
      return { ...base, state: "local-override" };
    default:
      return { ...base, state: "unknown" };
  }
}
