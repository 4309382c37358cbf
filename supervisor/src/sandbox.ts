// One simulated sandbox: the configuration in force and the installed provider environment.
// It turns received snapshots into decisions (apply.ts), carries them out on disk (runtime.ts)
// and in memory, one at a time, and logs what happened without ever logging a value.

import { create, type JsonValue } from "@bufbuild/protobuf";
import {
  ConfigApplyOutcome,
  ProviderProfileCredentialSchema,
  ProviderReadinessReason,
  SandboxPolicySchema,
  StaticCredentialBindingSchema,
  type ProviderEnvironmentSnapshot,
  type SandboxConfigRevision,
  type SandboxConfigSnapshot,
  type SandboxPolicy,
} from "openshell-config/raw";
import {
  decideProviderEnvironment,
  decideSandboxConfig,
  ProviderContentKey,
  sandboxContent,
  sandboxRevisionJson,
  validateProviderEnvironment,
  wouldInstall,
  type ActiveProviderEnvironment,
  type ActiveSandboxConfig,
  type ProviderApplyInput,
  type ProviderDecision,
  type SandboxApplyInput,
  type SandboxContent,
  type SandboxDecision,
} from "./apply.js";
import { sleep } from "./backoff.js";
import type { Logger } from "./log.js";
import { probeMiddlewareServices, type Unreachable } from "./probe.js";
import { messageToJson } from "./protojson.js";
import type { StateDir } from "./runtime.js";
import { validatePolicy } from "./validate.js";

export interface SandboxOptions {
  readonly name: string;
  readonly stateDir: StateDir;
  readonly logger: Logger;
  /** A local policy that overrides whatever the gateway sends. */
  readonly localPolicy?: SandboxPolicy | undefined;
  /** Probes middleware services; default: TCP connect within `probeTimeoutMs`. */
  readonly probe?: (services: SandboxConfigSnapshot["supervisorMiddlewareServices"]) => Promise<Unreachable[]>;
  readonly probeTimeoutMs?: number;
}

export interface ApplyOptions {
  /** Simulated slowness (`--apply-delay-ms`), spent while holding the apply lock. */
  readonly delayMs?: number;
  /** Simulated failure (`--fail-bootstrap`). */
  readonly injectedFailure?: string;
}

/** What enforces the sandbox right now. */
export type Enforcing = "nothing" | "gateway" | "deny_all" | "local_override";

export class SimulatedSandbox {
  readonly name: string;
  private readonly stateDir: StateDir;
  private readonly log: Logger;
  private readonly localPolicy: SandboxPolicy | undefined;
  private readonly probe: NonNullable<SandboxOptions["probe"]>;
  private active: ActiveSandboxConfig | undefined;
  private provider: ActiveProviderEnvironment | undefined;
  private env = new Map<string, string>();
  /**
   * What provider-env.json holds now, as compact JSON without its time stamp; undefined when not
   * known (nothing written yet by this process, or the last write failed). In memory only.
   */
  private installedEnv: string | undefined;
  private enforcingNow: Enforcing = "nothing";
  private lock: Promise<unknown> = Promise.resolve();

  constructor(options: SandboxOptions) {
    this.name = options.name;
    this.stateDir = options.stateDir;
    this.log = options.logger;
    this.localPolicy = options.localPolicy;
    const timeout = options.probeTimeoutMs;
    this.probe = options.probe ?? ((services) => probeMiddlewareServices(services, timeout));
  }

  get hasLocalOverride(): boolean {
    return this.localPolicy !== undefined;
  }

  get enforcing(): Enforcing {
    return this.enforcingNow;
  }

  /** The gateway revision in force (the last known good), if any. */
  get activeRevision(): ActiveSandboxConfig["revision"] | undefined {
    return this.active?.revision;
  }

  /** Installed provider environment values (in memory). */
  get environment(): ReadonlyMap<string, string> {
    return this.env;
  }

  /** Prepares the state directory; with a local policy, makes it the effective configuration. */
  async start(): Promise<void> {
    await this.stateDir.ensure(this.name);
    if (this.localPolicy) {
      await this.writeEffective({ source: "local_override", policy: this.localPolicy });
      this.enforcingNow = "local_override";
      this.log.info("local policy in force; gateway policies, if any, are stored but not enforced", { effective: this.stateDir.effectivePath(this.name) });
    }
  }

