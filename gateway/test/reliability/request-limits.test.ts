// The gateway's request limits, end to end on every protocol: oversized messages, too many
// concurrent waits for one caller, idempotency keys too long or unprintable, and NUL text. Each
// rejection has the documented code, names what is wrong, and changes no stored row.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { ConfigUpdateWaitMode, ServiceStatus, workspaceScope } from "openshell-config/raw";
import { findNulText } from "../../src/rpc/nul-text.js";
import { createWaiterSlots } from "../../src/rpc/request-limits.js";
import { parseCommandLine, UsageError } from "../../src/config.js";
import { eventually, policy } from "../rpc/fixtures.js";
import { PROTOCOLS, startReliabilityGateway, type ReliabilityGateway } from "./reliability-gateway.js";
import { settle } from "./property-support.js";

const MiB = 1024 * 1024;

let gw: ReliabilityGateway;
beforeAll(async () => {
  // Supervisors here accept 8 MiB: a policy just under the 4 MiB request limit is then also one
  // a commit may store (the default 3 MiB would refuse it at commit: operations/snapshot-cap.ts).
  gw = await startReliabilityGateway("sqlite", { limits: { maxWaitersPerCaller: 3 }, waitMaxMs: 60_000, session: { maxMessageBytes: 8 * MiB } });
  for (const name of ["dev", "other", "third"]) await gw.client("admin").createSandbox({ name, spec: { policy: policy() }, workspaceScope: workspaceScope() });
});
afterAll(() => gw.close());

/** A policy update whose encoding is about `bytes` long (one rule with a long host list). */
function paddedUpdate(bytes: number) {
  const p = policy();
  p.networkPolicies!["big"] = { name: "big", endpoints: [{ host: "h".repeat(bytes), ports: [443] }] };
  return { sandbox: "dev", policy: p, workspaceScope: workspaceScope() };
}

describe("message size", () => {
  it.each(PROTOCOLS)("a 5 MiB UpdateConfig over %s is RESOURCE_EXHAUSTED naming the 4 MiB limit, and nothing is stored", async (protocol) => {
    const before = await gw.dumpTables();
    const err = await settle(gw.client("admin", protocol).updateConfig(paddedUpdate(5 * MiB)));
    expect(err && Code[err.code]).toBe(Code[Code.ResourceExhausted]);
    expect(err!.rawMessage).toMatch(/at most 4194304 bytes/);
    expect(await gw.dumpTables()).toBe(before);
    expect((await gw.client("user", protocol).health({})).status).toBe(ServiceStatus.HEALTHY);
  });

  it("an oversized message on the supervisor stream ends the stream with RESOURCE_EXHAUSTED", async () => {
    const before = await gw.dumpTables();
    async function* messages() {
      yield { payload: { case: "hello" as const, value: { sandboxId: "dev", instanceId: "i".repeat(5 * MiB), supportsConfigSnapshots: true, supportsConfigApply: true } } };
    }
    const err = await settle((async () => {
      for await (const _ of gw.client("supervisor").connectSupervisor(messages())) void _;
    })());
    expect(err && Code[err.code]).toBe(Code[Code.ResourceExhausted]);
    expect(await gw.dumpTables()).toBe(before);
  });
});

