// Outcome decisions (apply.ts): every ConfigApplyOutcome the supervisor produces, the revision it
// reports as applied, the admission that goes with it, and §3.10.2 consistency for each.

import { create, toJson } from "@bufbuild/protobuf";
import {
  ConfigApplyOutcome,
  ConfigComponent,
  ConfigComponentApplyResultSchema,
  ConfigurationAdmissionState,
  PolicySource,
  ProviderEnvironmentValueClassification,
  ProviderReadinessReason,
  SandboxConfigRevisionSchema,
  SandboxPolicySchema,
} from "openshell-config/raw";
import { describe, expect, it } from "vitest";
import {
  admissionFor,
  bootstrapVerdict,
  decideProviderEnvironment,
  decideSandboxConfig,
  failureMode,
  isAcknowledging,
  isInstallable,
  outcomeConsistencyError,
  providerContentKey,
  providerRequestedRevision,
  sandboxConfigRevision,
  sandboxContentKey,
  sandboxRequestedRevision,
  toApplyResult,
  validateProviderEnvironment,
  wrapSandboxRevision,
  type ActiveSandboxConfig,
  type SandboxApplyInput,
  type SandboxDecision,
  canonicalJson,
  canonicalJsonValue,
  sandboxContent,
  sandboxRevisionJson,
} from "../src/apply.js";
import { validatePolicy } from "../src/validate.js";
import { checkAdmission, checkApplyResult, expectedSandboxRevision } from "./support/fake-gateway.js";
import { boundProviderSnapshot, invalidPolicy, policy, providerSnapshot, sandboxSnapshot, type SandboxSnapshotInit } from "./support/snapshots.js";

const INSTANCE = "6f1c1a52-7f1e-4d0e-9d53-2f7a1f3f9e11";

function active(init: SandboxSnapshotInit = {}): ActiveSandboxConfig {
  const s = sandboxSnapshot(init);
  return { revision: sandboxConfigRevision(s), contentKey: sandboxContentKey(s) };
}

function input(init: SandboxSnapshotInit, rest: Partial<SandboxApplyInput> = {}): SandboxApplyInput {
  const snapshot = sandboxSnapshot(init);
  return { snapshot, contentKey: sandboxContentKey(snapshot), active: undefined, localOverride: false, violations: validatePolicy(snapshot.policy), ...rest };
}

/** The decision must pass the gateway's own checks (independent implementation in the fake gateway). */
function expectGatewayAccepts(i: SandboxApplyInput, d: SandboxDecision) {
  const result = toApplyResult(d);
  expect(checkApplyResult(result, { sandbox: i.snapshot })).toEqual([]);
  expect(outcomeConsistencyError(result)).toBeUndefined();
  const admission = admissionFor(i.snapshot, INSTANCE, { admitted: d.admitted, error: d.failure?.message });
  expect(checkAdmission(admission, d.outcome, i.snapshot, INSTANCE)).toEqual([]);
  return { result, admission };
}

describe("content keys", () => {
  it("writes canonical JSON directly, with the same text as through a sorted copy", () => {
    const values = [
      null,
      0,
      -1.5,
      "x\u2028\"y",
      true,
      [],
      {},
      [1, "a", null, { b: 1, a: [{ d: 2, c: 3 }] }],
      { z: { y: [], x: {} }, "é": 1, A: "2", a: false, "": null },
      { policy: toJson(SandboxPolicySchema, policy()), settings: {}, services: [] },
    ];
    for (const v of values) expect(canonicalJsonValue(v as never)).toBe(canonicalJson(v));
    // Keys in code-unit order at every level, whatever the insertion order (integer-like keys too).
    expect(canonicalJsonValue({ b: 1, "9": { y: 1, x: 2 }, "10": 3, a: [{ d: 1, c: 2 }] })).toBe('{"10":3,"9":{"x":2,"y":1},"a":[{"c":2,"d":1}],"b":1}');
    expect(canonicalJsonValue({ a: 1, b: 2 })).toBe(canonicalJsonValue({ b: 2, a: 1 }));
  });

  it("builds the policy JSON once, for the key and for effective.json", () => {
    const s = sandboxSnapshot({ version: 2 });
    const c = sandboxContent(s);
    expect(c.key).toBe(sandboxContentKey(s));
    expect(c.policy).toEqual(toJson(SandboxPolicySchema, s.policy!));
    expect(sandboxContent(sandboxSnapshot({ version: 2, policy: policy({}) })).key).not.toBe(c.key);
  });
});

