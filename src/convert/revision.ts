// The exact revision an operation targets, as plain data. Revisions are equality tokens: 64-bit
// counters stay `bigint` so that nothing is rounded, and revisions of different kinds never compare.

import type { ConfigSnapshotRevision } from "../gen/openshell/v1/config_pb.js";
import { PolicySource } from "../gen/openshell/sandbox/v1/sandbox_pb.js";

/** Where the effective policy of a sandbox comes from. */
export type PolicySourceName = "sandbox" | "global" | "unspecified";

/** The policy source name of each wire value. */
export const POLICY_SOURCE_NAMES: Readonly<Record<PolicySource, PolicySourceName>> = {
  [PolicySource.UNSPECIFIED]: "unspecified",
  [PolicySource.SANDBOX]: "sandbox",
  [PolicySource.GLOBAL]: "global",
};

/** The revision of the whole sandbox configuration snapshot that must be acknowledged. */
export interface SandboxConfigTarget {
  /** Discriminates the kinds of target. */
  readonly kind: "sandbox-config";
  /** Fingerprint revision of policy plus settings. */
  readonly configRevision: bigint;
  /** The sandbox policy version. */
  readonly policyVersion: number;
  /** Whether the sandbox's own policy or the global policy is in force. */
  readonly policySource: PolicySourceName;
  /** Non-zero only when the global policy is in force. */
  readonly globalPolicyVersion: number;
  /** The sandbox settings revision. */
  readonly settingsRevision: bigint;
}

/** A provider environment revision (credentials delivered to the sandbox). */
export interface ProviderEnvironmentTarget {
  /** Discriminates the kinds of target. */
  readonly kind: "provider-environment";
  /** The revision of the sandbox's provider environment that must be acknowledged. */
  readonly providerEnvRevision: bigint;
}

/** A provider receipt: the identity of one provider's desired state in one sandbox. */
export interface ProviderTarget {
  /** Discriminates the kinds of target. */
  readonly kind: "provider-target";
  /** The sandbox's id. */
  readonly sandboxId: string;
  /** The sandbox's name. */
  readonly sandbox: string;
  /** The sandbox's provider attachment epoch; an opaque token, compared for equality only. */
  readonly attachmentEpoch: string;
  /** The provider's id. */
  readonly providerId: string;
  /** The provider record's resource version. */
  readonly providerResourceVersion: bigint;
  /** The sandbox's provider environment revision. */
  readonly providerEnvRevision: bigint;
  /** The sandbox's configuration revision (fingerprint of policy plus settings). */
  readonly configRevision: bigint;
  /** SHA-256 of the canonical policy in force. */
  readonly policyHash: string;
}

/** A policy version reported by a polling-mode gateway (no operation to track). */
export interface PolicyVersionTarget {
  /** Discriminates the kinds of target. */
  readonly kind: "policy-version";
  /** The sandbox policy version whose load status is followed. */
  readonly policyVersion: number;
}

/** The exact revision an operation must see acknowledged. */
export type TargetRevision = SandboxConfigTarget | ProviderEnvironmentTarget | ProviderTarget | PolicyVersionTarget;

/** Maps the wire oneof; an unset oneof (not yet associated) is `undefined`. */
export function fromSnapshotRevision(rev: ConfigSnapshotRevision | undefined): TargetRevision | undefined {
  const c = rev?.component;
  switch (c?.case) {
    case "sandboxConfig":
      return {
        kind: "sandbox-config",
        configRevision: c.value.configRevision,
        policyVersion: c.value.policyVersion,
        policySource: POLICY_SOURCE_NAMES[c.value.policySource] ?? "unspecified",
        globalPolicyVersion: c.value.globalPolicyVersion,
        settingsRevision: c.value.settingsRevision,
      };
    case "providerEnvironment":
      return { kind: "provider-environment", providerEnvRevision: c.value };
    case "providerTarget":
      return {
        kind: "provider-target",
        sandboxId: c.value.sandboxId,
        sandbox: c.value.sandbox,
        attachmentEpoch: c.value.attachmentEpoch,
        providerId: c.value.providerId,
        providerResourceVersion: c.value.providerResourceVersion,
        providerEnvRevision: c.value.providerEnvRevision,
        configRevision: c.value.configRevision,
        policyHash: c.value.policyHash,
      };
    default:
      return undefined;
  }
}
