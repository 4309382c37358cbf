// Behaviour of one supervisor session against the in-process fake gateway: hello, bootstrap,
// live updates and every outcome, secrecy of provider values, reconnects and fault flags.

import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { createServer, type Server } from "node:net";
import { freePort } from "../../examples/free-port.js";
import { create } from "@bufbuild/protobuf";
import {
  ConfigApplyOutcome,
  ConfigBootstrapSchema,
  ConfigComponent,
  ConfigurationAdmissionState,
  ProviderReadinessReason,
  type ConfigSnapshotRevision,
} from "openshell-config/raw";
import { afterEach, describe, expect, it } from "vitest";
import { eventually, readJson } from "./support/eventually.js";
import { expectedSandboxRevision, FakeGateway, type FakeGatewayOptions } from "./support/fake-gateway.js";
import { startSupervisor, type RunningSupervisor, type StartOptions } from "./support/harness.js";
import { boundProviderSnapshot, invalidPolicy, policy, providerSnapshot, sandboxSnapshot } from "./support/snapshots.js";

let gw: FakeGateway | undefined;
let sup: RunningSupervisor | undefined;
const servers: Server[] = [];

afterEach(async () => {
  await sup?.stop();
  await gw?.close();
  for (const s of servers.splice(0)) s.close();
  sup = undefined;
  gw = undefined;
});

async function setup(gwOptions: FakeGatewayOptions = {}, supOptions: Partial<StartOptions> = {}) {
  gw = await FakeGateway.start(gwOptions);
  sup = startSupervisor({ gateways: [gw.url], ...supOptions });
  const session = await gw.waitForSession();
  return { gw, sup, session };
}

function sandboxRev(r: ConfigSnapshotRevision | undefined) {
  if (r?.component.case !== "sandboxConfig") return undefined;
  const { configRevision, policyVersion, policySource, globalPolicyVersion, settingsRevision } = r.component.value;
  return { configRevision, policyVersion, policySource, globalPolicyVersion, settingsRevision };
}

/** Every regular file below `dir`. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []));
}

/** A loopback port with nothing listening on it (see examples/free-port.ts for why not listen(0)). */
const closedPort = freePort;

async function openPort(): Promise<number> {
  const s = createServer((c) => c.destroy());
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return (s.address() as { port: number }).port;
}

