// A commit must leave a configuration a supervisor can receive. Requests may be 4 MiB, but a
// supervisor takes messages of at most 3 MiB (upstream's limit), and the largest message it gets
// for a sandbox is the bootstrap: the sandbox config snapshot (policy, middleware services,
// settings) and the provider environment together. A review committed a 3.5 MiB policy; its
// operation then failed, every later settings update failed with it, and a restarted supervisor
// was refused on every reconnect until an admin committed a smaller policy. So each commit
// measures what the sandbox's bootstrap would be and refuses, RESOURCE_EXHAUSTED and inside its
// transaction (nothing is stored), a change that would make it larger than the cap. A change
// that does not make it larger (a smaller policy, a deleted setting) is never refused: that is
// how a configuration already too large (stored before this check) is repaired.
//
// Measured without encoding the policy again: the policy's size is its stored encoding's; the
// middleware services and the provider environment, which depend on the policy, are encoded on
// their own (and their size kept per sandbox, policy and provider revision, so that a settings
// update does not decode a large policy each time); the rest of the snapshot is small.

import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ProviderEnvironmentSnapshotSchema, SandboxConfigSnapshotSchema, SandboxPolicySchema, type SandboxPolicy } from "openshell-config/raw";
import { buildProviderSnapshot } from "../delivery/provider-snapshot.js";
import { encodeMessage } from "../model/binary-encoder.js";
import { MAX_CONFIG_REVISION, middlewareServices, snapshotWithPolicy, type SnapshotParts } from "../model/snapshot.js";
import type { PolicyRevisionRecord, SandboxRecord, SettingRecord, StoreTx } from "../store/store.js";

/** Upstream supervisors' limit on one message (3 MiB, under gRPC's usual 4 MiB). */
export const DEFAULT_MAX_SNAPSHOT_BYTES = 3 * 1024 * 1024;

/**
 * More than a bootstrap message adds to the two snapshots it carries: the session id, the
 * heartbeat interval, the apply flag, and the tags and lengths of three levels of nesting.
 */
export const BOOTSTRAP_OVERHEAD = 256;

const MiB = 1024 * 1024;
const EMPTY_POLICY = create(SandboxPolicySchema);
const POLICY_FIELD = SandboxConfigSnapshotSchema.fields.find((f) => f.localName === "policy")!.number;

function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/** A policy in force and what depends on it. */
export interface PolicyInForce {
  readonly policy: SandboxPolicy;
  /** Its encoded size (the stored revision's bytes). */
  readonly bytes: number;
  readonly hash: string;
}

/**
 * Sizes of the policy-dependent part (policy field, middleware services, provider environment),
 * by sandbox, policy content and provider revision. Keyed by the policy's hash and encoded length
 * (the hash covers known fields only; unknown ones add to the length), never by a revision number,
 * which a rolled-back commit may leave to different content.
 */
const policySides = new Map<string, number>();
const MAX_POLICY_SIDES = 1024;

/** The part of the bootstrap that depends on the policy in force (`hash`, `bytes` long; `decode` it when not kept). */
async function policySide(tx: StoreTx, sb: SandboxRecord, source: string, hash: string, bytes: number, decode: () => SandboxPolicy): Promise<number> {
  const key = `${sb.id}|${source}|${hash}|${bytes}|${sb.providerEnvRevision}`;
  const kept = policySides.get(key);
  if (kept !== undefined) return kept;
  const policy = decode();
  const serviceList = middlewareServices(policy);
  const services = serviceList.length === 0 ? 0 : encodeMessage(SandboxConfigSnapshotSchema, create(SandboxConfigSnapshotSchema, { supervisorMiddlewareServices: serviceList })).length;
  const size = varintSize(POLICY_FIELD << 3) + varintSize(bytes) + bytes + services + (await providerBytes(tx, sb, policy, hash));
  policySides.delete(key);
  policySides.set(key, size);
  if (policySides.size > MAX_POLICY_SIDES) policySides.delete(policySides.keys().next().value!);
  return size;
}

