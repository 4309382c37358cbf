// The provider environment the gateway sends (UPSTREAM.md §7 shape): a credential the policy binds
// to endpoints goes out as STATIC_CREDENTIAL with its StaticCredentialBinding, other credentials
// as plain secrets, config as NON_SECRET; the readiness reason says whether the snapshot is
// complete; secret values reach the supervisor's stream and nothing else the gateway writes.

import { afterEach, describe, expect, it } from "vitest";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  ProviderEnvironmentValueClassification as Classification,
  ProviderReadinessReason,
  NetworkPolicyRuleSchema,
  SandboxPolicySchema,
  type ProviderEnvironmentSnapshot,
  type SandboxPolicy,
} from "openshell-config/raw";
import { boundEndpoints, buildProviderSnapshot } from "../../src/delivery/provider-snapshot.js";
import type { ProviderRecord, SandboxRecord } from "../../src/store/store.js";
import { startTestGateway, type TestGateway } from "../rpc/harness.js";
import { policyMessage } from "../rpc/fixtures.js";
import { connectSupervisorDouble, type SupervisorDouble } from "./supervisor-double.js";

/** The fixture policy plus a rule "llm" whose endpoint binds provider `provider` (or nothing), and `extra` rules. */
function boundPolicy(provider: string | undefined, extra: Record<string, MessageInitShape<typeof NetworkPolicyRuleSchema>> = {}): SandboxPolicy {
  const p = policyMessage();
  p.networkPolicies.llm = create(NetworkPolicyRuleSchema, {
    name: "llm",
    endpoints: [{ host: "api.openai.com", ports: [443, 8443], path: "/v1/**", ...(provider ? { credentialBinding: { provider } } : {}) }],
    binaries: [{ path: "/usr/bin/curl" }],
  });
  for (const [name, rule] of Object.entries(extra)) p.networkPolicies[name] = create(NetworkPolicyRuleSchema, rule);
  return p;
}

function provider(name: string, credentials: Record<string, string>, config: Record<string, string> = {}): ProviderRecord {
  return {
    id: `id-${name}`,
    workspace: "default",
    name,
    type: "openai",
    resourceVersion: 1n,
    createdAt: new Date(0),
    values: [
      ...Object.entries(credentials).map(([n, value]) => ({ name: n, value, secret: true })),
      ...Object.entries(config).map(([n, value]) => ({ name: n, value, secret: false })),
    ],
  };
}

function storeOf(...providers: ProviderRecord[]) {
  return { providerByName: async (_ws: string, name: string) => providers.find((p) => p.name === name) };
}

function sandbox(providers: string[]): SandboxRecord {
  return { workspace: "default", providers, providerEnvRevision: 9n } as unknown as SandboxRecord;
}

function byName(s: ProviderEnvironmentSnapshot) {
  return Object.fromEntries(s.values.map((v) => [v.name, v]));
}

describe("buildProviderSnapshot", () => {
  const llm = provider("llm", { API_KEY: "sk-unit-secret" }, { REGION: "eu" });

  it("a credential the policy binds is a STATIC_CREDENTIAL with one endpoint per host, port and path; config is NON_SECRET", async () => {
    const pol = boundPolicy("llm", {
      other: { name: "other", endpoints: [{ host: "x.example.com", port: 443, credentialBinding: { provider: "someone-else" } }] },
    });
    const s = await buildProviderSnapshot(storeOf(llm), sandbox(["llm"]), { policy: pol, policyHash: "h1" });
    const v = byName(s);
    expect(v.API_KEY?.classification).toBe(Classification.STATIC_CREDENTIAL);
    expect(v.API_KEY?.value).toBe("sk-unit-secret");
    expect(v.API_KEY?.staticCredentialBinding).toMatchObject({
      endpoints: [
        { host: "api.openai.com", port: 443, path: "/v1/**" },
        { host: "api.openai.com", port: 8443, path: "/v1/**" },
      ],
      credentialIdentity: "llm:API_KEY",
      workloadCredentialHandle: "",
    });
    expect(v.REGION?.classification).toBe(Classification.NON_SECRET);
    expect(v.REGION?.staticCredentialBinding).toBeUndefined();
    expect(s).toMatchObject({ providerEnvRevision: 9n, policyHash: "h1", readinessReason: ProviderReadinessReason.UNSPECIFIED, dynamicCredentials: {} });
  });

  it("without a binding in the policy a credential is a plain secret (UNSPECIFIED) with no binding", async () => {
    const s = await buildProviderSnapshot(storeOf(llm), sandbox(["llm"]), { policy: boundPolicy(undefined), policyHash: "h" });
    expect(byName(s).API_KEY?.classification).toBe(Classification.UNSPECIFIED);
    expect(byName(s).API_KEY?.staticCredentialBinding).toBeUndefined();
  });

  it("an endpoint without a path binds every path, and the legacy port is used when ports is empty", () => {
    const pol = create(SandboxPolicySchema, { networkPolicies: { r: { endpoints: [{ host: "a.example.com", port: 8080, credentialBinding: { provider: "p" } }] } } });
    expect(boundEndpoints(pol, "p")).toMatchObject([{ host: "a.example.com", port: 8080, path: "/**" }]);
    expect(boundEndpoints(pol, "q")).toEqual([]);
  });

  it("no providers: an empty, complete snapshot (UNSPECIFIED) at the sandbox's provider revision", async () => {
    const s = await buildProviderSnapshot(storeOf(), sandbox([]), { policy: undefined, policyHash: "h" });
    expect(s).toMatchObject({ providerEnvRevision: 9n, values: [], readinessReason: ProviderReadinessReason.UNSPECIFIED });
  });

  it("an attached provider that cannot be read is left out and the snapshot says CREDENTIALS_WITHHELD", async () => {
    const s = await buildProviderSnapshot(storeOf(llm), sandbox(["gone", "llm"]), { policy: undefined, policyHash: "h" });
    expect(s.readinessReason).toBe(ProviderReadinessReason.CREDENTIALS_WITHHELD);
    expect(Object.keys(byName(s)).sort()).toEqual(["API_KEY", "REGION"]);
  });
});

