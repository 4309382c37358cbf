// getConfig: a curated read of one sandbox's configuration, the desired side (what the gateway
// delivers: policy, settings, revisions) next to the enforced side (what the sandbox runs,
// according to its latest result), and the drift between them. Two reads in parallel:
// GetSandboxConfig and GetSandboxPolicyStatus, both upstream RPCs; the enforcement record rides
// an extension field and is derived from `active_version` where a gateway lacks it.

import { Code, ConnectError } from "@connectrpc/connect";
import type { SandboxPolicy } from "./gen/openshell/sandbox/v1/sandbox_pb.js";
import { SettingScope } from "./gen/openshell/sandbox/v1/sandbox_pb.js";
import { PolicyStatus, type SandboxPolicyRevision } from "./gen/openshell/v1/config_pb.js";
import { POLICY_SOURCE_NAMES, type PolicySourceName } from "./convert/revision.js";
import { fromSettingValue } from "./convert/setting-value.js";
import type { SettingOutput } from "./convert/setting-types.js";
import { toDate } from "./convert/timestamp.js";
import { enforcementDrift, enforcementOfStatus, type Drift, type Enforcement } from "./enforcement.js";
import { toSdkError } from "./errors.js";
import { withRetry } from "./retry.js";
import { workspaceScope } from "./workspace.js";
import type { ClientContext } from "./context.js";

/** Options of `getConfig`. */
export interface GetConfigOptions {
  /** The sandbox's name. */
  readonly sandbox: string;
  /** Its workspace; default: the client's. */
  readonly workspace?: string;
  /** Cancels the reads. */
  readonly signal?: AbortSignal;
}

/** One effective setting: its value (types kept) and whether the sandbox or the global scope sets it. */
export interface EffectiveSettingOutput {
  /** The value, with its type: string, boolean, bigint (int64) or Uint8Array (bytes). */
  readonly value: SettingOutput | undefined;
  /** Where the value comes from. */
  readonly scope: "sandbox" | "global" | "unspecified";
}

/** The configuration the gateway delivers to the sandbox. */
export interface DesiredConfig {
  /** The effective policy (the global one when `policySource` is global). */
  readonly policy: SandboxPolicy | undefined;
  /** The newest sandbox policy version. */
  readonly policyVersion: number;
  /** Hash of the effective policy. */
  readonly policyHash: string;
  /** The sandbox's own policy or the global one. */
  readonly policySource: PolicySourceName;
  /** The global policy's version when it is in force, else 0. */
  readonly globalPolicyVersion: number;
  /** Effective settings by key. */
  readonly settings: Readonly<Record<string, EffectiveSettingOutput>>;
  /** The sandbox settings revision. */
  readonly settingsRevision: bigint;
  /** Fingerprint of policy plus settings. */
  readonly configRevision: bigint;
}

/** Load status of one policy revision. */
export type PolicyRevisionStatus = "pending" | "loaded" | "failed" | "superseded" | "unspecified";

/** The newest desired policy revision and what the sandbox said of it. */
export interface LatestPolicyRevision {
  /** Its version. */
  readonly version: number;
  /** Its load status. */
  readonly status: PolicyRevisionStatus;
  /** The sanitized load error of a failed revision. */
  readonly loadError: string | undefined;
  /** When it was committed. */
  readonly createdAt: Date | undefined;
  /** When it was first loaded, if ever. */
  readonly loadedAt: Date | undefined;
}


/** A sandbox's desired and enforced configuration. */
export interface SandboxConfig {
  /** The sandbox's name. */
  readonly sandbox: string;
  /** Its workspace as asked (undefined: the gateway's default). */
  readonly workspace: string | undefined;
  /** What the gateway delivers. */
  readonly desired: DesiredConfig;
  /** The newest desired policy revision's status; undefined when the gateway has none. */
  readonly latestRevision: LatestPolicyRevision | undefined;
  /** What the sandbox enforces. */
  readonly enforced: Enforcement;
  /** How enforced differs from desired; empty when the sandbox runs exactly the desired configuration. */
  readonly drift: readonly Drift[];
  /** True when the newest desired revision has not been answered yet (drift may be transient). */
  readonly pending: boolean;
}

const STATUS_NAMES: Readonly<Record<number, PolicyRevisionStatus>> = {
  [PolicyStatus.PENDING]: "pending",
  [PolicyStatus.LOADED]: "loaded",
  [PolicyStatus.FAILED]: "failed",
  [PolicyStatus.SUPERSEDED]: "superseded",
};

const SCOPE_NAMES: Readonly<Record<number, EffectiveSettingOutput["scope"]>> = {
  [SettingScope.SANDBOX]: "sandbox",
  [SettingScope.GLOBAL]: "global",
};

function latestOf(rev: SandboxPolicyRevision | undefined): LatestPolicyRevision | undefined {
  if (!rev) return undefined;
  return {
    version: rev.version,
    status: STATUS_NAMES[rev.status] ?? "unspecified",
    loadError: rev.loadError === "" ? undefined : rev.loadError,
    createdAt: toDate(rev.createdTime),
    loadedAt: toDate(rev.loadedTime),
  };
}

/** The drift between desired and enforced. */
export function driftOf(desired: DesiredConfig, enforced: Enforcement, latest: LatestPolicyRevision | undefined): Drift[] {
  const wanted = desired.policySource === "global" ? desired.globalPolicyVersion : desired.policyVersion;
  const drift = enforcementDrift(enforced, { policyVersion: wanted, policySource: desired.policySource, configRevision: desired.configRevision });
  if (latest?.status === "failed") drift.push("last-update-failed");
  return drift;
}

/** Reads a sandbox's desired and enforced configuration. */
export async function getSandboxConfig(ctx: ClientContext, options: GetConfigOptions): Promise<SandboxConfig> {
  const { sandbox, signal } = options;
  const workspace = options.workspace ?? ctx.workspace;
  const scope = workspaceScope(workspace);
  const retry = { ...ctx.retry, signal };
  try {
    const [cfg, status] = await Promise.all([
      withRetry(async () => ctx.rpc.getSandboxConfig({ name: sandbox, workspaceScope: scope }, await ctx.callOptions(signal)), retry),
      withRetry(async () => ctx.rpc.getSandboxPolicyStatus({ sandbox, version: 0, workspaceScope: scope }, await ctx.callOptions(signal)), retry).catch(
        (err: unknown) => {
          // A sandbox with no policy revision at all has no status to read.
          if (err instanceof ConnectError && err.code === Code.NotFound) return undefined;
          throw err;
        },
      ),
    ]);
    const desired: DesiredConfig = {
      policy: cfg.policy,
      policyVersion: cfg.version,
      policyHash: cfg.policyHash,
      policySource: POLICY_SOURCE_NAMES[cfg.policySource] ?? "unspecified",
      globalPolicyVersion: cfg.globalPolicyVersion,
      settings: Object.fromEntries(
        Object.entries(cfg.settings).map(([key, s]) => [key, { value: fromSettingValue(s.value), scope: SCOPE_NAMES[s.scope] ?? "unspecified" }]),
      ),
      settingsRevision: cfg.settingsRevision,
      configRevision: cfg.configRevision,
    };
    const latestRevision = latestOf(status?.revision);
    const enforced = enforcementOfStatus(status ?? { activeVersion: 0, enforcement: undefined });
    return {
      sandbox,
      workspace,
      desired,
      latestRevision,
      enforced,
      drift: driftOf(desired, enforced, latestRevision),
      pending: latestRevision?.status === "pending",
    };
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw toSdkError(err);
  }
}
