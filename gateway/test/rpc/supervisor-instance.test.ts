// A deleted and re-created sandbox is a new instance (issue 29, finding 2), through a real gateway
// in this process on SQLite and PostgreSQL: the review's scenario with scripted supervisors, a new
// instance served by a credential of its own, the binding kept across a gateway restart, a
// session that never switches instance, and who created and deleted each instance.

import { createHash, randomBytes } from "node:crypto";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createNodeTransport } from "openshell-config/transport/node";
import { createConfigClient } from "openshell-config";
import { OpenShell, PolicyStatus, SandboxPhase, workspaceScope, type GatewayMessage } from "openshell-config/raw";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseAuthFile } from "../../src/auth/auth-file.js";
import { connectSupervisorDouble, type SupervisorDouble } from "../delivery/supervisor-double.js";
import { policy } from "./fixtures.js";
import { startTestGateway, TOKENS, type Backend, type TestGateway } from "./harness.js";

const SUP = { old: `sup-b-${randomBytes(16).toString("hex")}`, fresh: `sup-b-new-${randomBytes(16).toString("hex")}` };
const AUTH = parseAuthFile({
  tokens: [
    { token: TOKENS.admin, principal: "alice", role: "admin", workspaces: ["default", "team-a"] },
    { token: TOKENS.user, principal: "bob", role: "user", workspaces: ["default"] },
    { token: SUP.old, principal: "supervisor:b", role: "supervisor", workspace: "default", sandbox: "b" },
    { token: SUP.fresh, principal: "supervisor:b-new", role: "supervisor", workspace: "default", sandbox: "b" },
  ],
});
const scope = workspaceScope();
const benign = () => policy({ github: "api.github.com" });
/** The review's policy: the whole filesystem writable, root, and egress to the attacker's host. */
function attacker(hosts: Record<string, string> = { exfil: "attacker.example" }): ReturnType<typeof policy> {
  return {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: [], readWrite: ["/"] },
    process: { runAsUser: "root", runAsGroup: "root" },
    networkPolicies: Object.fromEntries(Object.entries(hosts).map(([name, host]) => [name, { name, endpoints: [{ host, ports: [443] }] }])),
  };
}

/** A scripted supervisor with `token` (or none, for --no-auth) naming `sandboxId` in its hello. */
function supervisor(gw: TestGateway, token: string | undefined, sandboxId = "b"): SupervisorDouble {
  const transport = createNodeTransport({ baseUrl: gw.url, protocol: "grpc" });
  const raw = token === undefined ? createClient(OpenShell, transport) : createConfigClient({ transport, token }).raw(OpenShell);
  return connectSupervisorDouble({ raw: () => raw } as unknown as TestGateway, { hello: { sandboxId } });
}

/** Every network rule host in what a supervisor received (bootstrap and updates). */
function hostsReceived(messages: readonly GatewayMessage[]): string[] {
  const snapshots = messages.flatMap((m) =>
    m.payload.case === "sessionAccepted"
      ? [m.payload.value.bootstrap?.sandboxConfig]
      : m.payload.case === "configUpdate" && m.payload.value.component.case === "sandboxConfig"
        ? [m.payload.value.component.value]
        : [],
  );
  return snapshots.flatMap((s) => Object.values(s?.policy?.networkPolicies ?? {}).flatMap((r) => r.endpoints.map((e) => e.host)));
}

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");
const gone = (id: string) => `the sandbox "b" this supervisor served (id ${id}) was deleted; a new instance needs its own credential`;