describe("revisions", () => {
  it("builds the sandbox requested revision from the received snapshot's revision tuple", () => {
    const s = sandboxSnapshot({ version: 4, settingsRevision: 9n, source: PolicySource.GLOBAL, globalPolicyVersion: 3 });
    const r = sandboxRequestedRevision(s);
    expect(r.component.case).toBe("sandboxConfig");
    expect(r.component.value).toMatchObject(expectedSandboxRevision(s));
  });

  it("writes a revision tuple in proto JSON exactly as toJson does, for every policy source (an unknown one as its number)", () => {
    for (const policySource of [PolicySource.UNSPECIFIED, PolicySource.SANDBOX, PolicySource.GLOBAL, 99 as PolicySource]) {
      for (const r of [
        create(SandboxConfigRevisionSchema, { policySource }),
        create(SandboxConfigRevisionSchema, { configRevision: 0x7fff_ffff_ffff_ffffn, policyVersion: 4_294_967_295, policySource, globalPolicyVersion: 7, settingsRevision: 18_446_744_073_709_551_615n }),
      ]) {
        expect(JSON.stringify(sandboxRevisionJson(r))).toBe(JSON.stringify(toJson(SandboxConfigRevisionSchema, r, { alwaysEmitImplicit: true })));
      }
    }
  });

  it("builds the provider requested revision from provider_env_revision", () => {
    expect(providerRequestedRevision(providerSnapshot(42n)).component).toEqual({ case: "providerEnvironment", value: 42n });
  });
});