  /** Applies one sandbox snapshot and returns the decision that was carried out. */
  applySandboxConfig(snapshot: SandboxConfigSnapshot, options: ApplyOptions = {}): Promise<SandboxDecision> {
    return this.exclusive(async () => {
      if (options.delayMs) await sleep(options.delayMs);
      const content = sandboxContent(snapshot);
      const base: SandboxApplyInput = {
        snapshot,
        // Its key is hashed only when the snapshot is compared by content (see sandboxContent).
        keySource: content,
        active: this.active,
        localOverride: this.hasLocalOverride,
        violations: validatePolicy(snapshot.policy),
        injectedFailure: options.injectedFailure,
      };
      let input = base;
      if (snapshot.supervisorMiddlewareServices.length > 0 && wouldInstall(base)) {
        input = { ...base, unreachableServices: await this.probe(snapshot.supervisorMiddlewareServices) };
      }
      let decision = decideSandboxConfig(input);
      try {
        await this.carryOutSandbox(decision, snapshot, content);
      } catch (err) {
        decision = decideSandboxConfig({ ...input, installError: errorCode(err) });
        await this.carryOutSandbox(decision, snapshot, content).catch((e: unknown) => {
          this.log.error("could not write the fallback effective configuration", { err: errorCode(e) });
        });
      }
      this.active = decision.nextActive;
      if (this.log.enabled("info")) this.log.info("sandbox config processed", {
        outcome: ConfigApplyOutcome[decision.outcome],
        policyVersion: snapshot.version,
        settingsRevision: snapshot.settingsRevision.toString(),
        configRevision: snapshot.configRevision.toString(),
        enforcing: this.enforcingNow,
        ...(decision.failure ? { failureCode: decision.failure.code, failure: decision.failure.message } : {}),
      });
      return decision;
    });
  }

  /** Installs one provider-environment snapshot and returns the decision that was carried out. */
  applyProviderEnvironment(snapshot: ProviderEnvironmentSnapshot, options: ApplyOptions = {}): Promise<ProviderDecision> {
    return this.exclusive(async () => {
      if (options.delayMs) await sleep(options.delayMs);
      const input: ProviderApplyInput = {
        snapshot,
        // Hashed only when the policy hash and epoch do not already tell the content apart.
        keySource: new ProviderContentKey(snapshot),
        active: this.provider,
        problems: validateProviderEnvironment(snapshot),
      };
      let decision = decideProviderEnvironment(input);
      try {
        await this.carryOutProvider(decision, snapshot);
      } catch (err) {
        decision = decideProviderEnvironment({ ...input, installError: errorCode(err) });
        await this.carryOutProvider(decision, snapshot).catch((e: unknown) => {
          this.log.error("could not clear the provider environment", { err: errorCode(e) });
        });
      }
      this.provider = decision.nextActive;
      // Names only: values, file contents and credentials are never logged.
      if (this.log.enabled("info")) this.log.info("provider environment processed", {
        outcome: ConfigApplyOutcome[decision.outcome],
        providerEnvRevision: snapshot.providerEnvRevision.toString(),
        names: snapshot.values.map((v) => v.name),
        staticCredentialNames: snapshot.values.filter((v) => v.staticCredentialBinding).map((v) => v.name),
        readinessReason: ProviderReadinessReason[snapshot.readinessReason] ?? snapshot.readinessReason,
        fileNames: Object.keys(snapshot.files),
        dynamicCredentialNames: Object.keys(snapshot.dynamicCredentials),
        ...(decision.failure ? { failureCode: decision.failure.code, failure: decision.failure.message } : {}),
      });
      return decision;
    });
  }

  private async carryOutSandbox(d: SandboxDecision, s: SandboxConfigSnapshot, content: SandboxContent): Promise<void> {
    switch (d.effect) {
      case "install":
        await this.writeEffective({ source: "gateway", snapshot: s, revision: requestedRevision(d), content, degradedServices: d.degradedServices });
        this.enforcingNow = "gateway";
        return;
      case "deny_all":
        await this.writeEffective({ source: "deny_all", policy: create(SandboxPolicySchema, { version: s.version }), reason: d.failure?.message ?? "" });
        this.enforcingNow = "deny_all";
        return;
      case "store_desired":
        await this.stateDir.writeJson(this.name, this.stateDir.gatewayDesiredPath(this.name), this.document({ source: "gateway_desired", snapshot: s, revision: requestedRevision(d), content }));
        return;
      case "keep":
        return;
    }
  }