describe("concurrent waits per caller", () => {
  it("the fourth concurrent wait of one caller is RESOURCE_EXHAUSTED and commits nothing; others are unaffected; a finished wait frees its slot", async () => {
    const admin = gw.client("admin");
    const aborts = [new AbortController(), new AbortController(), new AbortController()];
    const waited = { sandbox: "dev", waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION, waitTimeout: { seconds: 60n }, workspaceScope: workspaceScope() };
    let watchDelivered!: () => void;
    let watchEnded = false;
    const delivered = new Promise<void>((r) => (watchDelivered = r));
    // Two waited updates and one watch stream hold all three slots.
    const holds = [
      settle(admin.updateConfig({ ...waited, policy: policy({ a: "a.example.com" }) }, { signal: aborts[0]!.signal })),
      settle(admin.updateConfig({ ...waited, sandbox: "other", policy: policy({ b: "b.example.com" }) }, { signal: aborts[1]!.signal })),
      settle((async () => {
        try {
          for await (const _ of admin.watchConfigUpdateOperations({ sandbox: "dev", workspaceScope: workspaceScope() }, { signal: aborts[2]!.signal })) watchDelivered();
        } finally {
          watchEnded = true;
        }
      })()),
    ];
    await eventually(async () => (await gw.store.countPending()) >= 2);
    // The watch stream holds the third slot once it has delivered something (dev's pending
    // update), rather than after a guessed delay; had it been refused, it would have ended.
    await Promise.race([delivered, holds[2]]);
    expect(watchEnded).toBe(false);

    const before = await gw.dumpTables();
    const err = await settle(admin.updateConfig({ ...waited, sandbox: "third", policy: policy({ c: "c.example.com" }) }));
    expect(err && Code[err.code]).toBe(Code[Code.ResourceExhausted]);
    expect(err!.rawMessage).toMatch(/too many concurrent waits.*limit 3/);
    const watchErr = await settle((async () => {
      for await (const _ of admin.watchConfigUpdateOperations({ sandbox: "third", workspaceScope: workspaceScope() })) void _;
    })());
    expect(watchErr && Code[watchErr.code]).toBe(Code[Code.ResourceExhausted]);
    expect(await gw.dumpTables()).toBe(before);

    // Commit-only calls and other callers do not count against alice.
    expect((await admin.updateConfig({ sandbox: "third", policy: policy({ d: "d.example.com" }), workspaceScope: workspaceScope() })).operation).toBeDefined();
    const platform = await gw.client("platform").updateConfig({ ...waited, sandbox: "third", settingKey: "k", settingValue: { value: { case: "boolValue", value: true } }, waitTimeout: { nanos: 1_000_000 } }).catch((e: unknown) => e);
    expect(platform).toMatchObject({ code: Code.DeadlineExceeded });

    aborts[0]!.abort();
    await holds[0];
    await eventually(async () => {
      const res = await settle(admin.updateConfig({ ...waited, sandbox: "third", policy: policy({ e: "e.example.com" }), waitTimeout: { nanos: 1_000_000 } }));
      return res?.code === Code.DeadlineExceeded;
    });
    for (const a of aborts) a.abort();
    await Promise.all(holds);
  });

  it("a slot is given back once, however often its release runs", () => {
    const slots = createWaiterSlots(1);
    const release = slots.acquire("alice");
    expect(() => slots.acquire("alice")).toThrow(/limit 1/);
    expect(slots.acquire("bob")).toBeTypeOf("function");
    release();
    release();
    expect(slots.count("alice")).toBe(0);
    slots.acquire("alice");
    expect(() => slots.acquire("alice")).toThrow(/limit 1/);
  });
});

describe("idempotency keys and text", () => {
  const cases: [string, string, RegExp][] = [
    ["257 bytes", "k".repeat(257), /idempotency_key exceeds 256 bytes/],
    ["a control character", "deploy\u0007-1", /idempotency_key must contain only printable characters \(U\+0007 at index 6\)/],
    ["a zero-width space", "deploy\u200b-1", /idempotency_key.*U\+200B/],
    ["a bidi override", "\u202edeploy-1", /idempotency_key.*U\+202E/],
    ["a lone surrogate", "deploy-\ud800", /idempotency_key/],
    ["a NUL", "deploy\u0000", /idempotency_key/],
  ];
  it.each(cases)("a key with %s is INVALID_ARGUMENT naming idempotency_key, and nothing is stored", async (_what, key, message) => {
    const before = await gw.dumpTables();
    const err = await settle(gw.client("admin", "connect-json").updateConfig({ sandbox: "dev", policy: policy({ k: "k.example.com" }), idempotencyKey: key, workspaceScope: workspaceScope() }));
    expect(err && Code[err.code]).toBe(Code[Code.InvalidArgument]);
    expect(err!.rawMessage).toMatch(message);
    expect(await gw.dumpTables()).toBe(before);
  });

  it("a 256-byte key of printable characters, non-ASCII included, is accepted", async () => {
    const key = `${"é".repeat(100)}${"k".repeat(56)}`;
    expect(Buffer.byteLength(key)).toBe(256);
    const res = await gw.client("admin").updateConfig({ sandbox: "dev", policy: policy({ k: "k.example.com" }), idempotencyKey: key, workspaceScope: workspaceScope() });
    expect(res.operation?.operationId).toBeTruthy();
  });

  it("NUL in any text field of any RPC is INVALID_ARGUMENT naming the field path, and nothing is stored", async () => {
    const before = await gw.dumpTables();
    const admin = gw.client("admin");
    const calls: [Promise<unknown>, RegExp][] = [
      [admin.updateConfig({ sandbox: "dev", policy: policy(), annotations: { "example.com/why": "a\u0000b" }, workspaceScope: workspaceScope() }), /^annotations\["example.com\/why"\] must not contain NUL/],
      [admin.createSandbox({ name: "fresh", labels: { team: "x\u0000" }, spec: { policy: policy() }, workspaceScope: workspaceScope() }), /^labels\["team"\]/],
      [admin.getSandbox({ name: "dev", workspaceScope: { selection: { case: "workspace", value: "default\u0000" } } }), /^workspace_scope\.workspace/],
      [admin.createProvider({ provider: { metadata: { name: "p" }, type: "t", credentials: { KEY: "v\u0000" } }, workspaceScope: workspaceScope() }), /^provider\.credentials\["KEY"\]/],
    ];
    for (const [call, message] of calls) {
      const err = await settle(call);
      expect(err && Code[err.code]).toBe(Code[Code.InvalidArgument]);
      expect(err!.rawMessage).toMatch(message);
    }
    expect(await gw.dumpTables()).toBe(before);
  });

  it("findNulText names nested fields, oneof cases and map keys, and ignores bytes", () => {
    const msg = { $typeName: "x.M", settingValue: { $typeName: "x.V", value: { case: "stringValue", value: "a\u0000" } } };
    expect(findNulText(msg)).toBe("setting_value.string_value");
    expect(findNulText({ $typeName: "x.M", labels: { "k\u0000": "v" } })).toBe('labels["k\\u0000"]');
    expect(findNulText({ $typeName: "x.M", items: [{ $typeName: "x.I", name: "ok" }, { $typeName: "x.I", name: "\u0000" }] })).toBe("items[1].name");
    expect(findNulText({ $typeName: "x.M", blob: new Uint8Array([0, 0]) })).toBeUndefined();
  });
});

