// A commit can never leave a configuration that no supervisor can receive (issue 29, finding 4).
// A review committed a 3.5 MiB policy under the 4 MiB request limit: it was stored (v2), its
// operation failed ("snapshot is larger than 3145728 bytes"), every later settings update failed
// with it, and a restarted supervisor got RESOURCE_EXHAUSTED on every reconnect. Now a change
// whose bootstrap (policy, settings and provider environment) would be over the supervisor's limit
// is RESOURCE_EXHAUSTED at commit, naming the size and the limit, and stores nothing; one that
// does not make it larger is never refused, so a configuration already too large can be repaired.

import { afterEach, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ConfigUpdateWaitMode, GatewayMessageSchema, SandboxPhase, SandboxPolicySchema, SettingValueSchema, workspaceScope, type GatewayMessage } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "./harness.js";
import { createSandbox, dumpState, policy, rpcError } from "./fixtures.js";
import { connectSupervisorDouble, type SupervisorDouble } from "../delivery/supervisor-double.js";
import { BOOTSTRAP_OVERHEAD, configurationBytes } from "../../src/operations/snapshot-cap.js";
import { POLICY_LOCK } from "../../src/store/postgres/pg-tx-cache.js";
import pg from "pg";

let gw: TestGateway | undefined;
const supervisors: SupervisorDouble[] = [];
afterEach(async () => {
  for (const s of supervisors.splice(0)) s.close();
  await gw?.close();
  gw = undefined;
});

function supervisor(g: TestGateway): SupervisorDouble {
  const s = connectSupervisorDouble(g);
  supervisors.push(s);
  return s;
}

/** A policy of `rules` network rules, each with a 60-character host: about 110 bytes a rule. */
function bigPolicy(rules: number) {
  const hosts: Record<string, string> = {};
  for (let i = 0; i < rules; i++) hosts[`r${i}`] = `h${String(i).padStart(8, "0")}.${"x".repeat(40)}.example.com`;
  return policy(hosts);
}

const ws = workspaceScope();
const setting = (key: string, value: string) => ({ sandbox: "dev", workspaceScope: ws, settingKey: key, settingValue: { value: { case: "stringValue" as const, value } } });
const TOO_LARGE = /^the sandbox configuration would be [\d.]+ [KM]iB \((\d+) bytes\) as a supervisor receives it, over the ([\d.]+ [KM]iB) \((\d+) bytes\) a supervisor accepts; nothing was committed$/;

/**
 * Another replica's global commit, under way on a connection of its own: it holds the global
 * scope's lock and has written a 5 KB global setting, not yet committed. The caller ends it.
 */
async function globalCommitUnderWay(g: TestGateway): Promise<pg.Client> {
  const other = new pg.Client({ connectionString: g.dbUrl });
  await other.connect();
  await other.query("BEGIN");
  await other.query(POLICY_LOCK("''"));
  const big = toBinary(SettingValueSchema, create(SettingValueSchema, { value: { case: "stringValue", value: "g".repeat(5_000) } }));
  await other.query("INSERT INTO settings (sandbox_id, key, value) VALUES ('', 'global_blob', $1)", [big]);
  return other;
}

/**
 * Starts `call` while another replica's 5 KB global setting is being committed: it must wait for
 * that commit, then be refused as too large, since the two together would not fit.
 */
async function expectRefusedOnceGlobalCommits(g: TestGateway, call: () => Promise<unknown>): Promise<void> {
  const other = await globalCommitUnderWay(g);
  try {
    let settled = false;
    const mine = rpcError(call()).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(settled).toBe(false);
    await other.query("COMMIT");
    const err = await mine;
    expect(err.code).toBe(Code.ResourceExhausted);
    expect(err.rawMessage).toMatch(TOO_LARGE);
  } finally {
    await other.end();
  }
}

function bootstrapOf(s: SupervisorDouble): GatewayMessage {
  return s.received.find((m) => m.payload.case === "sessionAccepted")!;
}