describe("sandbox config decisions", () => {
  it("applies a valid snapshot: APPLIED, applied = requested, admission ACCEPTED, install", () => {
    const i = input({ version: 1 });
    const d = decideSandboxConfig(i);
    expect(d).toMatchObject({ outcome: ConfigApplyOutcome.APPLIED, effect: "install", admitted: true, failure: undefined });
    const { admission } = expectGatewayAccepts(i, d);
    expect(admission).toMatchObject({ instanceId: INSTANCE, state: ConfigurationAdmissionState.ACCEPTED, policyVersion: 1, error: "" });
    expect(d.nextActive?.revision).toEqual(sandboxConfigRevision(i.snapshot));
  });

  it("reports IGNORED_DUPLICATE when revision tuple and content equal the active configuration", () => {
    const i = input({ version: 2 }, { active: active({ version: 2 }) });
    const d = decideSandboxConfig(i);
    expect(d).toMatchObject({ outcome: ConfigApplyOutcome.IGNORED_DUPLICATE, effect: "keep", admitted: true });
    expectGatewayAccepts(i, d);
  });

  it("re-applies when the revision tuple is equal but the content differs", () => {
    const i = input({ version: 2, policy: policy({ other: [{ host: "example.com" }] }) }, { active: active({ version: 2 }) });
    // Different policy means a different config revision in practice; force the tuple to be equal.
    const forced = { ...i, active: { revision: sandboxConfigRevision(i.snapshot), contentKey: "something else" } };
    expect(decideSandboxConfig(forced).outcome).toBe(ConfigApplyOutcome.APPLIED);
  });

  it("reports IGNORED_STALE for a lower policy version, keeping the active revision and rejecting admission", () => {
    const act = active({ version: 5 });
    const i = input({ version: 3 }, { active: act });
    const d = decideSandboxConfig(i);
    expect(d).toMatchObject({ outcome: ConfigApplyOutcome.IGNORED_STALE, effect: "keep", admitted: false });
    expect(d.applied).toEqual(wrapSandboxRevision(act.revision));
    expect(d.nextActive).toBe(act);
    expectGatewayAccepts(i, d);
  });

  it("on an invalid rule with retain_last_valid keeps the previous revision: FAILED_RETAINED_LAST_KNOWN_GOOD", () => {
    const act = active({ version: 1 });
    const i = input({ version: 2, policy: invalidPolicy() }, { active: act });
    const d = decideSandboxConfig(i);
    expect(d).toMatchObject({ outcome: ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD, effect: "keep", admitted: false });
    expect(d.applied).toEqual(wrapSandboxRevision(act.revision));
    expect(d.failure).toMatchObject({ code: "invalid_policy", retryable: false });
    const { admission } = expectGatewayAccepts(i, d);
    expect(admission.state).toBe(ConfigurationAdmissionState.REJECTED);
    expect(admission.error).toBe(d.failure?.message);
  });

  it("on an invalid rule without any previous good configuration fails closed", () => {
    const i = input({ version: 1, policy: invalidPolicy() });
    const d = decideSandboxConfig(i);
    expect(d).toMatchObject({ outcome: ConfigApplyOutcome.FAILED_CLOSED, effect: "deny_all", applied: undefined, nextActive: undefined });
    expectGatewayAccepts(i, d);
  });

  it("fails closed rather than claim a retained revision equal to the requested one", () => {
    const good = sandboxSnapshot({ version: 2 });
    const i = input({ version: 2, policy: invalidPolicy() });
    // A gateway bug: the same revision tuple now carries an invalid policy.
    const same = { ...i, active: { revision: sandboxConfigRevision(i.snapshot), contentKey: sandboxContentKey(good) } };
    const d = decideSandboxConfig(same);
    expect(d.outcome).toBe(ConfigApplyOutcome.FAILED_CLOSED);
    expectGatewayAccepts(same, d);
  });

  it("on an invalid rule with fail_closed writes deny-all even when a previous configuration exists", () => {
    const i = input({ version: 2, policy: invalidPolicy(), mode: "fail_closed" }, { active: active({ version: 1 }) });
    const d = decideSandboxConfig(i);
    expect(d).toMatchObject({ outcome: ConfigApplyOutcome.FAILED_CLOSED, effect: "deny_all", applied: undefined, admitted: false });
    expectGatewayAccepts(i, d);
  });

  it("treats an unset failure mode as retain_last_valid and an unknown one as fail_closed", () => {
    expect(failureMode(sandboxSnapshot({ mode: "" }))).toBe("retain_last_valid");
    expect(failureMode(sandboxSnapshot({ mode: "retain_last_valid" }))).toBe("retain_last_valid");
    expect(failureMode(sandboxSnapshot({ mode: "fail_closed" }))).toBe("fail_closed");
    expect(failureMode(sandboxSnapshot({ mode: "panic" }))).toBe("fail_closed");
  });

  it("with a local override reports RETAINED_LOCAL_OVERRIDE, no applied revision, admission ACCEPTED, even for an invalid or older snapshot", () => {
    for (const init of [{ version: 3 }, { version: 3, policy: invalidPolicy() }, { version: 1 }]) {
      const i = input(init, { localOverride: true, active: active({ version: 2 }) });
      const d = decideSandboxConfig(i);
      expect(d).toMatchObject({ outcome: ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE, effect: "store_desired", applied: undefined, admitted: true });
      expectGatewayAccepts(i, d);
    }
  });

  it("reports DEGRADED (applied, admission ACCEPTED) naming each unreachable middleware service", () => {
    const i = input({ version: 2 }, { unreachableServices: [{ name: "authz", reason: "TCP connect to 10.0.0.1:9000 failed: ECONNREFUSED" }] });
    const d = decideSandboxConfig(i);
    expect(d).toMatchObject({ outcome: ConfigApplyOutcome.DEGRADED, effect: "install", admitted: true, degradedServices: ["authz"] });
    expect(d.failure?.message).toContain("'authz'");
    expectGatewayAccepts(i, d);
  });

  it("rejects a snapshot the gateway itself marked with a configuration error", () => {
    const i = input({ version: 2, configurationError: "stored policy does not match the current schema" }, { active: active({ version: 1 }) });
    const d = decideSandboxConfig(i);
    expect(d.outcome).toBe(ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD);
    expect(d.failure?.code).toBe("gateway_configuration_error");
    expectGatewayAccepts(i, d);
  });

  it("turns an injected bootstrap failure or an install error into a failure outcome", () => {
    const a = input({ version: 2 }, { active: active({ version: 1 }), injectedFailure: "boom" });
    expect(decideSandboxConfig(a)).toMatchObject({ outcome: ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD, failure: { code: "apply_failed" } });
    const b = input({ version: 2 }, { installError: "ENOSPC" });
    const d = decideSandboxConfig(b);
    expect(d).toMatchObject({ outcome: ConfigApplyOutcome.FAILED_CLOSED, failure: { code: "install_failed", retryable: true } });
    expectGatewayAccepts(b, d);
  });
});

