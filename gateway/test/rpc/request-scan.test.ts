// The RPC edge skips encoding a request to measure it when scanMessage's bound clears the limit:
// that bound must never be below the real encoded size, for any message, and its NUL answer is
// findNulText's.

import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  CreateSandboxRequestSchema,
  GatewayMessageSchema,
  ProviderEnvironmentSnapshotSchema,
  SandboxConfigRevisionSchema,
  SandboxConfigSnapshotSchema,
  SandboxPolicySchema,
  SupervisorMessageSchema,
  UpdateConfigRequestSchema,
} from "openshell-config/raw";
import { findNulText, WALK_DEPTH } from "../../src/rpc/nul-text.js";
import { scanMessage } from "../../src/rpc/message-scan.js";
import { randomMessage, rng } from "./random-message.js";
import { policy } from "./fixtures.js";

const text = fc.oneof(fc.constantFrom("", "a", "\u0000", "💥", "é".repeat(40)), fc.string({ maxLength: 30, unit: "grapheme" }));

describe("scanMessage on requests", () => {
  it("bounds the encoded size from above and finds NUL text", () => {
    fc.assert(
      fc.property(
        text,
        text,
        fc.dictionary(text, text, { maxKeys: 5 }),
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 40 }),
        (sandbox, key, annotations, rv, bytes) => {
          const req = create(UpdateConfigRequestSchema, { sandbox, idempotencyKey: key, annotations, expectedResourceVersion: rv < 0n ? 0n : rv, policy: policy() });
          const scan = scanMessage(UpdateConfigRequestSchema, req);
          expect(scan.sizeBound).toBeGreaterThanOrEqual(toBinary(UpdateConfigRequestSchema, req).length);
          const hasNul = [sandbox, key, ...Object.keys(annotations), ...Object.values(annotations)].some((s) => s.includes("\u0000"));
          expect(scan.nul).toBe(hasNul);
          // Unknown fields count as their bytes.
          const withUnknown = fromBinary(UpdateConfigRequestSchema, new Uint8Array([...toBinary(UpdateConfigRequestSchema, req), 0xfa, 0x3e, bytes.length, ...bytes]));
          expect(scanMessage(UpdateConfigRequestSchema, withUnknown).sizeBound).toBeGreaterThanOrEqual(toBinary(UpdateConfigRequestSchema, withUnknown).length);
        },
      ),
    );
  });

  it("bounds supervisor messages and sandbox specs with negative numbers and nested messages", () => {
    const msgs = [
      create(SupervisorMessageSchema, { payload: { case: "heartbeat", value: {} } }),
      create(CreateSandboxRequestSchema, { name: "x", labels: { a: "b" }, spec: { policy: policy() } }),
    ];
    for (const m of msgs) {
      const desc = m.$typeName === SupervisorMessageSchema.typeName ? SupervisorMessageSchema : CreateSandboxRequestSchema;
      expect(scanMessage(desc, m).sizeBound).toBeGreaterThanOrEqual(toBinary(desc as never, m as never).length);
    }
  });
});

describe("scanMessage", () => {
  // Every message type a scan runs on at the RPC edge and in delivery, and some with oneofs,
  // 64-bit integers, bytes and Struct fields.
  const types = [UpdateConfigRequestSchema, SupervisorMessageSchema, CreateSandboxRequestSchema, GatewayMessageSchema, SandboxConfigSnapshotSchema, ProviderEnvironmentSnapshotSchema, SandboxPolicySchema];
  for (const desc of types) {
    it(`finds NUL text exactly where findNulText does and bounds the encoded size of any ${desc.name}`, () => {
      fc.assert(
        fc.property(fc.integer(), (seed) => {
          const m = create(desc, randomMessage(desc, rng(seed), 4) as never);
          for (const x of [m, fromBinary(desc, toBinary(desc, m as never))]) {
            const scan = scanMessage(desc, x);
            expect(scan.nul).toBe(findNulText(x) !== undefined);
            expect(scan.sizeBound).toBeGreaterThanOrEqual(toBinary(desc, x as never).length);
          }
        }),
        { numRuns: 200 },
      );
    });
  }

  it("bounds a message of scalars only, each at its largest encoding", () => {
    const max = 2n ** 64n - 1n;
    const r = create(SandboxConfigRevisionSchema, { configRevision: max, policyVersion: 2 ** 32 - 1, policySource: 2, globalPolicyVersion: 2 ** 32 - 1, settingsRevision: max });
    expect(scanMessage(SandboxConfigRevisionSchema, r).sizeBound).toBeGreaterThanOrEqual(toBinary(SandboxConfigRevisionSchema, r).length);
  });

  it("has no bound for a message nested deeper than any scan goes", () => {
    let policy = create(SandboxPolicySchema, { version: 1 });
    // A request holding its policy this far down is not a real message type; a Struct nests freely.
    // (The scan goes deeper than any request decodes, MAX_NESTING; it was 64 levels before that limit.)
    let struct: Record<string, unknown> = { leaf: "x" };
    for (let i = 0; i < WALK_DEPTH + 10; i++) struct = { next: struct };
    policy = create(SandboxPolicySchema, { networkMiddlewares: { mw: { name: "mw", config: struct as never } } });
    expect(scanMessage(SandboxPolicySchema, policy).sizeBound).toBe(Infinity);
  });
});