describe("supervisor session", () => {
  it("opens the stream with a hello that advertises config snapshots and config apply, with the sandbox token", async () => {
    const { session } = await setup();
    expect(session.hello.sandboxId).toBe("dev");
    expect(session.hello.supportsConfigSnapshots).toBe(true);
    expect(session.hello.supportsConfigApply).toBe(true);
    expect(session.hello.instanceId).toMatch(/^[0-9a-f-]{36}$/);
    expect(session.hello.connectionEpoch).toBe(1n);
    expect(session.requestHeader.get("authorization")).toBe("Bearer token-dev");
    // Compression is off: the supervisor neither compresses nor asks for compressed responses.
    expect(session.requestHeader.get("grpc-encoding")).toBeNull();
    expect(session.requestHeader.get("grpc-accept-encoding") ?? "").not.toMatch(/gzip|br/);
  });

  it("applies the bootstrap, writes effective.json, then reports both components with exact revisions and an accepted admission", async () => {
    const { gw, sup, session } = await setup();
    const result = await session.bootstrapResult();
    const delivered = session.bootstrap!.sandboxConfig!;
    const [sandbox, provider] = result.results;
    expect(sandbox?.component).toBe(ConfigComponent.SANDBOX_CONFIG);
    expect(sandbox?.outcome).toBe(ConfigApplyOutcome.APPLIED);
    expect(sandboxRev(sandbox?.requestedRevision)).toEqual(expectedSandboxRevision(delivered));
    expect(sandboxRev(sandbox?.appliedRevision)).toEqual(expectedSandboxRevision(delivered));
    expect(provider?.component).toBe(ConfigComponent.PROVIDER_ENVIRONMENT);
    expect(provider?.outcome).toBe(ConfigApplyOutcome.APPLIED);
    expect(provider?.requestedRevision?.component).toEqual({ case: "providerEnvironment", value: 1n });
    expect(result.admission).toMatchObject({
      instanceId: session.hello.instanceId,
      state: ConfigurationAdmissionState.ACCEPTED,
      policyVersion: delivered.version,
      policyHash: delivered.policyHash,
      configRevision: delivered.configRevision,
      providerEnvRevision: delivered.providerEnvRevision,
      error: "",
    });
    const effective = sup.stateDir.readEffective("dev")!;
    expect(effective).toMatchObject({ sandbox: "dev", source: "gateway", policyHash: delivered.policyHash });
    expect(effective.policy).toMatchObject({ networkPolicies: { github: { endpoints: [{ host: "api.github.com", protocol: "rest" }] } } });
    // The workload starts once the configuration is admitted.
    await session.waitFor((m) => (m.payload.case === "runtimeReady" ? true : undefined));
    expect(gw.violations()).toEqual([]);
  });

  it("applies live updates in order and answers each with its update_id and component_sequence", async () => {
    const { gw, sup, session } = await setup({}, { faults: { applyDelayMs: 30 } });
    await session.bootstrapResult();
    const u1 = session.sendSandboxConfig(sandboxSnapshot({ version: 2 }));
    const u2 = session.sendProviderEnvironment(providerSnapshot(2n, { API_KEY: "k-2" }));
    const u3 = session.sendSandboxConfig(sandboxSnapshot({ version: 3, settings: { log_level: "debug" }, settingsRevision: 2n }));
    const r3 = await session.updateResult(u3.updateId);
    const r1 = await session.updateResult(u1.updateId);
    const r2 = await session.updateResult(u2.updateId);
    expect([r1.componentSequence, r2.componentSequence, r3.componentSequence]).toEqual([1n, 1n, 2n]);
    expect([r1, r2, r3].map((r) => r.result?.outcome)).toEqual([ConfigApplyOutcome.APPLIED, ConfigApplyOutcome.APPLIED, ConfigApplyOutcome.APPLIED]);
    expect(r1.admission?.state).toBe(ConfigurationAdmissionState.ACCEPTED);
    expect(r2.admission).toBeUndefined();
    // One at a time, in delivery order.
    expect(session.all("configUpdateResult").map((r) => r.updateId)).toEqual([u1.updateId, u2.updateId, u3.updateId]);
    expect(sup.stateDir.readEffective("dev")!).toMatchObject({ revision: { policyVersion: 3, settingsRevision: "2" }, settings: { log_level: { value: { stringValue: "debug" } } } });
    expect(gw.violations()).toEqual([]);
  });

  it("keeps the last known good policy when an update has an invalid rule, and reports the previous revision as applied", async () => {
    const { gw, sup, session } = await setup();
    await session.bootstrapResult();
    const before = sup.stateDir.readEffective("dev")!;
    const bad = sandboxSnapshot({ version: 2, policy: invalidPolicy() });
    const { updateId } = session.sendSandboxConfig(bad);
    const r = await session.updateResult(updateId);
    expect(r.result?.outcome).toBe(ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD);
    expect(sandboxRev(r.result?.appliedRevision)).toEqual(expectedSandboxRevision(session.bootstrap!.sandboxConfig!));
    expect(sandboxRev(r.result?.requestedRevision)).toEqual(expectedSandboxRevision(bad));
    expect(r.result?.failure).toMatchObject({ code: "invalid_policy", retryable: false });
    expect(r.result?.failure?.message).toContain('network_policies["db"].endpoints[0]');
    expect(r.result?.failure?.message).toContain("L4 endpoint");
    expect(r.admission?.state).toBe(ConfigurationAdmissionState.REJECTED);
    expect(r.admission?.error).toContain("invalid policy");
    expect(sup.stateDir.readEffective("dev")!.revision).toEqual(before.revision);
    expect(gw.violations()).toEqual([]);
  });

  it("fails closed when the snapshot asks for fail_closed: deny-all is written and no revision is reported as applied", async () => {
    const { gw, sup, session } = await setup();
    await session.bootstrapResult();
    const { updateId } = session.sendSandboxConfig(sandboxSnapshot({ version: 2, policy: invalidPolicy(), mode: "fail_closed" }));
    const r = await session.updateResult(updateId);
    expect(r.result?.outcome).toBe(ConfigApplyOutcome.FAILED_CLOSED);
    expect(r.result?.appliedRevision).toBeUndefined();
    expect(r.admission?.state).toBe(ConfigurationAdmissionState.REJECTED);
    const effective = sup.stateDir.readEffective("dev")!;
    expect(effective.source).toBe("deny_all");
    expect(effective.policy).not.toHaveProperty("networkPolicies");
    expect(gw.violations()).toEqual([]);
  });

  it("retains a local override: gateway policies are stored, not enforced, and reported as RETAINED_LOCAL_OVERRIDE", async () => {
    const local = policy({ local: [{ host: "localhost", port: 8080, protocol: "tcp" }] });
    const { gw, sup, session } = await setup({}, { localPolicy: local });
    const boot = await session.bootstrapResult();
    expect(boot.results[0]?.outcome).toBe(ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE);
    expect(boot.results[0]?.appliedRevision).toBeUndefined();
    expect(boot.admission?.state).toBe(ConfigurationAdmissionState.ACCEPTED);
    const { updateId } = session.sendSandboxConfig(sandboxSnapshot({ version: 2 }));
    const r = await session.updateResult(updateId);
    expect(r.result?.outcome).toBe(ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE);
    expect(r.result?.appliedRevision).toBeUndefined();
    expect(r.admission?.state).toBe(ConfigurationAdmissionState.ACCEPTED);
    const effective = sup.stateDir.readEffective("dev")!;
    expect(effective.source).toBe("local_override");
    expect(effective.policy).toMatchObject({ networkPolicies: { local: { endpoints: [{ host: "localhost" }] } } });
    expect(readJson(sup.stateDir.gatewayDesiredPath("dev"))).toMatchObject({ source: "gateway_desired", revision: { policyVersion: 2 } });
    expect(gw.violations()).toEqual([]);
  });

  it("applies a policy whose middleware service is unreachable, but reports DEGRADED naming the service", async () => {
    const dead = await closedPort();
    const alive = await openPort();
    const { gw, sup, session } = await setup();
    await session.bootstrapResult();
    const snap = sandboxSnapshot({
      version: 2,
      services: [
        { name: "audit-log", endpoint: `127.0.0.1:${alive}` },
        { name: "authz", endpoint: `127.0.0.1:${dead}` },
      ],
    });
    const { updateId } = session.sendSandboxConfig(snap);
    const r = await session.updateResult(updateId);
    expect(r.result?.outcome).toBe(ConfigApplyOutcome.DEGRADED);
    expect(sandboxRev(r.result?.appliedRevision)).toEqual(expectedSandboxRevision(snap));
    expect(r.result?.failure?.message).toContain("'authz'");
    expect(r.result?.failure?.message).not.toContain("audit-log");
    expect(r.admission?.state).toBe(ConfigurationAdmissionState.ACCEPTED);
    expect(sup.stateDir.readEffective("dev")!).toMatchObject({ revision: { policyVersion: 2 }, degradedServices: ["authz"] });
    expect(gw.violations()).toEqual([]);
  });

  it("reports IGNORED_DUPLICATE for a snapshot identical to the active one, and IGNORED_STALE for an older one", async () => {
    const { gw, session } = await setup();
    await session.bootstrapResult();
    const dup = session.sendSandboxConfig(session.bootstrap!.sandboxConfig!);
    const r = await session.updateResult(dup.updateId);
    expect(r.result?.outcome).toBe(ConfigApplyOutcome.IGNORED_DUPLICATE);
    expect(r.result?.appliedRevision).toEqual(r.result?.requestedRevision);
    expect(r.admission?.state).toBe(ConfigurationAdmissionState.ACCEPTED);

    const v3 = session.sendSandboxConfig(sandboxSnapshot({ version: 3 }));
    await session.updateResult(v3.updateId);
    const old = session.sendSandboxConfig(sandboxSnapshot({ version: 2 }));
    const s = await session.updateResult(old.updateId);
    expect(s.result?.outcome).toBe(ConfigApplyOutcome.IGNORED_STALE);
    expect(sandboxRev(s.result?.appliedRevision)?.policyVersion).toBe(3);
    expect(s.admission?.state).toBe(ConfigurationAdmissionState.REJECTED);
    expect(gw.violations()).toEqual([]);
  });

  it("installs provider values in memory and in a 0600 file but never writes a value to the logs", async () => {
    const secrets = { GITHUB_TOKEN: "ghp_bootstrapSecretValue123", OPENAI_API_KEY: "sk-bootstrap-secret-456" };
    const { sup, session } = await setup({
      bootstrap: () => create(ConfigBootstrapSchema, { sandboxConfig: sandboxSnapshot({ providerEnvRevision: 7n }), providerEnvironment: providerSnapshot(7n, secrets) }),
    });
    await session.bootstrapResult();
    const { updateId } = session.sendProviderEnvironment(providerSnapshot(8n, { GITHUB_TOKEN: "ghp_rotatedSecretValue789" }));
    expect((await session.updateResult(updateId)).result?.outcome).toBe(ConfigApplyOutcome.APPLIED);
    const sandbox = sup.fleet.sandboxes[0]!;
    expect(Object.fromEntries(sandbox.environment)).toEqual({ GITHUB_TOKEN: "ghp_rotatedSecretValue789" });
    const file = sup.stateDir.providerEnvPath("dev");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readJson(file)).toMatchObject({ providerEnvRevision: "8", values: { GITHUB_TOKEN: "ghp_rotatedSecretValue789" } });
    const logs = sup.logText();
    expect(logs).toContain("GITHUB_TOKEN");
    expect(logs).toContain("OPENAI_API_KEY");
    for (const v of [...Object.values(secrets), "ghp_rotatedSecretValue789"]) expect(logs).not.toContain(v);
    expect(logs).not.toContain("token-dev");
  });

  it("answers a provider snapshot that differs only in its policy hash as APPLIED without replacing provider-env.json, and replaces it when a value changes", async () => {
    const { sup, session } = await setup({
      bootstrap: () => create(ConfigBootstrapSchema, { sandboxConfig: sandboxSnapshot({ providerEnvRevision: 7n }), providerEnvironment: providerSnapshot(7n, { API_KEY: "k-1" }) }),
    });
    await session.bootstrapResult();
    const file = sup.stateDir.providerEnvPath("dev");
    const first = readJson(file) as { writtenAt: string };
    const inode = statSync(file).ino;
    // What a policy change sends: the same environment under a new policy hash.
    const rehashed = providerSnapshot(7n, { API_KEY: "k-1" });
    rehashed.policyHash = "sha256-of-the-next-policy";
    const u1 = session.sendProviderEnvironment(rehashed);
    const r1 = (await session.updateResult(u1.updateId)).result;
    expect(r1?.outcome).toBe(ConfigApplyOutcome.APPLIED);
    expect(r1?.appliedRevision?.component).toEqual({ case: "providerEnvironment", value: 7n });
    expect(statSync(file).ino).toBe(inode);
    expect(readJson(file)).toEqual(first);
    // A changed value under the same revision is installed: the file is replaced.
    const changed = providerSnapshot(7n, { API_KEY: "k-2" });
    changed.policyHash = rehashed.policyHash;
    const u2 = session.sendProviderEnvironment(changed);
    expect((await session.updateResult(u2.updateId)).result?.outcome).toBe(ConfigApplyOutcome.APPLIED);
    expect(statSync(file).ino).not.toBe(inode);
    expect(readJson(file)).toMatchObject({ providerEnvRevision: "7", values: { API_KEY: "k-2" } });
    expect(Object.fromEntries(sup.fleet.sandboxes[0]!.environment)).toEqual({ API_KEY: "k-2" });
  });
  it("a static credential binding and a dynamic credential survive delivery; their secret is installed only in provider-env.json and never logged", async () => {
    const [first, rotated, withheld] = ["sk-bound-first-1a2b3c", "sk-bound-rotated-4d5e6f", "sk-bound-not-ready-7a8b9c"];
    const { gw, sup, session } = await setup({
      bootstrap: () => create(ConfigBootstrapSchema, { sandboxConfig: sandboxSnapshot({ providerEnvRevision: 7n }), providerEnvironment: boundProviderSnapshot(7n, first) }),
    });
    const boot = await session.bootstrapResult();
    expect(boot.results.find((r) => r.component === ConfigComponent.PROVIDER_ENVIRONMENT)?.outcome).toBe(ConfigApplyOutcome.APPLIED);
    const file = sup.stateDir.providerEnvPath("dev");
    const binding = { endpoints: [{ host: "api.example.com", port: 443, path: "/v1/**" }], credentialIdentity: "llm:API_KEY" };
    expect(readJson(file)).toMatchObject({
      providerEnvRevision: "7",
      values: { API_KEY: first, REGION: "eu" },
      staticCredentialBindings: { API_KEY: binding },
      dynamicCredentials: {
        github: {
          name: "GitHub token",
          description: "installation token minted at run time",
          envVars: ["GITHUB_TOKEN"],
          required: true,
          authStyle: "bearer",
          headerName: "Authorization",
          refresh: {
            strategy: "PROVIDER_CREDENTIAL_REFRESH_STRATEGY_OAUTH2_CLIENT_CREDENTIALS",
            tokenUrl: "https://auth.example.com/token",
            scopes: ["repo"],
            refreshBefore: "300s",
            material: [{ name: "client_secret", description: "OAuth client secret", required: true, secret: true }],
          },
          tokenGrant: { tokenEndpoint: "https://sts.example.com/token", grantType: "PROVIDER_CREDENTIAL_TOKEN_GRANT_TYPE_TOKEN_EXCHANGE", cacheTtl: "60s" },
        },
      },
    });
    expect(Object.keys((readJson(file) as { staticCredentialBindings: object }).staticCredentialBindings)).toEqual(["API_KEY"]);

    const r8 = session.sendProviderEnvironment(boundProviderSnapshot(8n, rotated));
    expect((await session.updateResult(r8.updateId)).result?.outcome).toBe(ConfigApplyOutcome.APPLIED);
    expect(Object.fromEntries(sup.fleet.sandboxes[0]!.environment)).toEqual({ API_KEY: rotated, REGION: "eu" });
    expect(readJson(file)).toMatchObject({ providerEnvRevision: "8", values: { API_KEY: rotated }, staticCredentialBindings: { API_KEY: binding } });

    // A snapshot the gateway marks as not ready is not installed: the rotated environment stays.
    const r9 = session.sendProviderEnvironment(boundProviderSnapshot(9n, withheld, ProviderReadinessReason.WAITING_FOR_CREDENTIALS));
    const notReady = await session.updateResult(r9.updateId);
    expect(notReady.result?.outcome).toBe(ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD);
    expect(notReady.result?.failure?.message).toContain("WAITING_FOR_CREDENTIALS");
    expect(readJson(file)).toMatchObject({ providerEnvRevision: "8", values: { API_KEY: rotated } });
    expect(gw.violations()).toEqual([]);

    const logs = sup.logText();
    expect(logs).toContain("API_KEY");
    expect(logs).toContain('"staticCredentialNames":["API_KEY"]');
    expect(logs).toContain('"dynamicCredentialNames":["github"]');
    for (const v of [first, rotated, withheld]) expect(logs.includes(v), "a provider secret in the supervisor's log").toBe(false);
    // On disk: the installed value only, only in provider-env.json; no earlier or refused value anywhere.
    for (const f of filesUnder(sup.stateDir.root)) {
      const text = readFileSync(f, "utf8");
      if (f === file) expect(text.includes(rotated)).toBe(true);
      else expect(text.includes(rotated), `the secret in ${f}`).toBe(false);
      for (const v of [first, withheld]) expect(text.includes(v), `an old or refused secret in ${f}`).toBe(false);
    }
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });

  it("reconnects after the gateway drops the stream: a new hello with the same instance and epoch + 1, and a fresh bootstrap", async () => {
    const { gw, sup, session } = await setup();
    await session.bootstrapResult();
    session.drop();
    const second = await gw.waitForSession((s) => s.epoch === 2n);
    expect(second.hello.instanceId).toBe(session.hello.instanceId);
    expect(second.hello.supportsConfigApply).toBe(true);
    const boot = await second.bootstrapResult();
    // Same configuration as before the drop: already in force.
    expect(boot.results[0]?.outcome).toBe(ConfigApplyOutcome.IGNORED_DUPLICATE);
    expect(boot.admission?.state).toBe(ConfigurationAdmissionState.ACCEPTED);
    expect(sup.fleet.sessions[0]!.stats).toMatchObject({ connections: 2, accepted: 2, bootstraps: 2 });
    expect(sup.fleet.sessions[0]!.connectionEpoch).toBe(2n);
    expect(gw.violations()).toEqual([]);
  });

  it("reconnects when the gateway falls silent for three heartbeat intervals", async () => {
    const { gw, session } = await setup({ heartbeatMs: 100 });
    await session.bootstrapResult();
    await session.waitFor((m) => (m.payload.case === "heartbeat" ? true : undefined));
    session.silenced = true;
    const second = await gw.waitForSession((s) => s.epoch === 2n, 3_000);
    expect(second.hello.instanceId).toBe(session.hello.instanceId);
  });

  it("sends heartbeats at the interval the gateway asked for", async () => {
    const { session } = await setup({ heartbeatMs: 100 });
    await eventually(() => expect(session.all("heartbeat").length).toBeGreaterThanOrEqual(3), 2_000);
  });

  it("with --drop-acks applies configuration but sends no results", async () => {
    const { sup, session } = await setup({ heartbeatMs: 100 }, { faults: { dropAcks: true } });
    session.sendSandboxConfig(sandboxSnapshot({ version: 2 }));
    await eventually(() => expect(sup.stateDir.readEffective("dev")!).toMatchObject({ revision: { policyVersion: 2 } }));
    // Still alive (heartbeats) and silent about results.
    const beats = session.all("heartbeat").length;
    await eventually(() => expect(session.all("heartbeat").length).toBeGreaterThan(beats + 1), 2_000);
    expect(session.all("configBootstrapResult")).toEqual([]);
    expect(session.all("configUpdateResult")).toEqual([]);
    expect(session.all("runtimeReady")).toEqual([]);
  });

  it("with --disconnect-after closes the stream after that many updates and reconnects", async () => {
    const { gw, session } = await setup({}, { faults: { disconnectAfter: 2 } });
    await session.bootstrapResult();
    const a = session.sendSandboxConfig(sandboxSnapshot({ version: 2 }));
    const b = session.sendSandboxConfig(sandboxSnapshot({ version: 3 }));
    await session.updateResult(a.updateId);
    await session.updateResult(b.updateId);
    await session.whenEnded();
    const second = await gw.waitForSession((s) => s.epoch === 2n);
    await second.bootstrapResult();
    expect(gw.violations()).toEqual([]);
  });

  it("with --fail-bootstrap reports a failed bootstrap (closed, nothing earlier to keep) and a rejected admission", async () => {
    const { gw, sup, session } = await setup({}, { faults: { failBootstrap: true } });
    const boot = await session.bootstrapResult();
    expect(boot.results[0]?.outcome).toBe(ConfigApplyOutcome.FAILED_CLOSED);
    expect(boot.results[0]?.appliedRevision).toBeUndefined();
    expect(boot.admission?.state).toBe(ConfigurationAdmissionState.REJECTED);
    expect(boot.admission?.error).toContain("--fail-bootstrap");
    expect(sup.stateDir.readEffective("dev")!.source).toBe("deny_all");
    // The workload does not start.
    await new Promise((r) => setTimeout(r, 100));
    expect(session.all("runtimeReady")).toEqual([]);
    expect(gw.violations()).toEqual([]);
  });

  it("with --apply-delay-ms takes at least that long to answer", async () => {
    const { session } = await setup({}, { faults: { applyDelayMs: 250 } });
    await session.bootstrapResult();
    const started = Date.now();
    const { updateId } = session.sendSandboxConfig(sandboxSnapshot({ version: 2 }));
    await session.updateResult(updateId);
    expect(Date.now() - started).toBeGreaterThanOrEqual(240);
  });

  it("applies but does not acknowledge when the gateway does not enable config apply", async () => {
    const { sup, session } = await setup({ configApplyEnabled: false, heartbeatMs: 100 });
    session.sendSandboxConfig(sandboxSnapshot({ version: 2 }));
    await eventually(() => expect(sup.stateDir.readEffective("dev")!).toMatchObject({ revision: { policyVersion: 2 } }));
    await eventually(() => expect(session.all("heartbeat").length).toBeGreaterThanOrEqual(2), 2_000);
    expect(session.all("configBootstrapResult")).toEqual([]);
    expect(session.all("configUpdateResult")).toEqual([]);
  });

  it("exits the session for good when the gateway rejects it for missing capabilities", async () => {
    gw = await FakeGateway.start({ reject: () => ({ reason: "supervisor lacks required capabilities: supports_config_apply" }) });
    sup = startSupervisor({ gateways: [gw.url] });
    const end = await sup.ended;
    expect(end).toEqual({ kind: "fatal", reason: expect.stringContaining("capabilities") });
    expect(gw.rejected).toHaveLength(1);
    expect(sup.logText()).toContain("rejected the session permanently");
  });

  it("keeps retrying with backoff after a rejection that is not about capabilities", async () => {
    let rejections = 0;
    const { gw } = await setup({
      reject: () => (rejections++ < 2 ? { reason: "sandbox is provisioning", code: 14 /* UNAVAILABLE */ } : undefined),
    });
    const s = await gw.waitForSession((x) => x.epoch === 3n);
    await s.bootstrapResult();
    expect(gw.rejected.map((h) => h.connectionEpoch)).toEqual([1n, 2n]);
  });

  it("rotates through the gateway URLs when one is unreachable", async () => {
    gw = await FakeGateway.start();
    const deadUrl = `http://127.0.0.1:${await closedPort()}`;
    sup = startSupervisor({ gateways: [deadUrl, gw.url] });
    const s = await gw.waitForSession();
    expect(s.epoch).toBe(2n);
    await s.bootstrapResult();
    expect(sup.stateDir.readEffective("dev") !== undefined).toBe(true);
  });
});