describe("provider environment decisions", () => {
  const snap = providerSnapshot(3n, { TOKEN: "secret" });
  const key = providerContentKey(snap);

  it("applies a new environment and reports its revision", () => {
    const d = decideProviderEnvironment({ snapshot: snap, contentKey: key, active: undefined, problems: [] });
    expect(d).toMatchObject({ component: ConfigComponent.PROVIDER_ENVIRONMENT, outcome: ConfigApplyOutcome.APPLIED, effect: "install" });
    expect(checkApplyResult(toApplyResult(d), { provider: snap })).toEqual([]);
  });

  it("reports IGNORED_DUPLICATE for the same revision and content", () => {
    const d = decideProviderEnvironment({ snapshot: snap, contentKey: key, active: { revision: 3n, contentKey: key }, problems: [] });
    expect(d.outcome).toBe(ConfigApplyOutcome.IGNORED_DUPLICATE);
    expect(checkApplyResult(toApplyResult(d), { provider: snap })).toEqual([]);
  });

  it("keeps the previous environment when the new one cannot be installed, or fails closed without one", () => {
    const bad = providerSnapshot(4n, { "BAD=NAME": "x" });
    const problems = validateProviderEnvironment(bad);
    expect(problems).toEqual(["values[0] name contains '=' or NUL"]);
    const kept = decideProviderEnvironment({ snapshot: bad, contentKey: providerContentKey(bad), active: { revision: 3n, contentKey: key }, problems });
    expect(kept.outcome).toBe(ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD);
    expect(checkApplyResult(toApplyResult(kept), { provider: bad })).toEqual([]);
    const closed = decideProviderEnvironment({ snapshot: bad, contentKey: providerContentKey(bad), active: undefined, problems });
    expect(closed).toMatchObject({ outcome: ConfigApplyOutcome.FAILED_CLOSED, applied: undefined, effect: "deny_all" });
    expect(checkApplyResult(toApplyResult(closed), { provider: bad })).toEqual([]);
  });

  it("never puts a value in a failure message", () => {
    const bad = providerSnapshot(4n, { "": "super-secret-value" });
    const d = decideProviderEnvironment({ snapshot: bad, contentKey: providerContentKey(bad), active: undefined, problems: validateProviderEnvironment(bad) });
    expect(d.failure?.message).not.toContain("super-secret-value");
  });
});

