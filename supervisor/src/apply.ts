// Outcome decisions for received configuration snapshots, as pure functions: which
// ConfigApplyOutcome a snapshot gets, which revision is active afterwards, what the sandbox must
// do (install, keep, deny all, store only), and the result and admission messages built from that.
// The rules follow UPSTREAM.md §3.10: the gateway rejects any result that breaks them.

import { createHash } from "node:crypto";
import { create, toJson, type JsonValue } from "@bufbuild/protobuf";
import { messageToJson } from "./protojson.js";
import {
  ConfigApplyFailureSchema,
  ConfigApplyOutcome,
  ConfigComponent,
  ConfigComponentApplyResultSchema,
  ConfigSnapshotRevisionSchema,
  ConfigurationAdmissionState,
  EffectiveSettingSchema,
  ProviderEnvironmentValueClassification,
  ProviderEnvironmentValueSchema,
  ProviderProfileCredentialSchema,
  ProviderReadinessReason,
  SandboxConfigRevisionSchema,
  SandboxConfigurationAdmissionSchema,
  SandboxPolicySchema,
  SupervisorMiddlewareServiceSchema,
  type ConfigApplyFailure,
  type ConfigComponentApplyResult,
  type ConfigSnapshotRevision,
  type ProviderEnvironmentSnapshot,
  type SandboxConfigRevision,
  type SandboxConfigSnapshot,
  type SandboxConfigurationAdmission,
} from "openshell-config/raw";
import type { PolicyViolation } from "./validate.js";
import { describeViolations } from "./validate.js";

// ---------------------------------------------------------------------------
// Revisions
// ---------------------------------------------------------------------------

/** The revision tuple of a sandbox snapshot (§3.5c): what an acknowledgement must carry. */
export function sandboxConfigRevision(s: SandboxConfigSnapshot): SandboxConfigRevision {
  return create(SandboxConfigRevisionSchema, {
    configRevision: s.configRevision,
    policyVersion: s.version,
    policySource: s.policySource,
    globalPolicyVersion: s.globalPolicyVersion,
    settingsRevision: s.settingsRevision,
  });
}

/** `requested_revision` of a sandbox-config result: built from the received snapshot. */
export function sandboxRequestedRevision(s: SandboxConfigSnapshot): ConfigSnapshotRevision {
  return wrapSandboxRevision(sandboxConfigRevision(s));
}

/** `requested_revision` of a provider-environment result. */
export function providerRequestedRevision(s: ProviderEnvironmentSnapshot): ConfigSnapshotRevision {
  return wrapProviderRevision(s.providerEnvRevision);
}

export function wrapSandboxRevision(r: SandboxConfigRevision): ConfigSnapshotRevision {
  return create(ConfigSnapshotRevisionSchema, { component: { case: "sandboxConfig", value: create(SandboxConfigRevisionSchema, r) } });
}

export function wrapProviderRevision(r: bigint): ConfigSnapshotRevision {
  return create(ConfigSnapshotRevisionSchema, { component: { case: "providerEnvironment", value: r } });
}

const POLICY_SOURCE_JSON = new Map<number, JsonValue>();

/**
 * A revision tuple in proto JSON, as `toJson(SandboxConfigRevisionSchema, r, { alwaysEmitImplicit:
 * true })` writes it (uint64 as decimal strings, the policy source by its enum name), without the
 * reflection walk: the enum's JSON is taken from toJson once per value.
 */
export function sandboxRevisionJson(r: SandboxConfigRevision): JsonValue {
  let source = POLICY_SOURCE_JSON.get(r.policySource);
  if (source === undefined) {
    source = (toJson(SandboxConfigRevisionSchema, create(SandboxConfigRevisionSchema, { policySource: r.policySource }), { alwaysEmitImplicit: true }) as { policySource: JsonValue }).policySource;
    POLICY_SOURCE_JSON.set(r.policySource, source);
  }
  return {
    configRevision: r.configRevision.toString(),
    policyVersion: r.policyVersion,
    policySource: source,
    globalPolicyVersion: r.globalPolicyVersion,
    settingsRevision: r.settingsRevision.toString(),
  };
}

