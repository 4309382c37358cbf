// Semantic validation of a SandboxPolicy, beyond what the gateway checks: endpoint protocols,
// deprecated TLS modes, malformed hosts and L7 rules on L4 endpoints. Messages name the rule and
// the reason and never echo anything that could hold a credential.

import { NetworkTlsMode, type SandboxPolicy } from "openshell-config/raw";

/** Endpoint protocols the sandbox proxy understands ("" and "tcp" are L4, the rest L7). */
export const SUPPORTED_PROTOCOLS: ReadonlySet<string> = new Set(["", "tcp", "rest", "websocket", "graphql", "sql", "json-rpc", "mcp"]);
const L4_PROTOCOLS: ReadonlySet<string> = new Set(["", "tcp"]);

export interface PolicyViolation {
  /** Where: `network_policies["<rule>"].endpoints[<i>]`. */
  readonly path: string;
  /** Why, in one sentence. */
  readonly reason: string;
}

/** Every violation found in `policy`, in a stable order (rule names sorted); empty when valid. */
export function validatePolicy(policy: SandboxPolicy | undefined): PolicyViolation[] {
  const out: PolicyViolation[] = [];
  if (!policy) return out;
  for (const ruleName of Object.keys(policy.networkPolicies).sort()) {
    const rule = policy.networkPolicies[ruleName]!;
    const endpoints = rule.endpoints;
    // Plain loops and no closure per endpoint (under tsx's keepNames each named closure costs a
    // defineProperty per call); the path is spelled out only for an endpoint with a violation.
    for (let i = 0; i < endpoints.length; i++) {
      const ep = endpoints[i]!;
      const protocol = ep.protocol;
      const bad = !SUPPORTED_PROTOCOLS.has(protocol);
      const passthrough = ep.tls === NetworkTlsMode.PASSTHROUGH;
      const space = /\s/u.test(ep.host);
      const dots = ep.host.includes("..");
      const l7OnL4 = L4_PROTOCOLS.has(protocol) && (ep.rules.length > 0 || ep.denyRules.length > 0);
      if (!(bad || passthrough || space || dots || l7OnL4)) continue;
      const path = `network_policies[${quote(ruleName)}].endpoints[${i}]`;
      if (bad) out.push({ path, reason: `protocol ${quote(protocol)} is not supported (expected one of tcp, rest, websocket, graphql, sql, json-rpc, mcp)` });
      if (passthrough) out.push({ path, reason: "tls mode PASSTHROUGH is deprecated and rejected (omit tls to auto-detect)" });
      if (space) out.push({ path, reason: "host contains whitespace" });
      if (dots) out.push({ path, reason: 'host contains ".."' });
      if (l7OnL4) {
        const what = ep.rules.length > 0 && ep.denyRules.length > 0 ? "rules and deny_rules" : ep.rules.length > 0 ? "rules" : "deny_rules";
        out.push({ path, reason: `L7 ${what} are not allowed on an L4 endpoint (protocol ${quote(protocol)})` });
      }
    }
  }
  return out;
}

/** One line describing the violations, for a ConfigApplyFailure message (at most `max` listed). */
export function describeViolations(violations: readonly PolicyViolation[], max = 5): string {
  const listed = violations.slice(0, max).map((v) => `${v.path}: ${v.reason}`);
  const more = violations.length > max ? `; and ${violations.length - max} more` : "";
  return `invalid policy: ${listed.join("; ")}${more}`;
}

/** A short, printable rendering of an untrusted string: control characters escaped, length capped. */
function quote(s: string, max = 64): string {
  const cut = s.length > max ? `${s.slice(0, max)}…` : s;
  return JSON.stringify(cut);
}
