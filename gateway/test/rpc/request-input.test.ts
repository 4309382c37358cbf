// Input that decoding used to accept or choke on (issue 29, finding 8): text that is not UTF-8
// (stored as U+FFFD over gRPC and Connect binary), messages nested 500,000 deep (INTERNAL
// "Maximum call stack size exceeded"), Durations out of range. Each is INVALID_ARGUMENT naming the
// field, over every protocol, stores nothing, and the gateway keeps serving.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { SandboxPolicySchema, SupervisorMessageSchema, UpdateConfigRequestSchema, workspaceScope } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "./harness.js";
import { createSandbox, dumpState, policy, rpcError } from "./fixtures.js";
import { postRaw, type Protocol } from "./raw-requests.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
  await createSandbox(gw, "dev");
});
afterAll(() => gw.close());

const settingRequest = (value: string) =>
  toBinary(UpdateConfigRequestSchema, create(UpdateConfigRequestSchema, { sandbox: "dev", workspaceScope: workspaceScope(), settingKey: "note", settingValue: { value: { case: "stringValue", value } } }));

/** `bytes` with the first `marker` (ASCII) overwritten by `replacement`. */
function patch(bytes: Uint8Array, marker: string, replacement: number[]): Buffer {
  const buf = Buffer.from(bytes);
  Buffer.from(replacement).copy(buf, buf.indexOf(Buffer.from(marker)));
  return buf;
}

const notUtf8 = patch(settingRequest("AAAA"), "AAAA", [0xff, 0xfe]);

/** `request` with 500,000 nested groups of unknown field 99 appended. */
function withNestedGroups(request: Uint8Array, levels = 500_000): Buffer {
  return Buffer.concat([Buffer.from(request), Buffer.alloc(levels * 2, Buffer.from([0x9b, 0x06])), Buffer.alloc(levels * 2, Buffer.from([0x9c, 0x06]))]);
}

async function settingNote(): Promise<string | undefined> {
  const res = await gw.raw("admin").getSandboxConfig({ name: "dev", workspaceScope: workspaceScope() });
  const v = res.settings.note?.value?.value;
  return v?.case === "stringValue" ? v.value : undefined;
}

describe("text that is not UTF-8", () => {
  const cases: [string, Protocol, { gzip?: boolean }][] = [
    ["gRPC", "grpc", {}],
    ["gRPC-Web", "grpc-web", {}],
    ["Connect binary", "connect", {}],
    ["Connect binary, gzip-compressed", "connect", { gzip: true }],
    ["gRPC, a gzip-compressed message", "grpc", { gzip: true }],
  ];
  for (const [name, protocol, options] of cases) {
    it(`in setting_value.string_value over ${name} is INVALID_ARGUMENT naming the field, and nothing is stored`, async () => {
      const before = await dumpState(gw);
      const answer = await postRaw(gw.url, "UpdateConfig", notUtf8, protocol, options);
      expect(answer).toEqual({ code: Code.InvalidArgument, message: "setting_value.string_value must be valid UTF-8 (it holds bytes that are not UTF-8)" });
      expect(await dumpState(gw)).toBe(before);
    });
  }

  it("in a Connect JSON body is INVALID_ARGUMENT naming the field, and nothing is stored", async () => {
    const before = await dumpState(gw);
    const json = Buffer.concat([
      Buffer.from('{"sandbox":"dev","workspaceScope":{"workspace":"default"},"settingKey":"note","settingValue":{"stringValue":"a'),
      Buffer.from([0xff, 0x41]),
      Buffer.from('"}}'),
    ]);
    const answer = await postRaw(gw.url, "UpdateConfig", json, "connect-json");
    expect(answer.code).toBe(Code.InvalidArgument);
    expect(answer.message).toMatch(/string_value/);
    expect(await dumpState(gw)).toBe(before);
  });

  it("as a JSON escape of an unpaired surrogate is INVALID_ARGUMENT naming the field", async () => {
    const json = Buffer.from('{"sandbox":"dev","workspaceScope":{"workspace":"default"},"settingKey":"note","settingValue":{"stringValue":"a\\ud800b"}}');
    const answer = await postRaw(gw.url, "UpdateConfig", json, "connect-json");
    expect(answer.code).toBe(Code.InvalidArgument);
    expect(answer.message).toMatch(/string_value/);
  });

  it("U+FFFD that the caller sent is text like any other: stored and returned as sent, over every protocol", async () => {
    for (const protocol of ["grpc", "grpc-web", "connect"] as const) {
      const value = `kept \ufffd ${protocol}`;
      expect(await postRaw(gw.url, "UpdateConfig", settingRequest(value), protocol)).toEqual({ code: undefined, message: expect.any(String) });
      expect(await settingNote()).toBe(value);
    }
  });

  it("in a supervisor's hello ends its stream INVALID_ARGUMENT naming the field", async () => {
    const hello = toBinary(
      SupervisorMessageSchema,
      create(SupervisorMessageSchema, { payload: { case: "hello", value: { sandboxId: "dev", instanceId: "inst-XXXX", connectionEpoch: 1n, supportsConfigSnapshots: true, supportsConfigApply: true } } }),
    );
    const answer = await postRaw(gw.url, "ConnectSupervisor", patch(hello, "XXXX", [0xc3, 0x28]), "grpc", { who: "supervisor" });
    expect(answer).toEqual({ code: Code.InvalidArgument, message: "hello.instance_id must be valid UTF-8 (it holds bytes that are not UTF-8)" });
  });
});