describe("delivering the provider environment to a supervisor", () => {
  let gw: TestGateway | undefined;
  let sup: SupervisorDouble | undefined;
  afterEach(async () => {
    sup?.close();
    await gw?.close();
    sup = undefined;
    gw = undefined;
  });

  it("a bound credential arrives with its binding in the bootstrap; a rotation and an unbinding policy follow; no secret is logged", async () => {
    gw = await startTestGateway();
    const first = `sk-first-${Math.random().toString(36).slice(2)}`;
    const rotated = `sk-rotated-${Math.random().toString(36).slice(2)}`;
    const admin = gw.raw("admin");
    const workspaceScope = { selection: { case: "workspace" as const, value: "default" } };
    await admin.createProvider({ provider: { metadata: { name: "llm" }, type: "openai", credentials: { API_KEY: first }, config: { REGION: "eu" } }, workspaceScope });
    await admin.createSandbox({ name: "dev", spec: { policy: boundPolicy("llm"), providers: ["llm"], template: { image: "ghcr.io/example/agent:1" } }, workspaceScope });
    sup = connectSupervisorDouble(gw);
    await sup.ready;

    const accepted = sup.received.find((m) => m.payload.case === "sessionAccepted");
    const boot = accepted?.payload.case === "sessionAccepted" ? accepted.payload.value.bootstrap?.providerEnvironment : undefined;
    expect(boot).toBeDefined();
    expect(boot!.readinessReason).toBe(ProviderReadinessReason.UNSPECIFIED);
    expect(byName(boot!).API_KEY).toMatchObject({
      value: first,
      classification: Classification.STATIC_CREDENTIAL,
      staticCredentialBinding: { endpoints: [{ host: "api.openai.com", port: 443, path: "/v1/**" }, { host: "api.openai.com", port: 8443, path: "/v1/**" }], credentialIdentity: "llm:API_KEY" },
    });
    expect(byName(boot!).REGION).toMatchObject({ value: "eu", classification: Classification.NON_SECRET });
    expect(byName(boot!).REGION?.staticCredentialBinding).toBeUndefined();

    const providerUpdates = () => sup!.updates.flatMap((u) => (u.component.case === "providerEnvironment" ? [u.component.value] : []));
    await admin.updateProvider({ provider: { metadata: { name: "llm" }, credentials: { API_KEY: rotated }, config: { REGION: "eu" } }, workspaceScope });
    await expect.poll(() => providerUpdates().some((p) => byName(p).API_KEY?.value === rotated)).toBe(true);
    const afterRotation = providerUpdates().find((p) => byName(p).API_KEY?.value === rotated)!;
    expect(afterRotation.providerEnvRevision).toBe(boot!.providerEnvRevision + 1n);
    expect(byName(afterRotation).API_KEY?.staticCredentialBinding?.credentialIdentity).toBe("llm:API_KEY");

    // A policy without the binding: the same credential is sent again as a plain secret.
    const res = await gw.sdk().updatePolicy({ sandbox: "dev", policy: boundPolicy(undefined), wait: { timeoutMs: 5_000 } });
    expect(res.completion.state).toBe("applied");
    await expect.poll(() => providerUpdates().some((p) => byName(p).API_KEY?.classification === Classification.UNSPECIFIED)).toBe(true);
    const unbound = providerUpdates().find((p) => byName(p).API_KEY?.classification === Classification.UNSPECIFIED)!;
    expect(byName(unbound).API_KEY?.staticCredentialBinding).toBeUndefined();
    expect(unbound.policyHash).not.toBe(afterRotation.policyHash);

    const logs = gw.logs();
    expect(logs.length).toBeGreaterThan(0);
    for (const secret of [first, rotated]) expect(logs.includes(secret), "a provider secret in the gateway's log").toBe(false);
  });
});