describe("command line", () => {
  const base = ["serve", "--db", "sqlite::memory:", "--port", "0", "--no-auth"];
  const serve = (args: string[]) => {
    const cmd = parseCommandLine([...base, ...args]);
    if (cmd.kind !== "serve") throw new Error("expected serve");
    return cmd.config;
  };

  it("--max-message-size takes bytes, KiB or MiB up to 16 MiB; --max-waiters a positive count", () => {
    expect(serve([]).maxMessageBytes).toBeUndefined();
    expect(serve(["--max-message-size", "4MiB"]).maxMessageBytes).toBe(4 * MiB);
    expect(serve(["--max-message-size=512KiB"]).maxMessageBytes).toBe(512 * 1024);
    expect(serve(["--max-message-size", "65536"]).maxMessageBytes).toBe(65536);
    expect(serve(["--max-waiters", "50"]).maxWaitersPerCaller).toBe(50);
  });

  it.each([
    ["--max-message-size", "17MiB"],
    ["--max-message-size", "12"],
    ["--max-message-size", "4GB"],
    ["--max-waiters", "0"],
    ["--max-waiters", "-3"],
    ["--max-waiters", "many"],
  ])("%s %s is a usage error naming the flag", (flag, value) => {
    expect(() => serve([flag, value])).toThrow(UsageError);
    expect(() => serve([flag, value])).toThrow(new RegExp(`^${flag}`));
  });
});

// Last: the row it stores makes every later dump of this database slow.
describe("message size, accepted", () => {
  it("a message just under 4 MiB is accepted", async () => {
    const res = await gw.client("admin").updateConfig(paddedUpdate(4 * MiB - 4096));
    expect(res.operation?.operationId).toBeTruthy();
  });
});

// Kept apart and last: an over-limit HTTP/1.1 request leaves a stuck connection in Node's shared agent.
describe("over the HTTP layer's 16 MiB read limit", () => {
  // After a refused body the gateway closes the connection rather than leave the rest of the
  // body in front of the next request; the client's next call goes out on a new one.
  it("the next request on the same HTTP/1.1 connection is answered", async () => {
    const client = gw.client("admin", "connect-proto");
    const first = await settle(client.updateConfig(paddedUpdate(17 * MiB), { signal: AbortSignal.timeout(5_000) }));
    expect(first && Code[first.code]).toBe(Code[Code.ResourceExhausted]);
    // The abort below also destroys the stuck connection, so later tests start clean.
    const next = await settle(client.getSandbox({ name: "dev", workspaceScope: workspaceScope() }, { signal: AbortSignal.timeout(2_000) }));
    expect(next).toBeUndefined();
  });

  it("a 17 MiB Connect request is RESOURCE_EXHAUSTED, and the gateway keeps serving", async () => {
    const before = await gw.dumpTables();
    const err = await settle(gw.client("admin", "connect-proto").updateConfig(paddedUpdate(17 * MiB)));
    expect(err && Code[err.code]).toBe(Code[Code.ResourceExhausted]);
    expect(await gw.dumpTables()).toBe(before);
    expect((await gw.client("admin", "grpc").health({})).status).toBe(ServiceStatus.HEALTHY);
  });

  // (The client needs a session memory cap above 17 MiB, or its own HTTP/2 session resets the
  // stream with ENHANCE_YOUR_CALM before the gateway can answer: see reliability-gateway.ts.)
  it("a 17 MiB gRPC request over HTTP/2 is RESOURCE_EXHAUSTED", async () => {
    const err = await settle(gw.client("admin", "grpc").updateConfig(paddedUpdate(17 * MiB)));
    expect(err && Code[err.code]).toBe(Code[Code.ResourceExhausted]);
  });
});
