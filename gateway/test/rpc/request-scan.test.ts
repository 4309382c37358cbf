// The RPC edge skips encoding a request to measure it when scanRequest's bound clears the limit:
// that bound must never be below the real encoded size, for any request of any RPC.

import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { SupervisorMessageSchema, UpdateConfigRequestSchema, CreateSandboxRequestSchema } from "openshell-config/raw";
import { scanRequest } from "../../src/rpc/nul-text.js";
import { policy } from "./fixtures.js";

const text = fc.oneof(fc.constantFrom("", "a", "\u0000", "💥", "é".repeat(40)), fc.string({ maxLength: 30, unit: "grapheme" }));

describe("scanRequest", () => {
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
          const scan = scanRequest(req);
          expect(scan.sizeBound).toBeGreaterThanOrEqual(toBinary(UpdateConfigRequestSchema, req).length);
          const hasNul = [sandbox, key, ...Object.keys(annotations), ...Object.values(annotations)].some((s) => s.includes("\u0000"));
          expect(scan.nul).toBe(hasNul);
          // Unknown fields count as their bytes.
          const withUnknown = fromBinary(UpdateConfigRequestSchema, new Uint8Array([...toBinary(UpdateConfigRequestSchema, req), 0xfa, 0x3e, bytes.length, ...bytes]));
          expect(scanRequest(withUnknown).sizeBound).toBeGreaterThanOrEqual(toBinary(UpdateConfigRequestSchema, withUnknown).length);
        },
      ),
    );
  });

  it("bounds supervisor messages and sandbox specs with negative numbers and nested messages", () => {
    const msgs = [
      create(SupervisorMessageSchema, { payload: { case: "heartbeat", value: {} } }),
      create(CreateSandboxRequestSchema, { name: "x", labels: { a: "b" }, spec: { policy: policy() } }),
    ];
    for (const m of msgs) expect(scanRequest(m).sizeBound).toBeGreaterThanOrEqual(toBinary(m.$typeName === SupervisorMessageSchema.typeName ? SupervisorMessageSchema : (CreateSandboxRequestSchema as never), m as never).length);
  });
});
