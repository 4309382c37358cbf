// Who may call what: bearer tokens, roles (user, admin, platform admin, supervisor), workspace
// isolation that reports other workspaces' resources as not found, and secrets (tokens,
// provider credentials) that never reach logs or responses.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toJsonString } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { createConfigClient, PermissionDeniedError } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, ProviderResponseSchema, ServiceStatus, workspaceScope } from "openshell-config/raw";
import { startTestGateway, TOKENS, type TestGateway } from "./harness.js";
import { createSandbox, dumpState, policy, rpcError } from "./fixtures.js";

let gw: TestGateway;
let operationId: string;
beforeAll(async () => {
  gw = await startTestGateway();
  await createSandbox(gw, "dev");
  await createSandbox(gw, "other");
  operationId = (await gw.raw("admin").updateConfig({ sandbox: "dev", policy: policy({ a: "a.example.com" }), workspaceScope: workspaceScope() })).operation!.operationId;
});
afterAll(() => gw.close());

const withToken = (token: string) =>
  createConfigClient({ transport: createNodeTransport({ baseUrl: gw.url, protocol: "grpc" }), token }).raw(OpenShell);

describe("authentication", () => {
  it("no token is UNAUTHENTICATED", async () => {
    const err = await rpcError(gw.raw().getSandbox({ name: "dev", workspaceScope: workspaceScope() }));
    expect(err.code).toBe(Code.Unauthenticated);
  });

  it("an unknown token is UNAUTHENTICATED and changes nothing", async () => {
    const before = await dumpState(gw);
    const err = await rpcError(withToken("not-a-real-token-0123456789").updateConfig({ sandbox: "dev", policy: policy({ b: "b.example.com" }), workspaceScope: workspaceScope() }));
    expect(err.code).toBe(Code.Unauthenticated);
    expect(await dumpState(gw)).toBe(before);
  });

  it("Health works without a token", async () => {
    const res = await gw.raw().health({});
    expect(res.status).toBe(ServiceStatus.HEALTHY);
  });
});