export function sandboxRevisionsEqual(a: SandboxConfigRevision, b: SandboxConfigRevision): boolean {
  return (
    a.configRevision === b.configRevision &&
    a.policyVersion === b.policyVersion &&
    a.policySource === b.policySource &&
    a.globalPolicyVersion === b.globalPolicyVersion &&
    a.settingsRevision === b.settingsRevision
  );
}

/** Equality of two ConfigSnapshotRevisions (revisions are equality tokens, never ordered). */
export function revisionsEqual(a: ConfigSnapshotRevision | undefined, b: ConfigSnapshotRevision | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  const x = a.component;
  const y = b.component;
  switch (x.case) {
    case "sandboxConfig":
      return y.case === "sandboxConfig" && sandboxRevisionsEqual(x.value, y.value);
    case "providerEnvironment":
      return y.case === "providerEnvironment" && x.value === y.value;
    case "providerTarget":
      return y.case === "providerTarget" && canonicalJson(x.value) === canonicalJson(y.value);
    default:
      return y.case === undefined;
  }
}

// ---------------------------------------------------------------------------
// Content fingerprints (in memory only; never logged or written)
// ---------------------------------------------------------------------------

/**
 * What the sandbox enforces from a snapshot, in proto JSON: built once, for effective.json and (only
 * when a duplicate check needs it) for its content key.
 */
export interface SandboxContent extends ContentKeySource {
  /** The policy in proto JSON; null when the snapshot has none. */
  readonly policy: JsonValue | null;
  readonly settings: Record<string, JsonValue>;
  /** SHA-256 of policy, policy hash, settings and middleware services; computed on first use. */
  readonly key: string;
}

export function sandboxContent(s: SandboxConfigSnapshot): SandboxContent {
  const settings: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(s.settings)) settings[k] = messageToJson(EffectiveSettingSchema, v);
  const policy = s.policy ? messageToJson(SandboxPolicySchema, s.policy) : null;
  return new LazySandboxContent(policy, settings, s.policyHash, s.supervisorMiddlewareServices);
}

// Lazy values are classes, with their getter on the prototype. V8 keeps an object literal with a
// getter in dictionary mode, with an accessor of its own; made once per update, such objects kept
// what their getters reached (a whole snapshot) surviving young collections into the old
// generation, 1.5 MB per scavenge, and the supervisor spent a fifth of its time collecting.

class LazySandboxContent implements SandboxContent {
  private hash: string | undefined;

  constructor(
    readonly policy: JsonValue | null,
    readonly settings: Record<string, JsonValue>,
    private readonly policyHash: string,
    private readonly services: SandboxConfigSnapshot["supervisorMiddlewareServices"],
  ) {}

  // Only a snapshot whose revision tuple equals the active one is compared by content (a
  // duplicate, or a changed configuration under the same revision): most never need the key.
  get key(): string {
    this.hash ??= sha256(
      canonicalJsonValue({ policy: this.policy, policyHash: this.policyHash, settings: this.settings, services: this.services.map((m) => toJson(SupervisorMiddlewareServiceSchema, m)) }),
    );
    return this.hash;
  }
}

/** The content key of a provider snapshot, hashed on first use. */
export class ProviderContentKey implements ContentKeySource {
  private hash: string | undefined;

  constructor(private readonly snapshot: ProviderEnvironmentSnapshot) {}

  get key(): string {
    this.hash ??= providerContentKey(this.snapshot);
    return this.hash;
  }
}

/** SHA-256 of what the sandbox enforces from a snapshot: policy, settings and middleware services. */
export function sandboxContentKey(s: SandboxConfigSnapshot): string {
  return sandboxContent(s).key;
}

