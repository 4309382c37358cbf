// The compiled canonical proto-JSON writer gives, for any message, the text the generic path
// gives (canonicalJson of toJson): the policy hash and the request fingerprint depend on it, and
// a stored fingerprint must match a retry's after an upgrade.

import { create, fromBinary, toBinary, toJson, type DescMessage } from "@bufbuild/protobuf";
import fc from "fast-check";
import { SandboxPolicySchema, UpdateConfigRequestSchema, SupervisorMessageSchema } from "openshell-config/raw";
import { describe, expect, it } from "vitest";
import { canonicalJson, canonicalMessageJson } from "../../src/model/canonical-json.js";
import { randomMessage, rng } from "./random-message.js";

function expectSame(desc: DescMessage, m: object) {
  expect(canonicalMessageJson(desc, m)).toBe(canonicalJson(toJson(desc, m as never)));
  // Decoded, a message holds everything in the shape the decoder makes it (and zero values as such).
  const decoded = fromBinary(desc, toBinary(desc, m as never));
  expect(canonicalMessageJson(desc, decoded)).toBe(canonicalJson(toJson(desc, decoded)));
}

describe("canonicalMessageJson", () => {
  for (const desc of [SandboxPolicySchema, UpdateConfigRequestSchema, SupervisorMessageSchema]) {
    it(`writes any ${desc.name} as canonicalJson(toJson(...)) does, created and decoded`, () => {
      fc.assert(
        fc.property(fc.integer(), (seed) => {
          expectSame(desc, create(desc, randomMessage(desc, rng(seed), 4) as never));
        }),
        { numRuns: 300 },
      );
    });
  }

  it("writes the empty message, and a message with every implicit field at its zero value, as {}", () => {
    expect(canonicalMessageJson(SandboxPolicySchema, create(SandboxPolicySchema))).toBe("{}");
    expect(canonicalMessageJson(UpdateConfigRequestSchema, create(UpdateConfigRequestSchema, { sandbox: "", expectedResourceVersion: 0n, global: false }))).toBe("{}");
  });

  it("sorts keys by JSON name and map keys by code unit, whatever the field numbers and insertion order", () => {
    const req = create(UpdateConfigRequestSchema, { sandbox: "s", annotations: { b: "1", "10": "x", a: "2", "2": "y" }, expectedResourceVersion: 7n });
    expect(canonicalMessageJson(UpdateConfigRequestSchema, req)).toBe('{"annotations":{"10":"x","2":"y","a":"2","b":"1"},"expectedResourceVersion":"7","sandbox":"s"}');
  });

  it("writes a message that `raw` holds as the text given for it", () => {
    const policy = create(SandboxPolicySchema, { version: 3 });
    const req = create(UpdateConfigRequestSchema, { sandbox: "s", policy });
    const text = canonicalMessageJson(SandboxPolicySchema, policy);
    expect(canonicalMessageJson(UpdateConfigRequestSchema, req, new Map([[policy, text]]))).toBe(canonicalMessageJson(UpdateConfigRequestSchema, req));
    expect(canonicalMessageJson(UpdateConfigRequestSchema, req, new Map([[policy, '{"stand-in":1}']]))).toBe('{"policy":{"stand-in":1},"sandbox":"s"}');
  });
});