describe("roles", () => {
  it("a user cannot UpdateConfig (PERMISSION_DENIED, nothing changed) but can read", async () => {
    const before = await dumpState(gw);
    const err = await gw.sdk("user").updatePolicy({ sandbox: "dev", policy: policy({ c: "c.example.com" }) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PermissionDeniedError);
    expect(await dumpState(gw)).toBe(before);
    const user = gw.raw("user");
    expect((await user.getSandbox({ name: "dev", workspaceScope: workspaceScope() })).sandbox?.metadata?.name).toBe("dev");
    expect((await user.getSandboxConfig({ name: "dev", workspaceScope: workspaceScope() })).version).toBe(2);
    expect((await user.listSandboxPolicies({ sandbox: "dev", workspaceScope: workspaceScope() })).revisions).toHaveLength(2);
    expect((await user.getConfigUpdateOperation({ operationId, workspaceScope: workspaceScope() })).operation?.operationId).toBe(operationId);
    expect((await gw.sdk("user").getOperation({ operationId })).state).toBe("pending");
  });

  it("an admin of team-b sees nothing of the default workspace: NOT_FOUND, nothing changed", async () => {
    const carol = gw.raw("otherAdmin");
    const before = await dumpState(gw);
    const calls = [
      () => carol.getSandbox({ name: "dev", workspaceScope: workspaceScope() }),
      () => carol.updateConfig({ sandbox: "dev", policy: policy({ d: "d.example.com" }), workspaceScope: workspaceScope() }),
      () => carol.getSandboxConfig({ name: "dev", workspaceScope: workspaceScope() }),
      () => carol.stopSandbox({ name: "dev", workspaceScope: workspaceScope() }),
      () => carol.deleteSandbox({ name: "dev", workspaceScope: workspaceScope() }),
      () => carol.getConfigUpdateOperation({ operationId, workspaceScope: workspaceScope() }),
    ];
    for (const call of calls) {
      const err = await rpcError(call());
      expect(Code[err.code]).toBe(Code[Code.NotFound]);
    }
    expect(await dumpState(gw)).toBe(before);
  });

  it("a supervisor token reads only its own sandbox's config, with or without a workspace scope, and is denied user RPCs", async () => {
    const sup = gw.raw("supervisor");
    // Upstream, the scope is optional for sandbox callers reading their configuration (bootstrap).
    const own = await sup.getSandboxConfig({});
    expect(own.version).toBe(2);
    expect(own.workspace).toBe("default");
    expect((await sup.getSandboxConfig({ name: "dev" })).policyHash).toBe(own.policyHash);
    expect((await sup.getSandboxConfig({ name: "dev", workspaceScope: workspaceScope() })).policyHash).toBe(own.policyHash);
    expect((await rpcError(sup.getSandboxConfig({ name: "other" }))).code).toBe(Code.NotFound);
    const before = await dumpState(gw);
    const denied = [
      () => sup.getSandbox({ name: "dev", workspaceScope: workspaceScope() }),
      () => sup.listSandboxes({ workspaceScope: workspaceScope() }),
      () => sup.updateConfig({ sandbox: "dev", policy: policy({ e: "e.example.com" }), workspaceScope: workspaceScope() }),
      () => sup.getConfigUpdateOperation({ operationId, workspaceScope: workspaceScope() }),
      () => sup.stopSandbox({ name: "dev", workspaceScope: workspaceScope() }),
      () => sup.listSandboxPolicies({ sandbox: "dev", workspaceScope: workspaceScope() }),
    ];
    for (const call of denied) expect((await rpcError(call())).code).toBe(Code.PermissionDenied);
    expect(await dumpState(gw)).toBe(before);
  });

  it("global updates need the platform admin; they return no operation", async () => {
    const global = { global: true, settingKey: "telemetry", settingValue: { value: { case: "boolValue" as const, value: false } } };
    const before = await dumpState(gw);
    for (const who of ["admin", "user"] as const) {
      expect((await rpcError(gw.raw(who).updateConfig(global))).code).toBe(Code.PermissionDenied);
    }
    expect(await dumpState(gw)).toBe(before);
    const res = await gw.raw("platform").updateConfig(global);
    expect(res.operation).toBeUndefined();
    expect(res.settingsRevision).toBe(1n);
    const config = await gw.raw("user").getGatewayConfig({});
    expect(config.settingsRevision).toBe(1n);
    expect(config.settings["telemetry"]?.value).toEqual({ case: "boolValue", value: false });
  });
});

describe("secrets", () => {
  const SECRET_1 = "sk-live-first-credential-4f9a1c";
  const SECRET_2 = "sk-live-second-credential-8b2e7d";

  it("provider credentials and tokens never reach logs or responses; a provider change bumps provider_env_revision", async () => {
    const admin = gw.raw("admin");
    const created = await admin.createProvider({
      provider: { metadata: { name: "openai" }, type: "openai", credentials: { OPENAI_API_KEY: SECRET_1 }, config: { OPENAI_REGION: "eu" } },
      workspaceScope: workspaceScope(),
    });
    await admin.createSandbox({ name: "with-provider", spec: { policy: policy(), providers: ["openai"] }, workspaceScope: workspaceScope() });
    const config = () => gw.raw("admin").getSandboxConfig({ name: "with-provider", workspaceScope: workspaceScope() });
    const before = await config();

    const updated = await admin.updateProvider({
      provider: { metadata: { name: "openai" }, credentials: { OPENAI_API_KEY: SECRET_2 }, config: { OPENAI_REGION: "us" } },
      workspaceScope: workspaceScope(),
    });
    const after = await config();
    expect(after.providerEnvRevision).toBe(before.providerEnvRevision + 1n);
    expect((await gw.raw("admin").getSandboxConfig({ name: "dev", workspaceScope: workspaceScope() })).providerEnvRevision).toBe(1n);

    for (const res of [created, updated]) {
      const json = toJsonString(ProviderResponseSchema, res);
      expect(json).not.toContain(SECRET_1);
      expect(json).not.toContain(SECRET_2);
      expect(Object.keys(res.provider!.credentials)).toEqual(["OPENAI_API_KEY"]);
    }
    expect(updated.provider?.config).toEqual({ OPENAI_REGION: "us" });

    // Failed calls log too; make sure they are part of what is checked.
    await rpcError(withToken("not-a-real-token-0123456789").getSandbox({ name: "dev", workspaceScope: workspaceScope() }));
    await rpcError(admin.createProvider({ provider: { metadata: { name: "openai" }, credentials: { OPENAI_API_KEY: SECRET_1 } }, workspaceScope: workspaceScope() }));
    const logs = gw.logs();
    expect(logs).toContain("provider updated");
    for (const secret of [SECRET_1, SECRET_2, ...Object.values(TOKENS), "not-a-real-token-0123456789"]) {
      expect(logs).not.toContain(secret);
    }
  });

  it("a duplicate provider is ALREADY_EXISTS; updating an unknown one is NOT_FOUND", async () => {
    await gw.raw("admin").createProvider({ provider: { metadata: { name: "dup" }, type: "x" }, workspaceScope: workspaceScope() });
    expect((await rpcError(gw.raw("admin").createProvider({ provider: { metadata: { name: "dup" }, type: "x" }, workspaceScope: workspaceScope() }))).code).toBe(Code.AlreadyExists);
    expect((await rpcError(gw.raw("admin").updateProvider({ provider: { metadata: { name: "nope" }, type: "x" }, workspaceScope: workspaceScope() }))).code).toBe(Code.NotFound);
  });
});
