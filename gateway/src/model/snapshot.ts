// The complete desired configuration of one sandbox as the supervisor receives it (and as
// GetSandboxConfig reports it): the policy in force (the global policy wins when one is set),
// the effective settings (global ones win and are marked so), and the revision tuple that an
// acknowledgement must match exactly.

import { createHash } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  PolicySource,
  SandboxConfigSnapshotSchema,
  SandboxPolicySchema,
  SettingScope,
  SettingValueSchema,
  type SandboxConfigSnapshot,
  type SandboxPolicy,
  type EffectiveSetting,
} from "openshell-config/raw";
import type { SandboxRecord, StoreTx, Store } from "../store/store.js";

type Reader = Pick<Store | StoreTx, "settings" | "policyRevision"> & {
  latestPolicyRevision?: StoreTx["latestPolicyRevision"];
};

/** Builds the snapshot from the store; `reader` may be a transaction or the store. */
export async function buildSnapshot(reader: Reader, sb: SandboxRecord, globalPolicyVersion: number): Promise<SandboxConfigSnapshot> {
  const global = globalPolicyVersion > 0 ? await reader.policyRevision("", globalPolicyVersion) : undefined;
  const own = sb.policyVersion > 0 ? await reader.policyRevision(sb.id, sb.policyVersion) : undefined;
  const source = global ? PolicySource.GLOBAL : PolicySource.SANDBOX;
  const policyRev = global ?? own;
  const settings: Record<string, EffectiveSetting> = {};
  for (const s of await reader.settings(sb.id)) {
    settings[s.key] = { $typeName: "openshell.sandbox.v1.EffectiveSetting", value: fromBinary(SettingValueSchema, s.value), scope: SettingScope.SANDBOX };
  }
  for (const s of await reader.settings("")) {
    settings[s.key] = { $typeName: "openshell.sandbox.v1.EffectiveSetting", value: fromBinary(SettingValueSchema, s.value), scope: SettingScope.GLOBAL };
  }
  const policyHash = policyRev?.hash ?? "";
  const policy = policyRev ? fromBinary(SandboxPolicySchema, policyRev.policy) : create(SandboxPolicySchema);
  return create(SandboxConfigSnapshotSchema, {
    policy,
    supervisorMiddlewareServices: middlewareServices(policy),
    version: sb.policyVersion,
    policyHash,
    settings,
    configRevision: configRevision(policyHash, settings),
    policySource: source,
    globalPolicyVersion: global ? globalPolicyVersion : 0,
    providerEnvRevision: sb.providerEnvRevision,
    workspace: sb.workspace,
    policyValidationFailureMode: "retain_last_valid",
    settingsRevision: sb.settingsRevision,
  });
}

/** A 63-bit fingerprint of the effective policy and settings: equal configurations, equal revision. */
export function configRevision(policyHash: string, settings: Record<string, EffectiveSetting>): bigint {
  const h = createHash("sha256").update(policyHash);
  for (const key of Object.keys(settings).sort()) {
    const s = settings[key]!;
    h.update(`\0${key}\0${s.scope}\0`);
    if (s.value) h.update(toBinary(SettingValueSchema, s.value));
  }
  return h.digest().readBigUInt64BE(0) & 0x7fff_ffff_ffff_ffffn;
}

/**
 * The middleware services the supervisor must reach: each policy middleware whose `config`
 * names a `grpc_endpoint` (host:port). This reference gateway has no separate service registry.
 */
function middlewareServices(policy: SandboxPolicy) {
  const services = [];
  for (const [name, mw] of Object.entries(policy.networkMiddlewares)) {
    const endpoint = mw.config?.grpc_endpoint;
    if (typeof endpoint !== "string" || endpoint === "") continue;
    services.push({ name: mw.middleware || name, grpcEndpoint: endpoint, allowInsecureTransport: true });
  }
  return services;
}