describe.each<Backend>(["sqlite", "postgres"])("a deleted and re-created sandbox (%s)", (backend) => {
  let gw: TestGateway;
  const doubles: SupervisorDouble[] = [];
  const connect = (token: string | undefined, sandboxId?: string) => {
    const d = supervisor(gw, token, sandboxId);
    doubles.push(d);
    return d;
  };
  const user = () => gw.raw("user");
  const create = async (p: ReturnType<typeof policy>) => (await user().createSandbox({ name: "b", spec: { policy: p }, workspaceScope: scope })).sandbox!.metadata!.id;

  beforeEach(async () => {
    gw = await startTestGateway(backend, { auth: AUTH });
  });
  afterEach(async () => {
    for (const d of doubles.splice(0)) d.close();
    await gw.close();
  });

  it("the old supervisor's session ends with the deletion, its reconnect is refused naming the deleted instance, and it never receives the new policy", async () => {
    const first = await create(benign());
    const old = connect(SUP.old);
    await old.ready;
    await user().deleteSandbox({ name: "b", workspaceScope: scope });
    expect(ConnectError.from(await old.ended)).toMatchObject({ code: Code.NotFound, rawMessage: "sandbox no longer exists" });
    await create(attacker());
    const again = connect(SUP.old);
    const err = ConnectError.from(await again.ended);
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toContain(gone(first));
    expect(again.received).toEqual([]);
    expect(hostsReceived(old.received)).toEqual(["api.github.com"]);
    // Its other supervisor calls are refused too: it cannot read the new instance's configuration.
    const transport = createNodeTransport({ baseUrl: gw.url, protocol: "grpc" });
    const asOld = createConfigClient({ transport, token: SUP.old }).raw(OpenShell);
    await expect(asOld.getSandboxConfig({ name: "b" })).rejects.toMatchObject({ code: Code.PermissionDenied });
    await expect(asOld.reportPolicyStatus({ sandboxId: "b", version: 1, status: PolicyStatus.LOADED })).rejects.toMatchObject({ code: Code.PermissionDenied });
    expect((await user().getSandbox({ name: "b", workspaceScope: scope })).sandbox?.status?.phase).toBe(SandboxPhase.PROVISIONING);
  });

  it("a supervisor that names the deleted instance by id is refused with the same reason", async () => {
    const first = await create(benign());
    const old = connect(SUP.old, first);
    await old.ready;
    await user().deleteSandbox({ name: "b", workspaceScope: scope });
    await old.ended;
    await create(attacker());
    const err = ConnectError.from(await connect(SUP.old, first).ended);
    expect(err).toMatchObject({ code: Code.PermissionDenied });
    expect(err.rawMessage).toContain(gone(first));
  });

  it("the new instance is served by a supervisor with a credential of its own, also after a gateway restart, and the old credential stays refused", async () => {
    const first = await create(benign());
    const old = connect(SUP.old);
    await old.ready;
    await user().deleteSandbox({ name: "b", workspaceScope: scope });
    await old.ended;
    const second = await create(attacker());
    const fresh = connect(SUP.fresh);
    await fresh.ready;
    expect(hostsReceived(fresh.received)).toEqual(["attacker.example"]);
    await expect.poll(async () => (await user().getSandbox({ name: "b", workspaceScope: scope })).sandbox?.status?.phase).toBe(SandboxPhase.READY);
    fresh.close();
    await fresh.ended;

    await gw.restart();
    const refused = ConnectError.from(await connect(SUP.old).ended);
    expect(refused.code).toBe(Code.PermissionDenied);
    expect(refused.rawMessage).toContain(gone(first));
    const back = connect(SUP.fresh);
    await back.ready;
    expect(hostsReceived(back.received)).toEqual(["attacker.example"]);
    expect(await gw.store.supervisorBinding(`token-sha256:${sha256(SUP.fresh)}`)).toMatchObject({ sandboxId: second, sandboxName: "b", principal: "supervisor:b-new" });
  });

  it("a session accepted for one instance never receives another's snapshot, however fast the name is reused", async () => {
    await create(benign());
    const old = connect(SUP.old);
    await old.ready;
    // No waiting between the calls: the re-created sandbox and its commit race the old session's end.
    await user().deleteSandbox({ name: "b", workspaceScope: scope });
    await create(attacker());
    await gw.sdk("admin").updatePolicy({ sandbox: "b", policy: attacker({ more: "more.attacker.example" }) });
    expect(ConnectError.from(await old.ended).code).toBe(Code.NotFound);
    expect(hostsReceived(old.received)).toEqual(["api.github.com"]);
  });

  it("creating and deleting record and log who did it, and the record outlives the sandbox", async () => {
    const first = await create(benign());
    await user().deleteSandbox({ name: "b", workspaceScope: scope });
    const events = await gw.store.sandboxEvents(first);
    expect(events.map(({ event, workspace, name, principal }) => ({ event, workspace, name, principal }))).toEqual([
      { event: "created", workspace: "default", name: "b", principal: "bob" },
      { event: "deleted", workspace: "default", name: "b", principal: "bob" },
    ]);
    const lines = gw
      .logs()
      .split("\n")
      .filter((l) => l.includes(first))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l.msg === "sandbox created" || l.msg === "sandbox deleted").map((l) => [l.msg, l.principal])).toEqual([
      ["sandbox created", "bob"],
      ["sandbox deleted", "bob"],
    ]);
    expect(gw.logs()).not.toContain(TOKENS.user);
  });
});

describe.each<Backend>(["sqlite", "postgres"])("--no-auth and sandbox instances (%s)", (backend) => {
  let gw: TestGateway;
  const doubles: SupervisorDouble[] = [];
  beforeEach(async () => {
    gw = await startTestGateway(backend, { auth: undefined });
  });
  afterEach(async () => {
    for (const d of doubles.splice(0)) d.close();
    await gw.close();
  });

  it("a supervisor that names its instance by id is bound to it: once it is deleted the id is refused, not read as the new sandbox of the name", async () => {
    const raw = gw.raw();
    const first = (await raw.createSandbox({ name: "b", spec: { policy: benign() }, workspaceScope: scope })).sandbox!.metadata!.id;
    const old = supervisor(gw, undefined, first);
    doubles.push(old);
    await old.ready;
    await raw.deleteSandbox({ name: "b", workspaceScope: scope });
    await old.ended;
    await raw.createSandbox({ name: "b", spec: { policy: attacker() }, workspaceScope: scope });
    const again = supervisor(gw, undefined, first);
    doubles.push(again);
    const err = ConnectError.from(await again.ended);
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toContain(gone(first));
    expect(hostsReceived(old.received)).toEqual(["api.github.com"]);
    // A supervisor that names the sandbox by name follows the name: nothing identifies it.
    const byName = supervisor(gw, undefined, "b");
    doubles.push(byName);
    await byName.ready;
    expect(hostsReceived(byName.received)).toEqual(["attacker.example"]);
  });
});