  private async carryOutProvider(d: ProviderDecision, s: ProviderEnvironmentSnapshot): Promise<void> {
    switch (d.effect) {
      case "install": {
        // The values (secrets included) go only into provider-env.json (mode 0600), the
        // simulated installed environment; this simulation has no proxy, so a static
        // credential is installed like any value and its binding is recorded beside it.
        const values: Record<string, string> = {};
        const staticCredentialBindings: Record<string, JsonValue> = {};
        for (const v of s.values) {
          values[v.name] = v.value;
          if (v.staticCredentialBinding) staticCredentialBindings[v.name] = messageToJson(StaticCredentialBindingSchema, v.staticCredentialBinding);
        }
        // Dynamic credentials are descriptions (env vars, auth style, refresh, token grant):
        // they carry no secret value, so they are recorded as received.
        const dynamicCredentials: Record<string, JsonValue> = {};
        for (const [k, c] of Object.entries(s.dynamicCredentials)) dynamicCredentials[k] = messageToJson(ProviderProfileCredentialSchema, c);
        const installed = {
          sandbox: this.name,
          providerEnvRevision: s.providerEnvRevision.toString(),
          providerAttachmentEpoch: s.providerAttachmentEpoch,
          values,
          staticCredentialBindings,
          files: { ...s.files },
          dynamicCredentials,
        };
        // A policy change sends a provider snapshot that differs only in its policy hash (or in
        // nothing the environment holds): the environment in force is already this one, so the
        // file is not replaced. The policy hash is the policy's, recorded in effective.json.
        const text = JSON.stringify(installed);
        if (text === this.installedEnv) return;
        this.installedEnv = undefined;
        const { sandbox, providerEnvRevision, providerAttachmentEpoch, files } = installed;
        await this.writeProviderEnv({ sandbox, providerEnvRevision, providerAttachmentEpoch, values, staticCredentialBindings, files, dynamicCredentials, writtenAt: new Date().toISOString() });
        this.installedEnv = text;
        this.env = new Map(Object.entries(values));
        return;
      }
      case "deny_all":
        this.env = new Map();
        this.installedEnv = undefined;
        await this.writeProviderEnv({ sandbox: this.name, providerEnvRevision: null, values: {}, staticCredentialBindings: {}, files: {}, dynamicCredentials: {}, writtenAt: new Date().toISOString() });
        return;
      case "keep":
      case "store_desired":
        return;
    }
  }

  private writeProviderEnv(doc: unknown): Promise<void> {
    return this.stateDir.writeJson(this.name, this.stateDir.providerEnvPath(this.name), doc, { mode: 0o600 });
  }

  private writeEffective(e: EffectiveInput): Promise<void> {
    return this.stateDir.appendEffective(this.name, this.document(e));
  }

  /** The JSON document of effective.json (and gateway-desired.json): policy and settings in proto JSON. */
  private document(e: EffectiveInput): Record<string, unknown> {
    const s = "snapshot" in e ? e.snapshot : undefined;
    // A snapshot's policy and settings were put in proto JSON once, when it was received.
    const c = "content" in e ? e.content : undefined;
    const policy = c?.policy ?? messageToJson(SandboxPolicySchema, s ? (s.policy ?? create(SandboxPolicySchema)) : (e as { policy: SandboxPolicy }).policy);
    const settings: Record<string, JsonValue> = c ? c.settings : {};
    const revision = "revision" in e ? sandboxRevisionJson(e.revision) : null;
    const policyHash = s?.policyHash ?? "";
    const middlewareServices = s ? s.supervisorMiddlewareServices.map((m) => ({ name: m.name, grpcEndpoint: m.grpcEndpoint })) : [];
    const degradedServices = "degradedServices" in e ? e.degradedServices : [];
    const writtenAt = new Date().toISOString();
    // Whole literals (no spread followed by more keys, a slow path in V8), in one key order.
    if ("reason" in e) return { sandbox: this.name, source: e.source, revision, policyHash, policy, settings, middlewareServices, degradedServices, reason: e.reason, writtenAt };
    return { sandbox: this.name, source: e.source, revision, policyHash, policy, settings, middlewareServices, degradedServices, writtenAt };
  }

  /** Runs `fn` after every earlier apply of this sandbox has finished (applies never overlap). */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.lock.then(fn, fn);
    this.lock = run.catch(() => {});
    return run;
  }
}

type EffectiveInput =
  | { source: "gateway"; snapshot: SandboxConfigSnapshot; revision: SandboxConfigRevision; content: SandboxContent; degradedServices: readonly string[] }
  | { source: "gateway_desired"; snapshot: SandboxConfigSnapshot; revision: SandboxConfigRevision; content: SandboxContent }
  | { source: "local_override"; policy: SandboxPolicy }
  | { source: "deny_all"; policy: SandboxPolicy; reason: string };

/** The revision tuple a sandbox decision was made for (built once, in the decision). */
function requestedRevision(d: SandboxDecision): SandboxConfigRevision {
  const c = d.requested.component;
  if (c.case !== "sandboxConfig") throw new Error("BUG: a sandbox decision without a sandbox revision");
  return c.value;
}

/** A credential-free description of a filesystem error: its code, not its message (which has paths). */
function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : err instanceof Error ? err.name : "unknown error";
}