describe("the snapshot cap at commit", () => {
  it("a 3.5 MiB policy is refused at commit and stores nothing; settings updates still apply and a restarted supervisor bootstraps", async () => {
    gw = await startTestGateway();
    await createSandbox(gw, "dev");
    const first = supervisor(gw);
    await first.ready;
    // The bootstrap's result recorded (READY), so that nothing else changes the rows compared below.
    await expect.poll(async () => (await gw!.raw("admin").getSandbox({ name: "dev", workspaceScope: ws })).sandbox?.status?.phase).toBe(SandboxPhase.READY);
    const huge = bigPolicy(35_000);
    expect(toBinary(SandboxPolicySchema, create(SandboxPolicySchema, huge)).length).toBeGreaterThan(3.5 * 1024 * 1024);
    const before = await dumpState(gw);
    const err = await rpcError(
      gw.raw("admin").updateConfig({ sandbox: "dev", workspaceScope: ws, policy: huge, idempotencyKey: "big-1", waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION }),
    );
    expect(err.code).toBe(Code.ResourceExhausted);
    const m = TOO_LARGE.exec(err.rawMessage);
    expect(m, err.rawMessage).not.toBeNull();
    expect(Number(m![1])).toBeGreaterThan(3.5 * 1024 * 1024);
    expect(m![2]).toBe("3 MiB");
    expect(Number(m![3])).toBe(3 * 1024 * 1024);
    // No revision, no operation, no setting; and no idempotency record: the key is free for another payload.
    expect(await dumpState(gw)).toBe(before);
    const small = await gw.raw("admin").updateConfig({ sandbox: "dev", workspaceScope: ws, policy: policy({ b: "b.example.com" }), idempotencyKey: "big-1" });
    expect(small.version).toBe(2);

    const res = await gw.sdk().updateSettings({ sandbox: "dev", key: "log_level", value: "debug", wait: { timeoutMs: 5_000 } });
    expect(res.completion.state).toBe("applied");
    first.close();
    await first.ended;
    const second = supervisor(gw);
    await second.ready;
    expect(bootstrapOf(second).payload.case).toBe("sessionAccepted");
  });

  it("what a commit measures is the bootstrap the supervisor receives, to within the envelope's bound", async () => {
    gw = await startTestGateway();
    const admin = gw.raw("admin");
    await admin.createProvider({ provider: { metadata: { name: "llm" }, type: "openai", credentials: { API_KEY: "k".repeat(500), OTHER: "o" }, config: { REGION: "eu" } }, workspaceScope: ws });
    const bound = policy({ a: "a.example.com", b: "b.example.com" });
    bound.networkPolicies!.a!.endpoints![0]!.credentialBinding = { provider: "llm" };
    bound.networkMiddlewares = { mw: { middleware: "guard", config: { grpc_endpoint: "guard.internal:9000", nested: { list: [1, "two"] } } } };
    await admin.createSandbox({ name: "dev", spec: { policy: bound, providers: ["llm"] }, workspaceScope: ws });
    await admin.updateConfig(setting("log_level", "debug"));
    await gw.raw("platform").updateConfig({ global: true, settingKey: "region", settingValue: { value: { case: "stringValue", value: "eu-west" } } });
    const s = supervisor(gw);
    await s.ready;
    const real = toBinary(GatewayMessageSchema, bootstrapOf(s)).length;
    const sb = (await gw.store.sandboxByName("default", "dev"))!;
    const measured = await gw.store.transaction((tx) => configurationBytes(tx, sb));
    expect(measured).toBeGreaterThanOrEqual(real);
    expect(measured - real).toBeLessThanOrEqual(BOOTSTRAP_OVERHEAD);
  });

  it("without providers or middleware services, what a commit measures is still the bootstrap, for one policy after another (their sizes partly kept)", async () => {
    gw = await startTestGateway();
    await createSandbox(gw, "dev");
    const sdk = gw.sdk();
    for (const rules of [1, 30, 2]) {
      await sdk.updatePolicy({ sandbox: "dev", policy: bigPolicy(rules) });
      const s = supervisor(gw);
      await s.ready;
      const real = toBinary(GatewayMessageSchema, bootstrapOf(s)).length;
      s.close();
      const sb = (await gw.store.sandboxByName("default", "dev"))!;
      expect(sb.providers).toEqual([]);
      const measured = await gw.store.transaction((tx) => configurationBytes(tx, sb));
      expect(measured, `${rules} rules`).toBeGreaterThanOrEqual(real);
      expect(measured - real, `${rules} rules`).toBeLessThanOrEqual(BOOTSTRAP_OVERHEAD);
    }
  });

  it("on PostgreSQL, a sandbox setting committed while a global setting commits is measured with the global setting: both would not fit, and it is refused", async () => {
    const g = (gw = await startTestGateway("postgres", { session: { maxMessageBytes: 8_000 } }));
    await createSandbox(g, "dev");
    await expectRefusedOnceGlobalCommits(g, () => g.raw("admin").updateConfig(setting("blob", "v".repeat(4_000))));
  });

  it("on PostgreSQL, a sandbox created while a global setting commits is measured with the global setting: both would not fit, and it is refused", async () => {
    const g = (gw = await startTestGateway("postgres", { session: { maxMessageBytes: 8_000 } }));
    await expectRefusedOnceGlobalCommits(g, () => g.raw("admin").createSandbox({ name: "late", spec: { policy: bigPolicy(35) }, workspaceScope: ws }));
    expect(await g.store.sandboxByName("default", "late")).toBeUndefined();
  });

  it("on PostgreSQL, stopping and starting a sandbox do not wait for a global commit under way", async () => {
    gw = await startTestGateway("postgres");
    await createSandbox(gw, "dev");
    const other = await globalCommitUnderWay(gw);
    try {
      // Waiting for the global commit would hang: fail after 5 s instead, and let the finally end it.
      const within = <T,>(p: Promise<T>, what: string) =>
        Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} waited for the global commit`)), 5_000).unref())]);
      expect((await within(gw.raw("admin").stopSandbox({ name: "dev", workspaceScope: ws }), "StopSandbox")).sandbox?.status?.phase).toBe(SandboxPhase.STOPPED);
      expect((await within(gw.raw("admin").startSandbox({ name: "dev", workspaceScope: ws }), "StartSandbox")).sandbox?.status?.phase).toBe(SandboxPhase.PROVISIONING);
      await other.query("ROLLBACK");
    } finally {
      await other.end();
    }
  });

  describe("with an 8 KB limit", () => {
    const start = async () => {
      gw = await startTestGateway("sqlite", { session: { maxMessageBytes: 8_000 } });
      await createSandbox(gw, "dev");
      return gw;
    };

    it("a setting that would not fit is refused naming the size and the limit; a smaller one commits", async () => {
      const g = await start();
      const before = await dumpState(g);
      const err = await rpcError(g.raw("admin").updateConfig(setting("blob", "v".repeat(9_000))));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(err.rawMessage).toMatch(/^the sandbox configuration would be 9\.\d KiB \(\d+ bytes\) as a supervisor receives it, over the 7\.8 KiB \(8000 bytes\) a supervisor accepts; nothing was committed$/);
      expect(await dumpState(g)).toBe(before);
      expect((await g.raw("admin").updateConfig(setting("blob", "v".repeat(2_000)))).settingsRevision).toBe(1n);
      // Each setting fits; together they would not.
      const second = await rpcError(g.raw("admin").updateConfig(setting("blob2", "w".repeat(5_500))));
      expect(second.code).toBe(Code.ResourceExhausted);
    });

    it("merge operations that would grow the policy past the limit are refused, and nothing is stored", async () => {
      const g = await start();
      const before = await dumpState(g);
      const rules = Array.from({ length: 80 }, (_, i) => ({
        operation: { case: "addRule" as const, value: { ruleName: `m${i}`, rule: { name: `m${i}`, endpoints: [{ host: `m${i}.${"y".repeat(60)}.example.com`, ports: [443] }] } } },
      }));
      const err = await rpcError(g.raw("admin").updateConfig({ sandbox: "dev", workspaceScope: ws, mergeOperations: rules }));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(err.rawMessage).toMatch(TOO_LARGE);
      expect(await dumpState(g)).toBe(before);
      expect((await g.raw("admin").updateConfig({ sandbox: "dev", workspaceScope: ws, mergeOperations: rules.slice(0, 5) })).version).toBe(2);
    });

    it("a credential bound to many endpoints counts in the provider environment: a small policy that would multiply it is refused", async () => {
      const g = await start();
      const admin = g.raw("admin");
      const credentials = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`KEY_${i}`, "secret"]));
      await admin.createProvider({ provider: { metadata: { name: "llm" }, type: "openai", credentials }, workspaceScope: ws });
      const p = policy();
      await admin.createSandbox({ name: "bound", spec: { policy: p, providers: ["llm"] }, workspaceScope: ws });
      // 60 ports on one endpoint: 60 bindings for each of 8 credentials, about 13 KB, from a policy under 1 KB.
      const wide = policy();
      wide.networkPolicies!.github!.endpoints = [{ host: "api.github.com", ports: Array.from({ length: 60 }, (_, i) => 8000 + i), credentialBinding: { provider: "llm" } }];
      expect(toBinary(SandboxPolicySchema, create(SandboxPolicySchema, wide)).length).toBeLessThan(1_000);
      const err = await rpcError(admin.updateConfig({ sandbox: "bound", workspaceScope: ws, policy: wide }));
      expect(err.code).toBe(Code.ResourceExhausted);
    });

    it("unknown fields count: a policy of the same size carrying 9 KB of unknown fields is refused", async () => {
      const g = await start();
      const admin = g.raw("admin");
      await admin.updateConfig({ sandbox: "dev", workspaceScope: ws, policy: policy({ b: "b.example.com" }), annotations: { "example.com/why": "first" } });
      // Another rule of the same length: a new revision (the same policy again would be no change,
      // whatever it carries: identical means the same hash, issue 30 item 14).
      const padded = create(SandboxPolicySchema, policy({ c: "c.example.com" }));
      // Field 999, length-delimited: its length (9,000 as a varint), then the bytes.
      padded.$unknown = [{ no: 999, wireType: 2, data: new Uint8Array([0xa8, 0x46, ...new Uint8Array(9_000).fill(0x61)]) }];
      const before = await dumpState(g);
      const err = await rpcError(admin.updateConfig({ sandbox: "dev", workspaceScope: ws, policy: padded, annotations: { "example.com/why": "second" } }));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(await dumpState(g)).toBe(before);
    });

    it("CreateSandbox with a first policy that would not fit is refused, and no sandbox is created", async () => {
      const g = await start();
      const before = await dumpState(g);
      const err = await rpcError(g.raw("admin").createSandbox({ name: "big", spec: { policy: bigPolicy(100) }, workspaceScope: ws }));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(err.rawMessage).toMatch(TOO_LARGE);
      expect(await dumpState(g)).toBe(before);
    });

    it("a global policy or setting that alone would not fit is refused", async () => {
      const g = await start();
      const before = await dumpState(g);
      const root = g.raw("platform");
      const err = await rpcError(root.updateConfig({ global: true, policy: bigPolicy(100) }));
      expect(err.code).toBe(Code.ResourceExhausted);
      expect(err.rawMessage).toMatch(/^the global configuration would be/);
      const setErr = await rpcError(root.updateConfig({ global: true, settingKey: "blob", settingValue: { value: { case: "stringValue", value: "g".repeat(9_000) } } }));
      expect(setErr.code).toBe(Code.ResourceExhausted);
      expect(await dumpState(g)).toBe(before);
    });

    it("a configuration already too large (stored before this check) can be repaired: shrinking changes commit, growing ones do not", async () => {
      const g = await start();
      await g.raw("admin").updateConfig(setting("keep", "k".repeat(3_000)));
      // As a gateway without this check stored it: a second large setting, written directly.
      const sb = (await g.store.sandboxByName("default", "dev"))!;
      await g.store.transaction(async (tx) => {
        const value = toBinary(SettingValueSchema, create(SettingValueSchema, { value: { case: "stringValue", value: "l".repeat(6_000) } }));
        await tx.putSetting({ sandboxId: sb.id, key: "legacy", value });
        await tx.updateSandbox(sb.id, { settingsRevision: sb.settingsRevision + 1n });
      });
      expect((await rpcError(g.raw("admin").updateConfig(setting("more", "m")))).code).toBe(Code.ResourceExhausted);
      // Smaller, still over the limit: allowed, it only helps.
      expect((await g.raw("admin").updateConfig(setting("keep", "k".repeat(2_000)))).settingsRevision).toBe(3n);
      expect((await g.raw("admin").updateConfig({ sandbox: "dev", workspaceScope: ws, settingKey: "legacy", deleteSetting: true })).deleted).toBe(true);
      expect((await g.raw("admin").updateConfig(setting("more", "m"))).settingsRevision).toBe(5n);
    });
  });
});

describe("setting keys", () => {
  it("a key over 256 bytes, with a control character or with surrounding spaces is INVALID_ARGUMENT naming setting_key, and nothing is stored; an over-long key may still be deleted", async () => {
    gw = await startTestGateway();
    await createSandbox(gw, "dev");
    const admin = gw.raw("admin");
    const before = await dumpState(gw);
    const cases: [string, RegExp][] = [
      ["k".repeat(257), /^setting_key exceeds 256 bytes$/],
      ["k".repeat(100 * 1024), /^setting_key exceeds 256 bytes$/],
      ["é".repeat(129), /^setting_key exceeds 256 bytes$/],
      ["log\u0007level", /^setting_key must contain only printable characters \(U\+0007 at index 3\)$/],
      ["log\u200blevel", /^setting_key must contain only printable characters \(U\+200B at index 3\)$/],
      [" log_level", /^setting_key must not have leading or trailing whitespace$/],
    ];
    for (const [key, message] of cases) {
      const err = await rpcError(admin.updateConfig(setting(key, "v")));
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toMatch(message);
      const global = await rpcError(gw.raw("platform").updateConfig({ global: true, settingKey: key, settingValue: { value: { case: "boolValue", value: true } } }));
      expect(global.code).toBe(Code.InvalidArgument);
    }
    expect(await dumpState(gw)).toBe(before);
    expect((await admin.updateConfig(setting("k".repeat(256), "v"))).settingsRevision).toBe(1n);
    expect((await admin.updateConfig({ sandbox: "dev", workspaceScope: ws, settingKey: "k".repeat(300), deleteSetting: true })).deleted).toBe(false);
  });
});
