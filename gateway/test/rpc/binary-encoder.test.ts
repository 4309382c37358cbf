// The compiled binary encoder writes, for any message, the bytes toBinary writes: what the gateway
// stores (policies, idempotent responses, revisions, enforcement) and the sizes it checks depend
// on it, and stored bytes are compared with freshly encoded ones.

import { create, fromBinary, toBinary, type DescMessage } from "@bufbuild/protobuf";
import fc from "fast-check";
import {
  ConfigSnapshotRevisionSchema,
  GatewayMessageSchema,
  PolicyEnforcementSchema,
  SandboxPolicySchema,
  SandboxSchema,
  ListSandboxesRequestSchema,
  SupervisorMessageSchema,
  UpdateConfigRequestSchema,
  UpdateConfigResponseSchema,
} from "openshell-config/raw";
import { describe, expect, it } from "vitest";
import { encodeMessage } from "../../src/model/binary-encoder.js";
import { randomMessage, rng } from "./random-message.js";

function expectSame(desc: DescMessage, m: object) {
  const bytes = toBinary(desc, m as never);
  expect(Buffer.from(encodeMessage(desc, m))).toEqual(Buffer.from(bytes));
  // Decoded, with fields this build does not know (numbers far above any in the schema) kept as unknown.
  const decoded = fromBinary(desc, new Uint8Array([...bytes, 0xf8, 0xff, 0x03, 0x2a, 0xfa, 0xff, 0x03, 0x02, 0x00, 0xff]));
  expect(decoded.$unknown?.length).toBe(2);
  expect(Buffer.from(encodeMessage(desc, decoded))).toEqual(Buffer.from(toBinary(desc, decoded)));
}

describe("encodeMessage", () => {
  for (const desc of [SandboxPolicySchema, UpdateConfigRequestSchema, UpdateConfigResponseSchema, GatewayMessageSchema, SupervisorMessageSchema, PolicyEnforcementSchema, ConfigSnapshotRevisionSchema, SandboxSchema, ListSandboxesRequestSchema]) {
    it(`writes any ${desc.name} as toBinary does, created and decoded with unknown fields`, () => {
      fc.assert(
        fc.property(fc.integer(), (seed) => {
          expectSame(desc, create(desc, randomMessage(desc, rng(seed), 4) as never));
        }),
        { numRuns: 200 },
      );
    });
  }

  it("writes long strings, multi-byte text and nested messages whose length takes several bytes as toBinary does", () => {
    const long = "é💥x".repeat(3000);
    const policy = create(SandboxPolicySchema, {
      version: 2 ** 31 - 1,
      filesystem: { readOnly: [long.slice(0, 100), long], readWrite: ["\ud800 lone surrogate"] },
      networkPolicies: { big: { name: long, endpoints: Array.from({ length: 200 }, (_, i) => ({ host: `h${i}.example.com`, ports: [443, i] })) } },
    });
    expectSame(SandboxPolicySchema, policy);
    // The buffer the first call grew serves the next, shorter one.
    expectSame(SandboxPolicySchema, create(SandboxPolicySchema, { version: 1 }));
  });

  it("leaves a value toBinary refuses to toBinary, which throws its own error", () => {
    const bad = create(SandboxPolicySchema, { version: 2 ** 40 });
    expect(() => encodeMessage(SandboxPolicySchema, bad)).toThrow(/invalid uint32/);
    expect(() => toBinary(SandboxPolicySchema, bad)).toThrow(/invalid uint32/);
  });

  it("writes nothing for an empty message and keeps map entries in the order the object holds them", () => {
    expect(encodeMessage(SandboxPolicySchema, create(SandboxPolicySchema)).length).toBe(0);
    const req = create(UpdateConfigRequestSchema, { annotations: { b: "1", "10": "x", a: "" } });
    expect(Buffer.from(encodeMessage(UpdateConfigRequestSchema, req))).toEqual(Buffer.from(toBinary(UpdateConfigRequestSchema, req)));
  });
});
