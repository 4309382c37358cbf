// scanWire reads a request's bytes exactly as fromBinary does: it refuses what fromBinary would
// misread (text that is not UTF-8) or fail on (an encoding it cannot read, nesting that exhausts
// the stack), names the field, and accepts everything else. The oracle is fromBinary itself with
// a strict UTF-8 decoder.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import fc from "fast-check";
import { create, fromBinary, toBinary, type DescMessage } from "@bufbuild/protobuf";
import { configureTextEncoding, getTextEncoding } from "@bufbuild/protobuf/wire";
import {
  CreateSandboxRequestSchema,
  SandboxPolicySchema,
  SupervisorMessageSchema,
  UpdateConfigRequestSchema,
  workspaceScope,
} from "openshell-config/raw";
import { MAX_NESTING, scanWire } from "../../src/rpc/wire-scan.js";
import { randomMessage, rng } from "./random-message.js";
import { policy } from "./fixtures.js";

const settingRequest = (value: string) =>
  toBinary(UpdateConfigRequestSchema, create(UpdateConfigRequestSchema, { sandbox: "dev", workspaceScope: workspaceScope(), settingKey: "k", settingValue: { value: { case: "stringValue", value } } }));

/** `bytes` with the first occurrence of `marker` (ASCII) overwritten by `replacement`, same length. */
function patch(bytes: Uint8Array, marker: string, replacement: number[]): Uint8Array {
  const buf = Buffer.from(bytes);
  const at = buf.indexOf(Buffer.from(marker));
  expect(at).toBeGreaterThanOrEqual(0);
  Buffer.from(replacement).copy(buf, at);
  return buf;
}

/** A varint. */
function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
}

describe("scanWire", () => {
  it("names a string field whose bytes are not UTF-8, and accepts U+FFFD sent as such", () => {
    expect(scanWire(UpdateConfigRequestSchema, patch(settingRequest("AAAA"), "AAAA", [0xff, 0xfe]))).toEqual({ kind: "utf8", path: "setting_value.string_value" });
    // An overlong encoding of "/" and an encoded surrogate are not UTF-8 either.
    expect(scanWire(UpdateConfigRequestSchema, patch(settingRequest("AAAA"), "AAAA", [0xc0, 0xaf]))?.kind).toBe("utf8");
    expect(scanWire(UpdateConfigRequestSchema, patch(settingRequest("AAAA"), "AAA", [0xed, 0xa0, 0x80]))?.kind).toBe("utf8");
    expect(scanWire(UpdateConfigRequestSchema, settingRequest("a\ufffdb 💥"))).toBeUndefined();
  });

  it("names the element, the map entry and the map key that hold the bytes", () => {
    const p = policy({ github: "api.github.com", npm: "XXXX.npmjs.org" });
    const bytes = toBinary(UpdateConfigRequestSchema, create(UpdateConfigRequestSchema, { sandbox: "dev", policy: p, annotations: { "example.com/KEYK": "v" } }));
    expect(scanWire(UpdateConfigRequestSchema, patch(bytes, "XXXX", [0x80]))).toEqual({ kind: "utf8", path: 'policy.network_policies["npm"].endpoints[0].host' });
    expect(scanWire(UpdateConfigRequestSchema, patch(bytes, "KEYK", [0xf8]))).toEqual({ kind: "utf8", path: "annotations[(key)]" });
    const list = toBinary(SandboxPolicySchema, create(SandboxPolicySchema, { filesystem: { readOnly: ["/usr", "/opt/YYYY"] } }));
    expect(scanWire(SandboxPolicySchema, patch(list, "YYYY", [0xc3]))).toEqual({ kind: "utf8", path: "filesystem.read_only[1]" });
  });

  it("refuses unknown groups nested deeper than the limit without recursing, at 500,000 levels too", () => {
    const base = settingRequest("ok");
    const nested = (n: number) => Buffer.concat([Buffer.from(base), Buffer.alloc(n * 2, Buffer.from([0x9b, 0x06])), Buffer.alloc(n * 2, Buffer.from([0x9c, 0x06]))]);
    expect(scanWire(UpdateConfigRequestSchema, nested(MAX_NESTING))).toBeUndefined();
    expect(scanWire(UpdateConfigRequestSchema, nested(MAX_NESTING + 1))).toEqual({ kind: "depth", path: "(unknown field 99)" });
    expect(scanWire(UpdateConfigRequestSchema, nested(500_000))?.kind).toBe("depth");
    // What the review sent: fromBinary itself overflows the stack on it.
    expect(() => fromBinary(UpdateConfigRequestSchema, nested(500_000))).toThrow(/call stack/);
  });

  it("counts a Struct as deep as its JSON, and refuses one nested past the limit", () => {
    const nestedStruct = (levels: number) => {
      let config: Record<string, unknown> = { leaf: "x" };
      for (let i = 1; i < levels; i++) config = { next: config };
      return toBinary(SandboxPolicySchema, create(SandboxPolicySchema, { networkMiddlewares: { mw: { middleware: "mw", config: config as never } } }));
    };
    // policy → middleware entry's value (1) → config Struct (2) → … : the limit leaves room for 98 JSON levels.
    expect(scanWire(SandboxPolicySchema, nestedStruct(MAX_NESTING - 1))).toBeUndefined();
    const deep = scanWire(SandboxPolicySchema, nestedStruct(MAX_NESTING));
    expect(deep?.kind).toBe("depth");
    expect(deep?.path).toMatch(/^network_middlewares\["mw"\]\.config\.fields\["next"\]/);
  });

  it("calls a truncated message malformed, as fromBinary does", () => {
    const bytes = settingRequest("truncated");
    const fault = scanWire(UpdateConfigRequestSchema, bytes.subarray(0, bytes.length - 3));
    expect(fault?.kind).toBe("malformed");
    expect(() => fromBinary(UpdateConfigRequestSchema, bytes.subarray(0, bytes.length - 3))).toThrow();
  });

  describe("agrees with fromBinary decoding strictly", () => {
    const lenient = getTextEncoding();
    const fatal = new TextDecoder("utf-8", { fatal: true });
    beforeAll(() => configureTextEncoding({ ...lenient, decodeUtf8: (bytes) => fatal.decode(bytes) }));
    afterAll(() => configureTextEncoding(lenient));

    const types: DescMessage[] = [UpdateConfigRequestSchema, SupervisorMessageSchema, CreateSandboxRequestSchema, SandboxPolicySchema];
    for (const desc of types) {
      it(`on corrupted ${desc.name} messages: refused exactly when fromBinary fails or misreads`, () => {
        fc.assert(
          fc.property(
            fc.integer(),
            fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom("set", "set", "set", "insert", "delete")), { minLength: 0, maxLength: 2 }),
            fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 12 }) }),
            (seed, edits, tail) => {
              const m = create(desc, randomMessage(desc, rng(seed), 3) as never);
              const bytes = [...toBinary(desc, m)];
              for (const [at, byte, how] of edits) {
                const i = bytes.length === 0 ? 0 : at % bytes.length;
                if (how === "set" && bytes.length > 0) bytes[i] = byte;
                else if (how === "insert") bytes.splice(i, 0, byte);
                else bytes.splice(i, 1);
              }
              if (tail) bytes.push(...tail, ...varint(tail.length));
              const input = new Uint8Array(bytes);
              let decodes = true;
              try {
                fromBinary(desc, input);
              } catch {
                decodes = false;
              }
              const fault = scanWire(desc, input);
              expect(fault === undefined).toBe(decodes);
            },
          ),
          { numRuns: 400 },
        );
      });
    }
  });
});
