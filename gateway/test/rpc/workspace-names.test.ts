// Workspace names have one form (issue 29, finding 8): a DNS label, 1-63 of [a-z0-9-], starting
// and ending with a letter or digit. A review created workspaces "../../etc" and an HTML/SQL
// string; now every RPC that takes a workspace_scope refuses such a name INVALID_ARGUMENT naming
// the field, before anything is read or stored, and so does the auth file. The names the SDK, the
// CLI and the tests use stay valid.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { workspaceScope } from "openshell-config/raw";
import { AuthFileError, parseAuthFile } from "../../src/auth/auth-file.js";
import { startTestGateway, type TestGateway } from "./harness.js";
import { createSandbox, dumpState, policy, rpcError } from "./fixtures.js";

let gw: TestGateway;
let operationId: string;
beforeAll(async () => {
  gw = await startTestGateway();
  await createSandbox(gw, "dev");
  operationId = (await gw.raw("admin").updateConfig({ sandbox: "dev", policy: policy({ a: "a.example.com" }), workspaceScope: workspaceScope() })).operation!.operationId;
});
afterAll(() => gw.close());

const BAD = ["../../etc", "<script>alert(1)</script>", "x'; DROP TABLE sandboxes; --", "Team-A", "team_a", "-team", "team-", "a".repeat(64), "ws a", "wé"];

const RPCS = [
  "CreateSandbox", "GetSandbox", "ListSandboxes", "StopSandbox", "StartSandbox", "DeleteSandbox", "UpdateConfig", "GetConfigUpdateOperation",
  "ListConfigUpdateOperations", "GetSandboxConfig", "GetSandboxPolicyStatus", "ListSandboxPolicies", "CreateProvider", "UpdateProvider",
  "WatchConfigUpdateOperations",
];

/** Every request that takes a workspace_scope naming one workspace, as the platform admin (who may see any workspace). */
function scoped(workspace: string): Record<string, () => Promise<unknown>> {
  const root = gw.raw("platform");
  const ws = workspaceScope(workspace);
  return {
    CreateSandbox: () => root.createSandbox({ name: "fresh", spec: { policy: policy() }, workspaceScope: ws }),
    GetSandbox: () => root.getSandbox({ name: "dev", workspaceScope: ws }),
    ListSandboxes: () => root.listSandboxes({ workspaceScope: ws }),
    StopSandbox: () => root.stopSandbox({ name: "dev", workspaceScope: ws }),
    StartSandbox: () => root.startSandbox({ name: "dev", workspaceScope: ws }),
    DeleteSandbox: () => root.deleteSandbox({ name: "dev", workspaceScope: ws }),
    UpdateConfig: () => root.updateConfig({ sandbox: "dev", policy: policy({ b: "b.example.com" }), workspaceScope: ws }),
    GetConfigUpdateOperation: () => root.getConfigUpdateOperation({ operationId, workspaceScope: ws }),
    ListConfigUpdateOperations: () => root.listConfigUpdateOperations({ sandbox: "dev", workspaceScope: ws }),
    GetSandboxConfig: () => root.getSandboxConfig({ name: "dev", workspaceScope: ws }),
    GetSandboxPolicyStatus: () => root.getSandboxPolicyStatus({ sandbox: "dev", workspaceScope: ws }),
    ListSandboxPolicies: () => root.listSandboxPolicies({ sandbox: "dev", workspaceScope: ws }),
    CreateProvider: () => root.createProvider({ provider: { metadata: { name: "llm" }, type: "openai" }, workspaceScope: ws }),
    UpdateProvider: () => root.updateProvider({ provider: { metadata: { name: "llm" }, type: "openai" }, workspaceScope: ws }),
    WatchConfigUpdateOperations: async () => {
      for await (const m of root.watchConfigUpdateOperations({ operationIds: [operationId], workspaceScope: ws })) return m;
      return undefined;
    },
  };
}

describe("workspace names", () => {
  it("CreateSandbox in workspace \"../../etc\" or one named by markup or SQL is INVALID_ARGUMENT naming the field, and creates nothing", async () => {
    for (const name of BAD) {
      const before = await dumpState(gw);
      const err = await rpcError(scoped(name).CreateSandbox!());
      expect(err.code, name).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toBe(
        `workspace_scope.workspace ${JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name)} is not a workspace name: 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit`,
      );
      expect(await dumpState(gw)).toBe(before);
    }
  });

  it("the list covers every call above", () => {
    expect(Object.keys(scoped("default")).sort()).toEqual([...RPCS].sort());
  });

  it.each(RPCS)("%s refuses a workspace that is not a name, before reading or storing anything", async (rpc) => {
    const before = await dumpState(gw);
    const err = await rpcError(scoped("../../etc")[rpc]!());
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toMatch(/^workspace_scope\.workspace "\.\.\/\.\.\/etc" is not a workspace name/);
    expect(await dumpState(gw)).toBe(before);
  });

  it("the names in use stay valid: default, team-a, ws-a, a single letter and 63 characters", async () => {
    for (const name of ["default", "team-a", "ws-a", "b", "0", `a${"-".repeat(61)}z`]) {
      const res = await gw.raw("platform").createSandbox({ name: "ok", spec: { policy: policy() }, workspaceScope: workspaceScope(name) });
      expect(res.sandbox?.metadata?.workspace).toBe(name);
    }
  });

  it("an auth file whose workspaces list or supervisor workspace is not a name is refused naming the entry", () => {
    const fail = (json: unknown) => {
      try {
        parseAuthFile(json, "auth.json");
      } catch (err) {
        expect(err).toBeInstanceOf(AuthFileError);
        return (err as Error).message;
      }
      throw new Error("accepted");
    };
    expect(fail({ tokens: [{ token: "t".repeat(24), principal: "p", role: "user", workspaces: ["default", "../../etc"] }] })).toBe(
      `auth.json: tokens[0].workspaces[1]: "../../etc" is not a workspace name (1-63 lowercase letters, digits or '-', starting and ending with a letter or digit)`,
    );
    expect(fail({ tokens: [{ token: "t".repeat(24), principal: "s", role: "supervisor", workspace: "Team A", sandbox: "dev" }] })).toMatch(
      /^auth\.json: tokens\[0\]\.workspace: "Team A" is not a workspace name/,
    );
    expect(parseAuthFile({ tokens: [{ token: "t".repeat(24), principal: "p", role: "user", workspaces: ["default", "team-a"] }] }).entries).toHaveLength(1);
  });
});