describe("static credential bindings, dynamic credentials and readiness reasons", () => {
  const SECRET = "sk-apply-secret-value";

  it("a static credential with its binding and a dynamic credential install, and the binding is part of the content", () => {
    const snap = boundProviderSnapshot(5n, SECRET);
    expect(validateProviderEnvironment(snap)).toEqual([]);
    const d = decideProviderEnvironment({ snapshot: snap, contentKey: providerContentKey(snap), active: undefined, problems: [] });
    expect(d.outcome).toBe(ConfigApplyOutcome.APPLIED);
    const moved = boundProviderSnapshot(5n, SECRET);
    moved.values[0]!.staticCredentialBinding!.endpoints[0]!.path = "/v2/**";
    expect(providerContentKey(moved)).not.toBe(providerContentKey(snap));
  });

  it("a binding must be present exactly on static credentials, bind an endpoint with a host and a TCP port; messages name fields only", () => {
    const unbound = boundProviderSnapshot(5n, SECRET);
    unbound.values[0]!.staticCredentialBinding = undefined;
    const misplaced = boundProviderSnapshot(5n, SECRET);
    misplaced.values[0]!.classification = ProviderEnvironmentValueClassification.UNSPECIFIED;
    const empty = boundProviderSnapshot(5n, SECRET);
    empty.values[0]!.staticCredentialBinding!.endpoints = [];
    const badEndpoint = boundProviderSnapshot(5n, SECRET);
    Object.assign(badEndpoint.values[0]!.staticCredentialBinding!.endpoints[0]!, { host: "", port: 70_000 });
    expect(validateProviderEnvironment(unbound)).toEqual(["values[0] is a static credential without a static_credential_binding"]);
    expect(validateProviderEnvironment(misplaced)).toEqual(["values[0] has a static_credential_binding but is not a static credential"]);
    expect(validateProviderEnvironment(empty)).toEqual(["values[0].static_credential_binding binds no endpoint"]);
    expect(validateProviderEnvironment(badEndpoint)).toEqual([
      "values[0].static_credential_binding.endpoints[0] has an empty host",
      "values[0].static_credential_binding.endpoints[0].port 70000 is not a TCP port",
    ]);
    for (const s of [unbound, misplaced, empty, badEndpoint]) {
      const d = decideProviderEnvironment({ snapshot: s, contentKey: providerContentKey(s), active: undefined, problems: validateProviderEnvironment(s) });
      expect(d).toMatchObject({ outcome: ConfigApplyOutcome.FAILED_CLOSED, failure: { code: "invalid_provider_environment" } });
      expect(d.failure?.message).not.toContain(SECRET);
    }
  });

  it("installs only what upstream calls installable: UNSPECIFIED, CREDENTIALS_WITHHELD, CREDENTIAL_EXPIRED (and an unknown reason, read as withheld)", () => {
    const installable = [ProviderReadinessReason.UNSPECIFIED, ProviderReadinessReason.CREDENTIALS_WITHHELD, ProviderReadinessReason.CREDENTIAL_EXPIRED, 99 as ProviderReadinessReason];
    for (const r of installable) expect(isInstallable(r), ProviderReadinessReason[r] ?? String(r)).toBe(true);
    const numbers = Object.values(ProviderReadinessReason).filter((v): v is number => typeof v === "number");
    expect(numbers).toHaveLength(16);
    for (const r of numbers.filter((n) => !installable.includes(n))) expect(isInstallable(r), ProviderReadinessReason[r]).toBe(false);

    const waiting = boundProviderSnapshot(6n, SECRET, ProviderReadinessReason.WAITING_FOR_CREDENTIALS);
    const closed = decideProviderEnvironment({ snapshot: waiting, contentKey: providerContentKey(waiting), active: undefined, problems: [] });
    expect(closed).toMatchObject({
      outcome: ConfigApplyOutcome.FAILED_CLOSED,
      effect: "deny_all",
      failure: { code: "provider_not_ready", message: "provider environment is not ready for installation (readiness reason WAITING_FOR_CREDENTIALS)", retryable: true },
    });
    expect(checkApplyResult(toApplyResult(closed), { provider: waiting })).toEqual([]);
    const kept = decideProviderEnvironment({ snapshot: waiting, contentKey: providerContentKey(waiting), active: { revision: 5n, contentKey: "k" }, problems: [] });
    expect(kept.outcome).toBe(ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD);
  });
});

