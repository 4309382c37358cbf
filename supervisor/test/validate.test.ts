// Semantic policy validation (validate.ts): the rules the gateway does not check.

import { NetworkTlsMode } from "openshell-config/raw";
import { describe, expect, it } from "vitest";
import { describeViolations, validatePolicy } from "../src/validate.js";
import { policy } from "./support/snapshots.js";

describe("policy validation", () => {
  it("accepts every supported protocol, L7 rules on L7 endpoints, and an absent policy", () => {
    for (const protocol of ["", "tcp", "rest", "websocket", "graphql", "sql", "json-rpc", "mcp"]) {
      expect(validatePolicy(policy({ r: [{ host: "example.com", protocol }] }))).toEqual([]);
    }
    expect(validatePolicy(policy({ r: [{ host: "*.example.com", protocol: "rest", rules: [{ method: "GET", path: "/**" }], denyRules: [{ method: "DELETE", path: "/**" }] }] }))).toEqual([]);
    expect(validatePolicy(policy({ r: [{ host: "example.com", tls: NetworkTlsMode.SKIP }] }))).toEqual([]);
    expect(validatePolicy(undefined)).toEqual([]);
  });

  it("rejects an unknown protocol, naming the rule and endpoint", () => {
    expect(validatePolicy(policy({ web: [{ host: "a.example", protocol: "http3" }] }))).toEqual([
      { path: 'network_policies["web"].endpoints[0]', reason: expect.stringContaining('protocol "http3" is not supported') },
    ]);
  });

  it("rejects the deprecated PASSTHROUGH tls mode", () => {
    expect(validatePolicy(policy({ t: [{ host: "a.example", tls: NetworkTlsMode.PASSTHROUGH }] }))[0]?.reason).toContain("PASSTHROUGH");
  });

  it("rejects hosts with whitespace or '..'", () => {
    const v = validatePolicy(policy({ h: [{ host: "bad host.example" }, { host: "a..example" }] }));
    expect(v.map((x) => x.reason)).toEqual(["host contains whitespace", 'host contains ".."']);
    expect(v[1]?.path).toBe('network_policies["h"].endpoints[1]');
  });

  it("rejects L7 rules or deny rules on an L4 endpoint", () => {
    const v = validatePolicy(
      policy({
        a: [{ host: "db", protocol: "tcp", rules: [{ method: "GET", path: "/" }] }],
        b: [{ host: "db", protocol: "", denyRules: [{ method: "GET", path: "/" }] }],
      }),
    );
    expect(v.map((x) => x.reason)).toEqual([
      'L7 rules are not allowed on an L4 endpoint (protocol "tcp")',
      'L7 deny_rules are not allowed on an L4 endpoint (protocol "")',
    ]);
  });

  it("describes violations in one bounded, printable line", () => {
    const many = Array.from({ length: 8 }, (_, i) => ({ path: `p${i}`, reason: "r" }));
    const text = describeViolations(many);
    expect(text).toMatch(/^invalid policy: p0: r; .* p4: r; and 3 more$/);
    const weird = validatePolicy(policy({ w: [{ host: "x", protocol: "a\nb".padEnd(200, "z") }] }));
    expect(weird[0]?.reason).not.toContain("\n");
    expect(weird[0]!.reason.length).toBeLessThan(200);
  });
});