describe("nesting", () => {
  for (const protocol of ["grpc", "connect"] as const) {
    it(`500,000 nested groups over ${protocol === "grpc" ? "gRPC" : "Connect"} are INVALID_ARGUMENT, and the gateway keeps serving`, async () => {
      const before = await dumpState(gw);
      const answer = await postRaw(gw.url, "UpdateConfig", withNestedGroups(settingRequest("deep")), protocol);
      expect(answer).toEqual({ code: Code.InvalidArgument, message: "the request nests deeper than 100 levels of messages (at (unknown field 99))" });
      expect(await dumpState(gw)).toBe(before);
      expect((await gw.raw().health({})).status).toBeGreaterThan(0);
      const res = await gw.raw("admin").updateConfig({ sandbox: "dev", workspaceScope: workspaceScope(), settingKey: "after", settingValue: { value: { case: "boolValue", value: true } } });
      expect(res.settingsRevision).toBeGreaterThan(0n);
    });
  }

  it("a policy whose middleware config nests 100,000 deep is INVALID_ARGUMENT over gRPC, and over Connect JSON too", async () => {
    // Built by hand (toBinary itself would recurse): Struct { fields: { "n": Value { struct_value: … } } }, 100,000 times.
    const levels = 100_000;
    // Each level's header bytes, innermost first, joined once (joining level by level is quadratic).
    const heads: Buffer[] = [];
    let length = 0;
    for (let i = 0; i < levels; i++) {
      const value = Buffer.concat([Buffer.from([0x2a]), varint(length)]); // Value.struct_value (5)
      const entryValue = Buffer.concat([Buffer.from([0x12]), varint(value.length + length)]); // entry value (2)
      const entryLength = 3 + entryValue.length + value.length + length; // key "n" is 0x0a 0x01 0x6e
      const entry = Buffer.concat([Buffer.from([0x0a]), varint(entryLength)]); // Struct.fields (1)
      heads.push(Buffer.concat([entry, Buffer.from([0x0a, 0x01, 0x6e]), entryValue, value]));
      length = entry.length + entryLength;
    }
    const struct = Buffer.concat(heads.reverse());
    // NetworkMiddlewareConfig { middleware: "mw", config }, as the value of network_middlewares["mw"].
    const middleware = Buffer.concat([field(2, Buffer.from("mw")), field(3, struct)]);
    const deepPolicy = Buffer.concat([
      Buffer.from(toBinary(SandboxPolicySchema, create(SandboxPolicySchema, policy()))),
      field(fieldNumberOf(SandboxPolicySchema, "network_middlewares"), Buffer.concat([field(1, Buffer.from("mw")), field(2, middleware)])),
    ]);
    const request = Buffer.concat([
      Buffer.from(toBinary(UpdateConfigRequestSchema, create(UpdateConfigRequestSchema, { sandbox: "dev", workspaceScope: workspaceScope() }))),
      field(fieldNumberOf(UpdateConfigRequestSchema, "policy"), deepPolicy),
    ]);
    const before = await dumpState(gw);
    const answer = await postRaw(gw.url, "UpdateConfig", request, "grpc");
    expect(answer.code).toBe(Code.InvalidArgument);
    expect(answer.message).toMatch(/^the request nests deeper than 100 levels of messages \(at policy\.network_middlewares\["mw"\]\.config/);
    const json = `{"sandbox":"dev","workspaceScope":{"workspace":"default"},"policy":{"networkMiddlewares":{"mw":{"middleware":"mw","config":${'{"n":'.repeat(levels)}1${"}".repeat(levels)}}}}}`;
    const jsonAnswer = await postRaw(gw.url, "UpdateConfig", Buffer.from(json), "connect-json");
    expect(jsonAnswer).toEqual({ code: Code.InvalidArgument, message: "the request's JSON nests deeper than 100 levels of objects and arrays" });
    expect(await dumpState(gw)).toBe(before);
  });

  it("a truncated message is INVALID_ARGUMENT, not INTERNAL", async () => {
    const bytes = settingRequest("truncated");
    const answer = await postRaw(gw.url, "UpdateConfig", bytes.subarray(0, bytes.length - 3), "connect");
    expect(answer.code).toBe(Code.InvalidArgument);
    expect(answer.message).toMatch(/^the request is not a valid openshell\.v1\.UpdateConfigRequest in the protobuf binary format: premature EOF/);
  });
});

describe("durations", () => {
  const bad: [string, { seconds: bigint; nanos: number }, RegExp][] = [
    ["nanos = 2e9", { seconds: 0n, nanos: 2_000_000_000 }, /^wait_timeout is not a valid Duration: nanos must be within ±999,999,999 \(seconds 0, nanos 2000000000\)$/],
    ["nanos of the other sign than seconds", { seconds: 5n, nanos: -1 }, /^wait_timeout is not a valid Duration: nanos must have the sign of seconds/],
    ["seconds beyond 10,000 years", { seconds: 315_576_000_001n, nanos: 0 }, /^wait_timeout is not a valid Duration: seconds must be within/],
  ];
  for (const [name, waitTimeout, message] of bad) {
    it(`a wait_timeout with ${name} is INVALID_ARGUMENT naming the field, and nothing is stored`, async () => {
      const before = await dumpState(gw);
      const err = await rpcError(
        gw.raw("admin").updateConfig({ sandbox: "dev", workspaceScope: workspaceScope(), settingKey: "note", settingValue: { value: { case: "stringValue", value: "x" } }, waitTimeout }),
      );
      expect(err.code).toBe(Code.InvalidArgument);
      expect(err.rawMessage).toMatch(message);
      expect(await dumpState(gw)).toBe(before);
    });
  }
});

function varint(n: number): Buffer {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return Buffer.from(out);
}

/** A length-delimited field. */
function field(no: number, bytes: Buffer): Buffer {
  return Buffer.concat([varint((no << 3) | 2), varint(bytes.length), bytes]);
}

function fieldNumberOf(desc: typeof SandboxPolicySchema | typeof UpdateConfigRequestSchema, name: string): number {
  return desc.fields.find((f) => f.name === name)!.number;
}