describe("§3.10.2 consistency of outcome and applied revision", () => {
  const req = sandboxRequestedRevision(sandboxSnapshot({ version: 2 }));
  const other = sandboxRequestedRevision(sandboxSnapshot({ version: 1 }));
  const cases: Array<[ConfigApplyOutcome, "same" | "other" | "absent", boolean]> = [
    [ConfigApplyOutcome.APPLIED, "same", true],
    [ConfigApplyOutcome.APPLIED, "other", false],
    [ConfigApplyOutcome.APPLIED, "absent", false],
    [ConfigApplyOutcome.IGNORED_DUPLICATE, "same", true],
    [ConfigApplyOutcome.IGNORED_DUPLICATE, "absent", false],
    [ConfigApplyOutcome.DEGRADED, "same", true],
    [ConfigApplyOutcome.DEGRADED, "other", false],
    [ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE, "absent", true],
    [ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE, "same", false],
    [ConfigApplyOutcome.FAILED_CLOSED, "absent", true],
    [ConfigApplyOutcome.FAILED_CLOSED, "other", false],
    [ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD, "other", true],
    [ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD, "same", false],
    [ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD, "absent", false],
    [ConfigApplyOutcome.IGNORED_STALE, "other", true],
    [ConfigApplyOutcome.IGNORED_STALE, "absent", true],
    [ConfigApplyOutcome.UNSUPPORTED, "absent", true],
    [ConfigApplyOutcome.UNSPECIFIED, "same", false],
  ];
  const named = cases.map(([o, a, ok]) => [ConfigApplyOutcome[o], a, ok, o] as const);
  it.each(named)("%s with the applied revision %s is consistent: %s", (_name, applied, ok, outcome) => {
    const r = create(ConfigComponentApplyResultSchema, {
      component: ConfigComponent.SANDBOX_CONFIG,
      outcome,
      requestedRevision: req,
      appliedRevision: applied === "same" ? req : applied === "other" ? other : undefined,
    });
    expect(outcomeConsistencyError(r) === undefined).toBe(ok);
    // The fake gateway's independent check agrees.
    expect(checkApplyResult(r, { sandbox: sandboxSnapshot({ version: 2 }) }).length === 0).toBe(ok);
  });

  it("requires a requested revision", () => {
    expect(outcomeConsistencyError(create(ConfigComponentApplyResultSchema, { outcome: ConfigApplyOutcome.APPLIED }))).toBe("configuration result revision missing");
  });

  it("counts APPLIED, IGNORED_DUPLICATE, RETAINED_LOCAL_OVERRIDE and DEGRADED as acknowledging", () => {
    const ack = Object.values(ConfigApplyOutcome).filter((v): v is ConfigApplyOutcome => typeof v === "number" && isAcknowledging(v));
    expect(ack.sort()).toEqual([ConfigApplyOutcome.APPLIED, ConfigApplyOutcome.IGNORED_DUPLICATE, ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE, ConfigApplyOutcome.DEGRADED].sort());
  });
});

describe("bootstrap admission", () => {
  it("is accepted only when both components were acknowledged", () => {
    const sOk = decideSandboxConfig(input({ version: 1 }));
    const snap = providerSnapshot(1n, { A: "1" });
    const pOk = decideProviderEnvironment({ snapshot: snap, contentKey: providerContentKey(snap), active: undefined, problems: [] });
    const pBad = decideProviderEnvironment({ snapshot: snap, contentKey: providerContentKey(snap), active: undefined, problems: ["values[0] has an empty name"] });
    expect(bootstrapVerdict(sOk, pOk)).toEqual({ admitted: true, error: undefined });
    expect(bootstrapVerdict(sOk, undefined).admitted).toBe(true);
    const v = bootstrapVerdict(sOk, pBad);
    expect(v.admitted).toBe(false);
    expect(v.error).toContain("provider environment");
    const sBad = decideSandboxConfig(input({ version: 1, policy: invalidPolicy() }));
    expect(bootstrapVerdict(sBad, pOk).error).toContain("sandbox config: invalid policy");
  });
});