/**
 * Encoded sizes of provider environments without providers, by provider revision and the policy
 * hash's length: all such a snapshot holds besides (most sandboxes have no provider, and each
 * policy change would otherwise build and encode one to measure it).
 */
const bareProviderSizes = new Map<string, number>();
const MAX_BARE_PROVIDER_SIZES = 64;

/** The encoded size of `sb`'s provider environment under `policy` (whose hash is `hash`). */
async function providerBytes(tx: StoreTx, sb: SandboxRecord, policy: SandboxPolicy, hash: string): Promise<number> {
  const bare = sb.providers.length === 0;
  const key = bare ? `${sb.providerEnvRevision}|${Buffer.byteLength(hash)}` : "";
  const kept = bare ? bareProviderSizes.get(key) : undefined;
  if (kept !== undefined) return kept;
  const size = encodeMessage(ProviderEnvironmentSnapshotSchema, await buildProviderSnapshot(tx, sb, { policy, policyHash: hash })).length;
  if (bare) {
    if (bareProviderSizes.size >= MAX_BARE_PROVIDER_SIZES) bareProviderSizes.delete(bareProviderSizes.keys().next().value!);
    bareProviderSizes.set(key, size);
  }
  return size;
}

/** The rest of the snapshot: settings, revisions, hash, workspace (its configuration revision at its longest: not hashed). */
function settingsSide(sb: SandboxRecord, parts: SnapshotParts, globalPolicyVersion: number): number {
  const snap = snapshotWithPolicy(sb, parts, globalPolicyVersion, EMPTY_POLICY, MAX_CONFIG_REVISION);
  snap.policy = undefined;
  return encodeMessage(SandboxConfigSnapshotSchema, snap).length;
}

/** A revision record standing for the sandbox's own policy in snapshot parts (only its hash is read). */
function ownRevision(sb: SandboxRecord, hash: string): PolicyRevisionRecord {
  return { sandboxId: sb.id, version: sb.policyVersion, policy: new Uint8Array(0), hash, status: 0, loadError: "", createdAt: new Date(0), loadedAt: undefined, provenance: {} };
}

/**
 * The bootstrap size of `sb` with its own policy `own` (a new revision, or the one at
 * `sb.policyVersion` when undefined), whatever global policy is in force: once that is removed,
 * the sandbox's own configuration is what its supervisor receives. `settings` and
 * `globalSettingsRead`: the sandbox's and the global settings, when the caller has them.
 */
export async function ownConfigurationBytes(
  tx: StoreTx,
  sb: SandboxRecord,
  own: PolicyInForce | undefined,
  settings?: readonly SettingRecord[],
  globalSettingsRead?: readonly SettingRecord[],
): Promise<number> {
  const hash = own?.hash ?? (sb.policyVersion > 0 ? sb.policyHash : "");
  const [sandboxSettings, globalSettings] = await Promise.all([settings ?? tx.settings(sb.id), globalSettingsRead ?? tx.settings("")]);
  const parts: SnapshotParts = { global: undefined, own: ownRevision(sb, hash), sandboxSettings, globalSettings };
  let side: number;
  if (own) {
    side = await policySide(tx, sb, "own", own.hash, own.bytes, () => own.policy);
  } else {
    // The stored revision is read for its length; it is decoded only when its sizes are not kept.
    const record = sb.policyVersion > 0 ? await tx.policyRevision(sb.id, sb.policyVersion) : undefined;
    side = record
      ? await policySide(tx, sb, "own", record.hash, record.policy.length, () => fromBinary(SandboxPolicySchema, record.policy))
      : await policySide(tx, sb, "own", "", 0, () => EMPTY_POLICY);
  }
  return side + settingsSide(sb, parts, 0) + BOOTSTRAP_OVERHEAD;
}

/**
 * The bootstrap size of `sb` as its supervisor receives it now: with the global policy when one
 * is in force. `settings`: the sandbox's and the global settings, when the caller has read them.
 */
