// The complete desired configuration of one sandbox as the supervisor receives it (and as
// GetSandboxConfig reports it): the policy in force (the global policy wins when one is set),
// the effective settings (global ones win and are marked so), and the revision tuple that an
// acknowledgement must match exactly.

import { createHash, type Hash } from "node:crypto";
import { create, fromBinary } from "@bufbuild/protobuf";
import {
  ConfigSnapshotRevisionSchema,
  PolicySource,
  SandboxConfigSnapshotSchema,
  SandboxPolicySchema,
  SettingScope,
  SettingValueSchema,
  type ConfigSnapshotRevision,
  type SandboxConfigSnapshot,
  type SandboxPolicy,
  type EffectiveSetting,
} from "openshell-config/raw";
import type { PolicyRevisionRecord, SandboxRecord, SettingRecord, StoreTx, Store } from "../store/store.js";

export type Reader = Pick<Store | StoreTx, "settings" | "policyRevision">;

/** What a snapshot is made of, as stored: the policy revision in force and the effective settings. */
interface Desired {
  readonly global: PolicyRevisionRecord | undefined;
  readonly policyRev: PolicyRevisionRecord | undefined;
  /** Effective settings by key (global ones override the sandbox's), with their stored bytes. */
  readonly settings: Map<string, { readonly scope: SettingScope; readonly value: Uint8Array }>;
}

/** The stored parts a snapshot is built from (see desired-cache.ts, which keeps them between builds). */
export interface SnapshotParts {
  /** The global policy revision in force, when one is set. */
  readonly global: PolicyRevisionRecord | undefined;
  /** The sandbox's own revision `sb.policyVersion`; only read (and needed) without a global policy. */
  readonly own: PolicyRevisionRecord | undefined;
  readonly sandboxSettings: readonly SettingRecord[];
  readonly globalSettings: readonly SettingRecord[];
}

/** Effective settings: global ones override the sandbox's. */
export function effectiveSettings(sandboxSettings: readonly SettingRecord[], globalSettings: readonly SettingRecord[]) {
  const settings = new Map<string, { scope: SettingScope; value: Uint8Array }>();
  for (const s of sandboxSettings) settings.set(s.key, { scope: SettingScope.SANDBOX, value: s.value });
  for (const s of globalSettings) settings.set(s.key, { scope: SettingScope.GLOBAL, value: s.value });
  return settings;
}

async function readParts(reader: Reader, sb: SandboxRecord, globalPolicyVersion: number): Promise<SnapshotParts> {
  const global = globalPolicyVersion > 0 ? await reader.policyRevision("", globalPolicyVersion) : undefined;
  const own = global === undefined && sb.policyVersion > 0 ? await reader.policyRevision(sb.id, sb.policyVersion) : undefined;
  const sandboxSettings = await reader.settings(sb.id);
  const globalSettings = await reader.settings("");
  return { global, own, sandboxSettings, globalSettings };
}

function desiredOf(p: SnapshotParts): Desired {
  return { global: p.global, policyRev: p.global ?? p.own, settings: effectiveSettings(p.sandboxSettings, p.globalSettings) };
}

/**
 * The exact revision the snapshot of `sb` has right now, without building it (no policy
 * decoding, and no read of the sandbox's own policy: its hash is on the sandbox row): what an
 * operation committed now will be acknowledged against.
 */
export async function currentRevision(reader: Reader, sb: SandboxRecord, globalPolicyVersion: number): Promise<ConfigSnapshotRevision> {
  const global = globalPolicyVersion > 0 ? await reader.policyRevision("", globalPolicyVersion) : undefined;
  return revisionFromParts(sb, global, await reader.settings(sb.id), await reader.settings(""), globalPolicyVersion);
}

/** `currentRevision` from parts already read. */
export function revisionFromParts(
  sb: SandboxRecord,
  global: PolicyRevisionRecord | undefined,
  sandboxSettings: readonly SettingRecord[],
  globalSettings: readonly SettingRecord[],
  globalPolicyVersion: number,
): ConfigSnapshotRevision {
  const policyHash = global?.hash ?? (sb.policyVersion > 0 ? sb.policyHash : "");
  return revisionOf(sb, { global, policyHash, settings: effectiveSettings(sandboxSettings, globalSettings) }, globalPolicyVersion);
}

function revisionOf(
  sb: SandboxRecord,
  d: Pick<Desired, "global" | "settings"> & { readonly policyHash: string },
  globalPolicyVersion: number,
): ConfigSnapshotRevision {
  return create(ConfigSnapshotRevisionSchema, {
    component: {
      case: "sandboxConfig",
      value: {
        configRevision: configRevision(d.policyHash, d.settings),
        policyVersion: sb.policyVersion,
        policySource: d.global ? PolicySource.GLOBAL : PolicySource.SANDBOX,
        globalPolicyVersion: d.global ? globalPolicyVersion : 0,
        settingsRevision: sb.settingsRevision,
      },
    },
  });
}

