// Isolation: every principal kind (user, admin, platform admin and user, supervisors of an
// existing, another workspace's and a missing sandbox, no token, a forged token) calls every RPC
// against sandboxes in three workspaces. What a small model of the rules forbids fails as
// UNAUTHENTICATED, PERMISSION_DENIED or NOT_FOUND and changes no stored row; what it allows
// succeeds, so the matrix cannot pass by denying everything. Afterwards the logs, every stored
// row and the database's bytes are scanned for each token and provider secret used.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toJsonString, type DescMessage } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { OpenShell, PolicyStatus, RolloutRecordPhase } from "openshell-config/raw";
import { policy } from "../rpc/fixtures.js";
import { PRINCIPALS, startReliabilityGateway, type Backend, type ReliabilityGateway, type Who } from "./reliability-gateway.js";
import { createTally, outcomeName, settle } from "./property-support.js";

type Rpc = (typeof OpenShell.methods)[number]["name"];
const TARGETS = [
  { workspace: "default", sandbox: "dev" },
  { workspace: "team-a", sandbox: "alpha" },
  { workspace: "team-b", sandbox: "build" },
] as const;
type Target = (typeof TARGETS)[number];
const WHO: Who[] = [...(Object.keys(PRINCIPALS) as (keyof typeof PRINCIPALS)[]), "anonymous", "forged"];

const USER_RPCS = new Set<Rpc>(["CreateSandbox", "GetSandbox", "ListSandboxes", "StopSandbox", "StartSandbox", "DeleteSandbox", "GetConfigUpdateOperation", "WatchConfigUpdateOperations", "ListConfigUpdateOperations", "GetSandboxConfig", "GetSandboxPolicyStatus", "ListSandboxPolicies", "GetRollout", "ListRollouts", "WatchRollouts"]);
const ADMIN_RPCS = new Set<Rpc>([...USER_RPCS, "UpdateConfig", "CreateProvider", "UpdateProvider", "CreateRollout", "UpdateRollout", "ApproveRollout"]);
const SUPERVISOR_RPCS = new Set<Rpc>(["GetSandboxConfig", "ReportPolicyStatus", "ConnectSupervisor"]);

/** The rules, as a table: may `who` call `rpc` on `t`? */
function allowed(who: Who, rpc: Rpc, t: Target): boolean {
  if (who === "anonymous" || who === "forged") return false;
  const p = PRINCIPALS[who];
  if (p.role === "supervisor") return SUPERVISOR_RPCS.has(rpc) && p.workspace === t.workspace && p.sandbox === t.sandbox;
  // Global settings are not in any workspace: every user and admin may read them.
  if (rpc === "GetGatewayConfig") return true;
  const sees = p.workspaces === "*" || (p.workspaces as readonly string[]).includes(t.workspace);
  return sees && (p.role === "admin" ? ADMIN_RPCS : USER_RPCS).has(rpc);
}

const scope = (t: Target) => ({ workspaceScope: { selection: { case: "workspace" as const, value: t.workspace } } });

/** A shared rollout record paused for an approval of its second wave, as a driver creates it. */
function pausedRollout(id: string) {
  return {
    id,
    changeSummary: "policy",
    summary: { phase: RolloutRecordPhase.PAUSED, wavesTotal: 2, wavesDone: 1, targets: 2, awaitingApproval: true },
    request: { policy: policy({ r: "r.example.com" }) },
    stateJson: JSON.stringify({ kind: "openshell-config/rollout@2", id, phase: "paused" }),
  };
}

