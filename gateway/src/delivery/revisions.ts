// Exact revisions of delivered snapshots: what a result must echo, what an operation targets,
// and the fingerprints that let an unchanged snapshot go unsent.

import { create, equals } from "@bufbuild/protobuf";
import {
  ConfigSnapshotRevisionSchema,
  type ConfigSnapshotRevision,
  type ProviderEnvironmentSnapshot,
  type SandboxConfigSnapshot,
} from "openshell-config/raw";
import { encodeMessage } from "../model/binary-encoder.js";

export function sandboxRevision(s: SandboxConfigSnapshot): ConfigSnapshotRevision {
  return create(ConfigSnapshotRevisionSchema, {
    component: {
      case: "sandboxConfig",
      value: {
        configRevision: s.configRevision,
        policyVersion: s.version,
        policySource: s.policySource,
        globalPolicyVersion: s.globalPolicyVersion,
        settingsRevision: s.settingsRevision,
      },
    },
  });
}

export function providerRevision(s: ProviderEnvironmentSnapshot): ConfigSnapshotRevision {
  return create(ConfigSnapshotRevisionSchema, { component: { case: "providerEnvironment", value: s.providerEnvRevision } });
}

export function sameRevision(a: ConfigSnapshotRevision | undefined, b: ConfigSnapshotRevision | undefined): boolean {
  if (!a || !b) return a === b;
  // The two components every update compares, field by field (what `equals` does, without its
  // reflection: a result is compared with what was delivered two or three times).
  const x = a.component;
  const y = b.component;
  if (x.case === "sandboxConfig" && y.case === "sandboxConfig") {
    const p = x.value;
    const q = y.value;
    return (
      p.configRevision === q.configRevision &&
      p.policyVersion === q.policyVersion &&
      p.policySource === q.policySource &&
      p.globalPolicyVersion === q.globalPolicyVersion &&
      p.settingsRevision === q.settingsRevision
    );
  }
  if (x.case === "providerEnvironment" && y.case === "providerEnvironment") return x.value === y.value;
  return equals(ConfigSnapshotRevisionSchema, a, b);
}

export function revisionBytes(r: ConfigSnapshotRevision): Uint8Array {
  return encodeMessage(ConfigSnapshotRevisionSchema, r);
}

/** Fingerprint of what the supervisor would run: equal fingerprints need no resend. */
export function sandboxFingerprint(s: SandboxConfigSnapshot): string {
  return `${s.configRevision}|${s.version}|${s.policySource}|${s.globalPolicyVersion}|${s.settingsRevision}|${s.providerEnvRevision}|${s.providerAttachmentEpoch}|${s.policyHash}`;
}

export function providerFingerprint(s: ProviderEnvironmentSnapshot): string {
  return `${s.providerEnvRevision}|${s.providerAttachmentEpoch}|${s.policyHash}`;
}