/** Builds the snapshot from the store; `reader` may be a transaction or the store. */
export async function buildSnapshot(reader: Reader, sb: SandboxRecord, globalPolicyVersion: number): Promise<SandboxConfigSnapshot> {
  return snapshotFromParts(sb, await readParts(reader, sb, globalPolicyVersion), globalPolicyVersion);
}

/**
 * Builds the snapshot from parts already read. `ownPolicy`, when given, is `parts.own`'s policy
 * already decoded (used only when no global policy is in force).
 */
export function snapshotFromParts(sb: SandboxRecord, parts: SnapshotParts, globalPolicyVersion: number, ownPolicy?: SandboxPolicy): SandboxConfigSnapshot {
  const rev = parts.global ?? parts.own;
  const policy =
    ownPolicy && !parts.global && rev ? ownPolicy : rev ? fromBinary(SandboxPolicySchema, rev.policy) : create(SandboxPolicySchema);
  return snapshotWithPolicy(sb, parts, globalPolicyVersion, policy);
}

/**
 * The snapshot from parts already read, with `policy` as the policy in force (the global one's,
 * when `parts.global` is set), already decoded. `revision` stands in for the configuration
 * revision where only the snapshot's size matters (the largest one encodes longest).
 */
export function snapshotWithPolicy(sb: SandboxRecord, parts: SnapshotParts, globalPolicyVersion: number, policy: SandboxPolicy, revision?: bigint): SandboxConfigSnapshot {
  const d = desiredOf(parts);
  const settings: Record<string, EffectiveSetting> = {};
  for (const [key, s] of d.settings) {
    settings[key] = { $typeName: "openshell.sandbox.v1.EffectiveSetting", value: fromBinary(SettingValueSchema, s.value), scope: s.scope };
  }
  const policyHash = d.policyRev?.hash ?? "";
  return create(SandboxConfigSnapshotSchema, {
    policy,
    supervisorMiddlewareServices: middlewareServices(policy),
    version: sb.policyVersion,
    policyHash,
    settings,
    configRevision: revision ?? configRevision(policyHash, d.settings),
    policySource: d.global ? PolicySource.GLOBAL : PolicySource.SANDBOX,
    globalPolicyVersion: d.global ? globalPolicyVersion : 0,
    providerEnvRevision: sb.providerEnvRevision,
    workspace: sb.workspace,
    policyValidationFailureMode: "retain_last_valid",
    settingsRevision: sb.settingsRevision,
  });
}

/**
 * A 63-bit fingerprint of the effective policy and settings: equal configurations, equal
 * revision. Hashes the settings' stored encodings, so it needs no decoding.
 */
export function configRevision(policyHash: string, settings: ReadonlyMap<string, { readonly scope: SettingScope; readonly value: Uint8Array }>): bigint {
  // Without settings the revision depends on the policy hash alone, and each change needs it
  // twice (its commit's target, then the snapshot delivered): the second is looked up.
  if (settings.size === 0) {
    let kept = policyOnlyRevisions.get(policyHash);
    if (kept === undefined) {
      kept = digestRevision(createHash("sha256").update(policyHash));
      if (policyOnlyRevisions.size >= MAX_POLICY_ONLY_REVISIONS) policyOnlyRevisions.delete(policyOnlyRevisions.keys().next().value!);
      policyOnlyRevisions.set(policyHash, kept);
    }
    return kept;
  }
  const h = createHash("sha256").update(policyHash);
  for (const key of [...settings.keys()].sort()) {
    const s = settings.get(key)!;
    h.update(`\0${key}\0${s.scope}\0`);
    h.update(s.value);
  }
  return digestRevision(h);
}

/** The largest configuration revision: a stand-in that encodes as long as any. */
export const MAX_CONFIG_REVISION = 0x7fff_ffff_ffff_ffffn;

function digestRevision(h: Hash): bigint {
  return h.digest().readBigUInt64BE(0) & MAX_CONFIG_REVISION;
}

/** configRevision of a policy hash without settings, for the most recent hashes. */
const policyOnlyRevisions = new Map<string, bigint>();
const MAX_POLICY_ONLY_REVISIONS = 256;

/**
 * The middleware services the supervisor must reach: each policy middleware whose `config`
 * names a `grpc_endpoint` (host:port). This reference gateway has no separate service registry.
 */
export function middlewareServices(policy: SandboxPolicy) {
  const services = [];
  for (const [name, mw] of Object.entries(policy.networkMiddlewares)) {
    const endpoint = mw.config?.grpc_endpoint;
    if (typeof endpoint !== "string" || endpoint === "") continue;
    services.push({ name: mw.middleware || name, grpcEndpoint: endpoint, allowInsecureTransport: true });
  }
  return services;
}