/** SHA-256 of a provider environment's installed content (values included, so it is secret-derived). */
export function providerContentKey(s: ProviderEnvironmentSnapshot): string {
  const creds: Record<string, JsonValue> = {};
  for (const [k, v] of Object.entries(s.dynamicCredentials)) creds[k] = messageToJson(ProviderProfileCredentialSchema, v);
  return sha256(
    canonicalJsonValue({
      values: s.values.map((v) => messageToJson(ProviderEnvironmentValueSchema, v)),
      creds,
      files: s.files,
      epoch: s.providerAttachmentEpoch,
      policyHash: s.policyHash,
    }),
  );
}

/** JSON with object keys sorted at every level, so equal content gives equal text. */
export function canonicalJson(v: unknown): string {
  return JSON.stringify(sortKeys(v));
}

/**
 * Canonical JSON of a JSON value (what `toJson` returns), written directly instead of through a
 * sorted copy of the whole tree: keys in code-unit order at every level. The same text as
 * `canonicalJson` except that integer-like keys are sorted too (a copied object puts them first).
 * Only compared with keys made the same way, in memory.
 */
export function canonicalJsonValue(v: JsonValue | undefined): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v ?? null);
  if (Array.isArray(v)) {
    let out = "[";
    for (let i = 0; i < v.length; i++) out += (i === 0 ? "" : ",") + canonicalJsonValue(v[i]);
    return `${out}]`;
  }
  let out = "{";
  let first = true;
  for (const k of Object.keys(v).sort()) {
    const x = v[k];
    if (x === undefined) continue;
    out += `${first ? "" : ","}${JSON.stringify(k)}:${canonicalJsonValue(x)}`;
    first = false;
  }
  return `${out}}`;
}