export async function configurationBytes(
  tx: StoreTx,
  sb: SandboxRecord,
  settings?: { readonly sandbox: readonly SettingRecord[]; readonly global: readonly SettingRecord[] },
): Promise<number> {
  // Shared: a size check inserts no global revision, so sandbox commits do not queue behind each
  // other for it, only behind a global policy commit (and it behind them).
  const [global, sandboxSettings, globalSettings] = await Promise.all([tx.latestPolicyRevision("", "shared"), settings?.sandbox ?? tx.settings(sb.id), settings?.global ?? tx.settings("")]);
  if (!global) return ownConfigurationBytes(tx, sb, undefined, sandboxSettings, globalSettings);
  const parts: SnapshotParts = { global, own: undefined, sandboxSettings, globalSettings };
  const side = await policySide(tx, sb, "global", global.hash, global.policy.length, () => fromBinary(SandboxPolicySchema, global.policy));
  return side + settingsSide(sb, parts, global.version) + BOOTSTRAP_OVERHEAD;
}

/**
 * The bootstrap every sandbox receives at least while global policy `policy` (or none) and the
 * global settings are in force: a sandbox's own settings and providers only add to it.
 */
export function globalConfigurationBytes(policy: PolicyInForce | undefined, globalSettings: readonly SettingRecord[], globalPolicyVersion: number): number {
  const sb: SandboxRecord = {
    id: "",
    workspace: "",
    name: "",
    labels: {},
    annotations: {},
    spec: new Uint8Array(0),
    phase: 0,
    resourceVersion: 0n,
    policyVersion: 0,
    policyHash: "",
    settingsRevision: 0n,
    providerEnvRevision: 0n,
    providers: [],
    createdAt: new Date(0),
    deletionAt: undefined,
  };
  const global = policy ? { ...ownRevision(sb, policy.hash), sandboxId: "" } : undefined;
  const parts: SnapshotParts = { global, own: undefined, sandboxSettings: [], globalSettings };
  const services = policy ? encodeMessage(SandboxConfigSnapshotSchema, create(SandboxConfigSnapshotSchema, { supervisorMiddlewareServices: middlewareServices(policy.policy) })).length : 0;
  const policyField = policy ? varintSize(POLICY_FIELD << 3) + varintSize(policy.bytes) + policy.bytes : 0;
  return policyField + services + settingsSide(sb, parts, globalPolicyVersion) + BOOTSTRAP_OVERHEAD;
}

/** `bytes` for people: "3 MiB", "3.6 MiB", "7.8 KiB". */
function humanSize(bytes: number): string {
  const [v, unit] = bytes >= MiB ? [bytes / MiB, "MiB"] : [bytes / 1024, "KiB"];
  return Number.isInteger(v) ? `${v} ${unit}` : `${v.toFixed(1)} ${unit}`;
}

/**
 * Throws RESOURCE_EXHAUSTED when `after` (a bootstrap size) is over `maxBytes` and the change
 * makes it larger than `before()` (called only then: measuring the previous configuration may
 * mean decoding its policy).
 */
export async function assertWithinSnapshotCap(after: number, maxBytes: number, before: () => Promise<number>, what = "the sandbox configuration"): Promise<void> {
  if (after <= maxBytes) return;
  if (after <= (await before())) return;
  throw new ConnectError(
    `${what} would be ${humanSize(after)} (${after} bytes) as a supervisor receives it, over the ${humanSize(maxBytes)} (${maxBytes} bytes) a supervisor accepts; nothing was committed`,
    Code.ResourceExhausted,
  );
}

/** CreateSandbox: refuses a new sandbox (`sb`, not yet stored) whose first bootstrap would be over `maxBytes`. */
export async function assertCreatable(tx: StoreTx, sb: SandboxRecord, policy: SandboxPolicy, policyBytes: number, maxBytes = DEFAULT_MAX_SNAPSHOT_BYTES): Promise<void> {
  // Under the global scope's shared lock (PostgreSQL; held to commit): a global setting that
  // another replica is committing is measured here once it is committed, not missed.
  await tx.latestPolicyRevision("", "shared");
  const size = await ownConfigurationBytes(tx, sb, { policy, bytes: policyBytes, hash: sb.policyHash }, []);
  await assertWithinSnapshotCap(size, maxBytes, async () => 0);
}