describe.each<Backend>(["sqlite", "postgres"])("isolation matrix (%s)", (backend) => {
  let gw: ReliabilityGateway;
  const operations = new Map<string, string>();
  /** Every provider secret value sent, with its workspace; `live` until an update replaced it. */
  const secrets = new Map<string, { workspace: string; live: boolean }>();
  const responses: { rpc: Rpc; workspace: string; json: string }[] = [];
  const tally = createTally(`isolation matrix (${backend})`);
  let cell = 0;

  beforeAll(async () => {
    gw = await startReliabilityGateway(backend, { waitDefaultMs: 5, waitMaxMs: 20 });
    const root = gw.client("platform");
    for (const t of TARGETS) {
      const secret = `sk-${t.workspace}-${Math.random().toString(36).slice(2)}-secret`;
      secrets.set(secret, { workspace: t.workspace, live: true });
      await root.createProvider({ provider: { metadata: { name: "llm" }, type: "openai", credentials: { API_KEY: secret }, config: { REGION: "eu" } }, ...scope(t) });
      await root.createSandbox({ name: t.sandbox, spec: { policy: policy(), providers: ["llm"] }, ...scope(t) });
      const res = await root.updateConfig({ sandbox: t.sandbox, policy: policy({ a: "a.example.com" }), ...scope(t) });
      operations.set(t.sandbox, res.operation!.operationId);
      await root.createRollout({ rollout: pausedRollout("iso"), driver: "setup", ...scope(t) });
      await root.updateRollout({ id: "iso", expectedResourceVersion: 1n, driver: "setup", releaseLease: true, ...scope(t) });
    }
  });
  afterAll(async () => {
    console.log(tally.report());
    await gw?.close();
  });

  /** Calls `rpc` as `who` on `t`: the real target when denied, a harmless twin when allowed. */
  async function call(who: Who, rpc: Rpc, t: Target, permitted: boolean): Promise<unknown> {
    const c = gw.client(who);
    const n = ++cell;
    const name = t.sandbox;
    switch (rpc) {
      case "Health":
        return c.health({});
      case "CreateSandbox":
        return c.createSandbox({ name: `made-${n}`, spec: { policy: policy() }, ...scope(t) });
      case "GetSandbox":
        return c.getSandbox({ name, ...scope(t) });
      case "ListSandboxes": {
        const res = await c.listSandboxes({ ...scope(t) });
        for (const sb of res.sandboxes) expect(sb.metadata?.workspace ?? t.workspace).toBe(t.workspace);
        return res;
      }
      case "StopSandbox":
        return c.stopSandbox({ name, ...scope(t) });
      case "StartSandbox":
        return c.startSandbox({ name, ...scope(t) });
      case "DeleteSandbox": {
        // Allowed deletes remove a twin, so that later cells still find the real sandbox.
        const victim = permitted ? `victim-${n}` : name;
        if (permitted) await gw.client("platform").createSandbox({ name: victim, spec: { policy: policy() }, ...scope(t) });
        return c.deleteSandbox({ name: victim, ...scope(t) });
      }
      case "UpdateConfig":
        return c.updateConfig({ sandbox: name, settingKey: "iso", settingValue: { value: { case: "stringValue", value: `v${n}` } }, ...scope(t) });
      case "GetConfigUpdateOperation":
        return c.getConfigUpdateOperation({ operationId: operations.get(name)!, ...scope(t) });
      case "WatchConfigUpdateOperations": {
        const abort = new AbortController();
        for await (const m of c.watchConfigUpdateOperations({ operationIds: [operations.get(name)!], ...scope(t) }, { signal: abort.signal })) {
          abort.abort();
          return m;
        }
        return undefined;
      }
      case "ListConfigUpdateOperations":
        return c.listConfigUpdateOperations({ sandbox: name, ...scope(t) });
      case "GetSandboxConfig":
        return c.getSandboxConfig({ name, ...scope(t) });
      case "GetGatewayConfig":
        return c.getGatewayConfig({});
      case "GetSandboxPolicyStatus":
        return c.getSandboxPolicyStatus({ sandbox: name, ...scope(t) });
      case "ListSandboxPolicies":
        return c.listSandboxPolicies({ sandbox: name, ...scope(t) });
      case "CreateProvider": {
        const secret = `created-secret-${n}-${Math.random().toString(36).slice(2)}`;
        secrets.set(secret, { workspace: t.workspace, live: permitted });
        return c.createProvider({ provider: { metadata: { name: `prov-${n}` }, type: "x", credentials: { K: secret } }, ...scope(t) });
      }
      case "UpdateProvider": {
        const secret = `rotated-secret-${n}-${Math.random().toString(36).slice(2)}`;
        secrets.set(secret, { workspace: t.workspace, live: false });
        const res = await c.updateProvider({ provider: { metadata: { name: "llm" }, credentials: { API_KEY: secret }, config: { REGION: "us" } }, ...scope(t) });
        // The value it replaced no longer needs to be stored anywhere.
        for (const [value, s] of secrets) if (s.workspace === t.workspace && !value.startsWith("created-")) s.live = false;
        secrets.set(secret, { workspace: t.workspace, live: true });
        return res;
      }
      case "CreateRollout":
        return c.createRollout({ rollout: pausedRollout(`made-${n}`), driver: `iso-${n}`, ...scope(t) });
      case "GetRollout":
        return c.getRollout({ id: "iso", ...scope(t) });
      case "ListRollouts": {
        const res = await c.listRollouts({ ...scope(t) });
        for (const r of res.rollouts) expect(r.workspace).toBe(t.workspace);
        return res;
      }
      case "WatchRollouts": {
        const abort = new AbortController();
        for await (const m of c.watchRollouts({ id: "iso", ...scope(t) }, { signal: abort.signal })) {
          abort.abort();
          return m;
        }
        return undefined;
      }
      case "UpdateRollout": {
        // Taking and giving back the lease of the shared "iso" (no state): allowed calls leave it as it was.
        const current = await gw.client("platform").getRollout({ id: "iso", ...scope(t) });
        return c.updateRollout({ id: "iso", expectedResourceVersion: current.rollout!.resourceVersion, driver: `iso-${n}`, releaseLease: true, ...scope(t) });
      }
      case "ApproveRollout": {
        // Allowed approvals approve a twin, so that later cells still find "iso" waiting.
        const id = permitted ? `twin-${n}` : "iso";
        if (permitted) await gw.client("platform").createRollout({ rollout: pausedRollout(id), driver: "setup", ...scope(t) });
        return c.approveRollout({ id, wave: 1, ...scope(t) });
      }
      case "ReportPolicyStatus":
        return c.reportPolicyStatus({ sandboxId: name, version: 1, status: PolicyStatus.LOADED });
      case "ConnectSupervisor": {
        const abort = new AbortController();
        async function* hello() {
          yield { payload: { case: "hello" as const, value: { sandboxId: name, instanceId: "iso", supportsConfigSnapshots: true, supportsConfigApply: true } } };
          await new Promise((r) => abort.signal.addEventListener("abort", r));
        }
        for await (const m of c.connectSupervisor(hello(), { signal: abort.signal })) {
          abort.abort();
          return m;
        }
        return undefined;
      }
    }
  }

  const rpcs = OpenShell.methods.map((m) => m.name).filter((n) => n !== "Health") as Rpc[];

  it("every principal reaches exactly what the rules allow on every RPC; a denied call changes no stored row", async () => {
    let denied = 0;
    let allowedCalls = 0;
    for (const rpc of rpcs) {
      for (const who of WHO) {
        for (const t of TARGETS) {
          const permitted = allowed(who, rpc, t);
          const before = permitted ? "" : await gw.dumpTables();
          let response: unknown;
          const err = await settle(
            (async () => {
              response = await call(who, rpc, t, permitted);
            })(),
          );
          tally.count(outcomeName(err));
          const what = `${who} ${rpc} ${t.workspace}/${t.sandbox}`;
          if (permitted) {
            expect(err, `${what} should be allowed: ${err?.rawMessage}`).toBeUndefined();
            allowedCalls++;
            if (response && typeof response === "object" && "$typeName" in response) {
              const schema = [...OpenShell.methods].find((m) => m.name === rpc)!.output as DescMessage;
              responses.push({ rpc, workspace: t.workspace, json: toJsonString(schema, response as never) });
            }
          } else {
            expect(err, `${what} should be denied`).toBeDefined();
            expect([Code[Code.Unauthenticated], Code[Code.PermissionDenied], Code[Code.NotFound]], `${what}: ${err!.rawMessage}`).toContain(Code[err!.code]);
            expect(await gw.dumpTables(), `${what} changed stored rows`).toBe(before);
            denied++;
          }
        }
      }
    }
    expect(denied).toBeGreaterThan(300);
    expect(allowedCalls).toBeGreaterThan(60);
    // Global configuration: the platform admin only.
    for (const who of WHO) {
      const before = await gw.dumpTables();
      const err = await settle(gw.client(who).updateConfig({ global: true, settingKey: "g", settingValue: { value: { case: "boolValue", value: true } } }));
      tally.count(outcomeName(err));
      if (who === "platform") expect(err).toBeUndefined();
      else {
        expect([Code.Unauthenticated, Code.PermissionDenied]).toContain(err?.code);
        expect(await gw.dumpTables()).toBe(before);
      }
    }
  }, 120_000);

  it("no token and no provider secret appears in logs, responses or stored rows; tokens appear nowhere in the database's bytes", async () => {
    const tokens = Object.values(gw.tokens);
    const logs = gw.logs();
    expect(logs.length).toBeGreaterThan(1000);
    const tables = await gw.dumpTables();
    const outsideProviders = tables.split("\n## ").filter((section) => !section.startsWith("providers\n")).join("\n## ");
    const fileBytes = gw.databaseFileBytes();
    expect(secrets.size).toBeGreaterThan(6);
    for (const token of tokens) {
      expect(logs.includes(token), "a token in the logs").toBe(false);
      expect(responses.filter((r) => r.json.includes(token)).map((r) => r.rpc), "a token in a response").toEqual([]);
      expect(tables.includes(token), "a token in a stored row").toBe(false);
      expect(fileBytes.includes(token), "a token in the database file").toBe(false);
    }
    for (const [value, { workspace, live }] of secrets) {
      expect(logs.includes(value), "a provider secret in the logs").toBe(false);
      expect(outsideProviders.includes(value), "a provider secret in a row outside the providers table").toBe(false);
      // Only a supervisor's own stream carries its workspace's provider environment, by design.
      const leaks = responses.filter((r) => r.json.includes(value) && !(r.rpc === "ConnectSupervisor" && r.workspace === workspace));
      expect(leaks.map((r) => `${r.rpc} ${r.workspace}`), "a provider secret in a response").toEqual([]);
      // Replaced or refused credentials leave no row behind; live ones only the providers table.
      expect(tables.includes(value), `${live ? "live" : "replaced"} secret stored`).toBe(live);
    }
  });
});