function sortKeys(v: unknown): unknown {
  if (typeof v === "bigint") return v.toString();
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) out[k] = sortKeys((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

function sha256(s: string): string {
  return createHash("sha256").update(s).digest("hex");
}

// ---------------------------------------------------------------------------
// Decisions
// ---------------------------------------------------------------------------

/** What the sandbox runtime must do to carry out a decision. */
export type Effect =
  /** Make the snapshot the effective configuration. */
  | "install"
  /** Leave the effective configuration as it is. */
  | "keep"
  /** Replace the effective configuration by deny-all. */
  | "deny_all"
  /** A local override is in force: store the gateway snapshot, enforce nothing from it. */
  | "store_desired";

export interface Failure {
  readonly code: string;
  /** Credential-free. */
  readonly message: string;
  readonly retryable: boolean;
}

/** The gateway configuration in force (the last known good one). */
export interface ActiveSandboxConfig {
  readonly revision: SandboxConfigRevision;
  readonly contentKey: string;
}

/**
 * A content key read only if needed. An apply input gives one (or the key itself), and the
 * configuration it installs keeps it: never the input, which holds the configuration it replaces,
 * which held its own input, and so on (every snapshot a sandbox ever applied stayed in memory).
 */
export interface ContentKeySource {
  readonly key: string;
}

export interface SandboxApplyInput {
  readonly snapshot: SandboxConfigSnapshot;
  /** `sandboxContentKey(snapshot)`; or, instead, `keySource`, read only when a comparison needs it. */
  readonly contentKey?: string | undefined;
  readonly keySource?: ContentKeySource | undefined;
  /** Last known good gateway configuration; undefined when none is in force (fresh, or failed closed). */
  readonly active: ActiveSandboxConfig | undefined;
  /** A local policy file overrides the gateway. */
  readonly localOverride: boolean;
  /** `validatePolicy(snapshot.policy)`. */
  readonly violations: readonly PolicyViolation[];
  /** Names of middleware services that could not be reached, with why (from probing). */
  readonly unreachableServices?: readonly { readonly name: string; readonly reason: string }[] | undefined;
  /** A simulated apply failure (`--fail-bootstrap`). */
  readonly injectedFailure?: string | undefined;
  /** Writing the effective configuration failed (sanitized). */
  readonly installError?: string | undefined;
}

export interface Decision {
  readonly component: ConfigComponent;
  readonly outcome: ConfigApplyOutcome;
  readonly effect: Effect;
  readonly requested: ConfigSnapshotRevision;
  /** Active after the attempt; undefined when nothing from the gateway is in force. */
  readonly applied: ConfigSnapshotRevision | undefined;
  readonly failure: Failure | undefined;
}

export interface SandboxDecision extends Decision {
  /** ACCEPTED for the acknowledging outcomes, REJECTED otherwise (§3.10.4). */
  readonly admitted: boolean;
  /** The last known good configuration after the decision. */
  readonly nextActive: ActiveSandboxConfig | undefined;
  /** Services that made the outcome DEGRADED. */
  readonly degradedServices: readonly string[];
}

/** "retain_last_valid" (also when unset) or "fail_closed" (also for any unknown value, per §2.6). */
export function failureMode(s: SandboxConfigSnapshot): "fail_closed" | "retain_last_valid" {
  const m = s.policyValidationFailureMode;
  return m === "" || m === "retain_last_valid" ? "retain_last_valid" : "fail_closed";
}

/** Whether the snapshot would be installed, so that its middleware services are worth probing. */
export function wouldInstall(input: SandboxApplyInput): boolean {
  return decideSandboxConfig(input).effect === "install";
}

/** The outcome of one received sandbox snapshot. */
export function decideSandboxConfig(input: SandboxApplyInput): SandboxDecision {
  const { snapshot, active } = input;
  const requestedRev = sandboxConfigRevision(snapshot);
  const requested = wrapSandboxRevision(requestedRev);

  if (input.localOverride) {
    return sandboxDecision(ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE, "store_desired", requested, undefined, undefined, true, active);
  }
  if (active && snapshot.version < active.revision.policyVersion) {
    const failure = { code: "stale_revision", message: `policy version ${snapshot.version} is older than the active version ${active.revision.policyVersion}`, retryable: false };
    return sandboxDecision(ConfigApplyOutcome.IGNORED_STALE, "keep", requested, wrapSandboxRevision(active.revision), failure, false, active);
  }
  if (active && sandboxRevisionsEqual(active.revision, requestedRev) && active.contentKey === contentKeyOf(input)) {
    return sandboxDecision(ConfigApplyOutcome.IGNORED_DUPLICATE, "keep", requested, requested, undefined, true, active);
  }
  const failure = sandboxFailure(input);
  if (failure) return failed(input, requestedRev, requested, failure);

  const installed: ActiveSandboxConfig = new LazyActive(requestedRev, keySourceOf(input), undefined, undefined);
  const unreachable = input.unreachableServices ?? [];
  if (unreachable.length > 0) {
    const list = unreachable.map((u) => `'${u.name}' (${u.reason})`).join(", ");
    const degraded = { code: "middleware_unreachable", message: `policy applied, but supervisor middleware service ${list} is unreachable`, retryable: false };
    return sandboxDecision(ConfigApplyOutcome.DEGRADED, "install", requested, requested, degraded, true, installed, unreachable.map((u) => u.name));
  }
  return sandboxDecision(ConfigApplyOutcome.APPLIED, "install", requested, requested, undefined, true, installed);
}

/**
 * A sandbox decision, always built by this one literal: every decision has the same shape (a
 * spread of a shared base followed by more properties takes a slow path in V8).
 */
function sandboxDecision(
  outcome: ConfigApplyOutcome,
  effect: Effect,
  requested: ConfigSnapshotRevision,
  applied: ConfigSnapshotRevision | undefined,
  failure: Failure | undefined,
  admitted: boolean,
  nextActive: ActiveSandboxConfig | undefined,
  degradedServices: readonly string[] = [],
): SandboxDecision {
  return { component: ConfigComponent.SANDBOX_CONFIG, outcome, effect, requested, applied, failure, admitted, nextActive, degradedServices };
}

function sandboxFailure(input: SandboxApplyInput): Failure | undefined {
  if (input.snapshot.configurationError !== "") {
    return { code: "gateway_configuration_error", message: `the gateway reported a configuration error: ${input.snapshot.configurationError}`, retryable: false };
  }
  if (input.violations.length > 0) return { code: "invalid_policy", message: describeViolations(input.violations), retryable: false };
  if (input.injectedFailure !== undefined) return { code: "apply_failed", message: input.injectedFailure, retryable: true };
  if (input.installError !== undefined) return { code: "install_failed", message: `could not install the effective configuration: ${input.installError}`, retryable: true };
  return undefined;
}

/** A failed attempt: keep the last known good when the mode allows it and one exists, else deny all. */
function failed(input: SandboxApplyInput, requestedRev: SandboxConfigRevision, requested: ConfigSnapshotRevision, failure: Failure): SandboxDecision {
  const { active } = input;
  // FAILED_RETAINED_LAST_KNOWN_GOOD needs an applied revision that differs from the requested one.
  if (failureMode(input.snapshot) === "retain_last_valid" && active && !sandboxRevisionsEqual(active.revision, requestedRev)) {
    return sandboxDecision(ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD, "keep", requested, wrapSandboxRevision(active.revision), failure, false, active);
  }
  return sandboxDecision(ConfigApplyOutcome.FAILED_CLOSED, "deny_all", requested, undefined, failure, false, undefined);
}

/** The provider environment in force. */
export interface ActiveProviderEnvironment {
  readonly revision: bigint;
  readonly contentKey: string;
  /** Parts of the content key, when known: a snapshot that differs in one has other content. */
  readonly policyHash?: string | undefined;
  readonly providerAttachmentEpoch?: string | undefined;
}

export interface ProviderApplyInput {
  readonly snapshot: ProviderEnvironmentSnapshot;
  /** `providerContentKey(snapshot)`; or, instead, `keySource` (as SandboxApplyInput). */
  readonly contentKey?: string | undefined;
  readonly keySource?: ContentKeySource | undefined;
  readonly active: ActiveProviderEnvironment | undefined;
  /** `validateProviderEnvironment(snapshot)`. */
  readonly problems: readonly string[];
  /** Installing the values failed (sanitized). */
  readonly installError?: string;
}

export interface ProviderDecision extends Decision {
  readonly nextActive: ActiveProviderEnvironment | undefined;
}

/** The outcome of one received provider-environment snapshot. The gateway's snapshot is authoritative: no staleness. */
export function decideProviderEnvironment(input: ProviderApplyInput): ProviderDecision {
  const { snapshot, active } = input;
  const requested = providerRequestedRevision(snapshot);
  if (active && active.revision === snapshot.providerEnvRevision && sameProviderContent(active, input)) {
    return providerDecision(ConfigApplyOutcome.IGNORED_DUPLICATE, "keep", requested, requested, undefined, active);
  }
  let failure: Failure | undefined;
  if (input.problems.length > 0) failure = { code: "invalid_provider_environment", message: `invalid provider environment: ${input.problems.join("; ")}`, retryable: false };
  else if (!isInstallable(snapshot.readinessReason)) {
    const reason = ProviderReadinessReason[snapshot.readinessReason] ?? String(snapshot.readinessReason);
    failure = { code: "provider_not_ready", message: `provider environment is not ready for installation (readiness reason ${reason})`, retryable: true };
  } else if (input.installError !== undefined) failure = { code: "install_failed", message: `could not install the provider environment: ${input.installError}`, retryable: true };
  if (failure) {
    if (active && active.revision !== snapshot.providerEnvRevision) {
      return providerDecision(ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD, "keep", requested, wrapProviderRevision(active.revision), failure, active);
    }
    return providerDecision(ConfigApplyOutcome.FAILED_CLOSED, "deny_all", requested, undefined, failure, undefined);
  }
  const nextActive = new LazyActive(snapshot.providerEnvRevision, keySourceOf(input), snapshot.policyHash, snapshot.providerAttachmentEpoch);
  return providerDecision(ConfigApplyOutcome.APPLIED, "install", requested, requested, undefined, nextActive);
}

/** A provider decision, always built by this one literal (see sandboxDecision). */
function providerDecision(
  outcome: ConfigApplyOutcome,
  effect: Effect,
  requested: ConfigSnapshotRevision,
  applied: ConfigSnapshotRevision | undefined,
  failure: Failure | undefined,
  nextActive: ActiveProviderEnvironment | undefined,
): ProviderDecision {
  return { component: ConfigComponent.PROVIDER_ENVIRONMENT, outcome, effect, requested, applied, failure, nextActive };
}

/**
 * Whether a snapshot carries the active provider environment's content. The policy hash and the
 * attachment epoch are part of the content key, so a difference in either settles it without
 * hashing the values (a policy change sends a provider snapshot that differs in its policy hash only).
 */
function sameProviderContent(active: ActiveProviderEnvironment, input: ProviderApplyInput): boolean {
  const s = input.snapshot;
  if (active.policyHash !== undefined && active.policyHash !== s.policyHash) return false;
  if (active.providerAttachmentEpoch !== undefined && active.providerAttachmentEpoch !== s.providerAttachmentEpoch) return false;
  return active.contentKey === contentKeyOf(input);
}

type Keyed = { readonly contentKey?: string | undefined; readonly keySource?: ContentKeySource | undefined };

function contentKeyOf(input: Keyed): string {
  const key = input.contentKey ?? input.keySource?.key;
  if (key === undefined) throw new Error("BUG: an apply input without a content key");
  return key;
}

/** What an installed configuration keeps for its key: never the input itself (see ContentKeySource). */
function keySourceOf(input: Keyed): ContentKeySource {
  return input.keySource ?? { key: contentKeyOf(input) };
}

/**
 * The configuration a decision puts in force, with its content key read only when a later
 * snapshot is compared with it (then kept, and the source let go).
 */
class LazyActive<R> {
  private source: ContentKeySource | undefined;
  private key = "";

  constructor(
    readonly revision: R,
    source: ContentKeySource,
    readonly policyHash: string | undefined,
    readonly providerAttachmentEpoch: string | undefined,
  ) {
    this.source = source;
  }

  get contentKey(): string {
    if (this.source !== undefined) {
      this.key = this.source.key;
      this.source = undefined;
    }
    return this.key;
  }
}

/**
 * Whether a snapshot is a complete environment the supervisor may install, as upstream decides
 * it: UNSPECIFIED (complete), CREDENTIALS_WITHHELD or CREDENTIAL_EXPIRED (those credentials are
 * deliberately absent, so installing the rest still fails closed for them). A reason this build
 * does not know is read as CREDENTIALS_WITHHELD, as upstream does.
 */
export function isInstallable(reason: ProviderReadinessReason): boolean {
  if (ProviderReadinessReason[reason] === undefined) return true;
  return (
    reason === ProviderReadinessReason.UNSPECIFIED ||
    reason === ProviderReadinessReason.CREDENTIALS_WITHHELD ||
    reason === ProviderReadinessReason.CREDENTIAL_EXPIRED
  );
}

/**
 * What makes a snapshot uninstallable: names that cannot be environment variables, static
 * credential bindings that are missing, misplaced or bind nothing, and unnamed dynamic
 * credentials. Messages name variables and fields only; values are never inspected for them.
 */
export function validateProviderEnvironment(s: ProviderEnvironmentSnapshot): string[] {
  const problems: string[] = [];
  s.values.forEach((v, i) => {
    if (v.name === "") problems.push(`values[${i}] has an empty name`);
    else if (/[=\0]/u.test(v.name)) problems.push(`values[${i}] name contains '=' or NUL`);
    const at = `values[${i}]`;
    const isStatic = v.classification === ProviderEnvironmentValueClassification.STATIC_CREDENTIAL;
    const b = v.staticCredentialBinding;
    if (isStatic && !b) problems.push(`${at} is a static credential without a static_credential_binding`);
    else if (!isStatic && b) problems.push(`${at} has a static_credential_binding but is not a static credential`);
    else if (b) {
      if (b.endpoints.length === 0) problems.push(`${at}.static_credential_binding binds no endpoint`);
      b.endpoints.forEach((e, j) => {
        if (e.host === "") problems.push(`${at}.static_credential_binding.endpoints[${j}] has an empty host`);
        if (e.port > 65_535) problems.push(`${at}.static_credential_binding.endpoints[${j}].port ${e.port} is not a TCP port`);
      });
    }
  });
  for (const key of Object.keys(s.dynamicCredentials)) {
    if (key === "") problems.push("dynamic_credentials has an empty key");
  }
  return problems;
}

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

/** Outcomes that acknowledge the delivered revision (§3.10.3). */
export function isAcknowledging(o: ConfigApplyOutcome): boolean {
  return (
    o === ConfigApplyOutcome.APPLIED ||
    o === ConfigApplyOutcome.IGNORED_DUPLICATE ||
    o === ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE ||
    o === ConfigApplyOutcome.DEGRADED
  );
}

export function toApplyResult(d: Decision): ConfigComponentApplyResult {
  return create(ConfigComponentApplyResultSchema, {
    component: d.component,
    requestedRevision: d.requested,
    appliedRevision: d.applied,
    outcome: d.outcome,
    failure: d.failure ? toApplyFailure(d.failure) : undefined,
  });
}

function toApplyFailure(f: Failure): ConfigApplyFailure {
  return create(ConfigApplyFailureSchema, { code: f.code, message: f.message, retryable: f.retryable });
}

/** The admission of a delivered sandbox snapshot: its identifying fields and the supervisor's verdict. */
export function admissionFor(
  snapshot: SandboxConfigSnapshot,
  instanceId: string,
  verdict: { readonly admitted: boolean; readonly error?: string | undefined },
): SandboxConfigurationAdmission {
  return create(SandboxConfigurationAdmissionSchema, {
    instanceId,
    state: verdict.admitted ? ConfigurationAdmissionState.ACCEPTED : ConfigurationAdmissionState.REJECTED,
    policyVersion: snapshot.version,
    policyHash: snapshot.policyHash,
    configRevision: snapshot.configRevision,
    providerEnvRevision: snapshot.providerEnvRevision,
    error: verdict.admitted ? "" : (verdict.error ?? "configuration could not be activated"),
  });
}

/** Admission of a bootstrap: accepted only when every component was acknowledged. */
export function bootstrapVerdict(sandbox: SandboxDecision, provider: ProviderDecision | undefined): { admitted: boolean; error: string | undefined } {
  const errors: string[] = [];
  if (!sandbox.admitted) errors.push(`sandbox config: ${sandbox.failure?.message ?? "not admitted"}`);
  if (provider && !isAcknowledging(provider.outcome)) errors.push(`provider environment: ${provider.failure?.message ?? "not applied"}`);
  return { admitted: errors.length === 0, error: errors.length > 0 ? errors.join("; ") : undefined };
}

/**
 * §3.10.2: why an outcome and its applied revision are inconsistent, or undefined when they agree.
 * The supervisor checks its own results with this before sending them.
 */
export function outcomeConsistencyError(r: Pick<ConfigComponentApplyResult, "outcome" | "requestedRevision" | "appliedRevision">): string | undefined {
  const { outcome, requestedRevision: req, appliedRevision: app } = r;
  if (req === undefined) return "configuration result revision missing";
  switch (outcome) {
    case ConfigApplyOutcome.APPLIED:
    case ConfigApplyOutcome.IGNORED_DUPLICATE:
    case ConfigApplyOutcome.DEGRADED:
      return revisionsEqual(app, req) ? undefined : "applied revision must equal the requested revision";
    case ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE:
    case ConfigApplyOutcome.FAILED_CLOSED:
      return app === undefined ? undefined : "applied revision must be absent";
    case ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD:
      return app !== undefined && !revisionsEqual(app, req) ? undefined : "applied revision must be present and differ from the requested revision";
    case ConfigApplyOutcome.IGNORED_STALE:
    case ConfigApplyOutcome.UNSUPPORTED:
      return undefined;
    default:
      return "outcome is unspecified";
  }
}
