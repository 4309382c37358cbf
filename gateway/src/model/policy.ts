// Sandbox policy rules the gateway enforces on UpdateConfig: the canonical hash that decides
// whether a policy changed, the static fields a sandbox-scoped update may not touch, and the
// merge operations applied to the latest policy. Errors are ConnectErrors naming the field.

import { createHash } from "node:crypto";
import { clone, create, equals } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { canonicalMessageJson } from "./canonical-json.js";
import {
  SandboxPolicySchema,
  FilesystemPolicySchema,
  LandlockPolicySchema,
  ProcessPolicySchema,
  NetworkMiddlewareConfigSchema,
  NetworkPolicyRuleSchema,
  type SandboxPolicy,
  type NetworkEndpoint,
  type PolicyMergeOperation,
  type L7RuleTarget,
} from "openshell-config/raw";

/** Upstream limit on middlewares per policy. */
const MAX_MIDDLEWARES = 10;

/**
 * SHA-256 over canonical (key-sorted) proto-JSON: equal policies hash equally whatever their map
 * order. `canonical`, when given, is `canonicalPolicyJson(policy)` already computed.
 */
export function policyHash(policy: SandboxPolicy, canonical?: string): string {
  return createHash("sha256").update(canonical ?? canonicalPolicyJson(policy)).digest("hex");
}

/** The canonical proto-JSON text that `policyHash` hashes. */
export function canonicalPolicyJson(policy: SandboxPolicy): string {
  return canonicalMessageJson(SandboxPolicySchema, policy);
}

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/** Checks a policy on its own (create time and every update). */
export function validatePolicy(policy: SandboxPolicy, field = "policy"): void {
  const middlewares = Object.values(policy.networkMiddlewares);
  if (middlewares.length > MAX_MIDDLEWARES) {
    throw invalid(`${field}.network_middlewares has ${middlewares.length} entries; at most ${MAX_MIDDLEWARES} are allowed`);
  }
  const orders = new Set<number>();
  for (const [name, mw] of Object.entries(policy.networkMiddlewares)) {
    if (orders.has(mw.order)) throw invalid(`${field}.network_middlewares["${name}"].order ${mw.order} is not unique`);
    orders.add(mw.order);
  }
  for (const [name, rule] of Object.entries(policy.networkPolicies)) {
    if (name === "") throw invalid(`${field}.network_policies has a rule with an empty name`);
    rule.endpoints.forEach((ep, i) => validateEndpoint(ep, `${field}.network_policies["${name}"].endpoints[${i}]`));
  }
}

function validateEndpoint(ep: NetworkEndpoint, field: string): void {
  if (ep.host === "") throw invalid(`${field}.host is required`);
  for (const port of [ep.port, ...ep.ports]) {
    if (port > 65_535) throw invalid(`${field}.ports: ${port} is not a TCP port`);
  }
}

/**
 * A sandbox-scoped policy may change only its network rules: filesystem, landlock, process and
 * middlewares stay as they were at creation.
 */
export function checkStaticFields(next: SandboxPolicy, createTime: SandboxPolicy): void {
  const fixed = [
    ["filesystem", FilesystemPolicySchema, next.filesystem, createTime.filesystem],
    ["landlock", LandlockPolicySchema, next.landlock, createTime.landlock],
    ["process", ProcessPolicySchema, next.process, createTime.process],
  ] as const;
  for (const [name, schema, a, b] of fixed) {
    const left = a ?? create(schema as never);
    const right = b ?? create(schema as never);
    if (!equals(schema as never, left as never, right as never)) {
      throw invalid(`policy.${name} differs from the policy the sandbox was created with; only network_policies may change`);
    }
  }
  const nextMw = next.networkMiddlewares;
  const oldMw = createTime.networkMiddlewares;
  const names = new Set([...Object.keys(nextMw), ...Object.keys(oldMw)]);
  for (const name of names) {
    const a = nextMw[name];
    const b = oldMw[name];
    if (!a || !b || !equals(NetworkMiddlewareConfigSchema, a, b)) {
      throw invalid(`policy.network_middlewares["${name}"] differs from the policy the sandbox was created with; only network_policies may change`);
    }
  }
}

/** Applies merge operations, in order, to a copy of `base`. */
export function applyMergeOperations(base: SandboxPolicy, ops: readonly PolicyMergeOperation[]): SandboxPolicy {
  const policy = clone(SandboxPolicySchema, base);
  ops.forEach((op, i) => applyOne(policy, op, `merge_operations[${i}]`));
  return policy;
}

function applyOne(policy: SandboxPolicy, op: PolicyMergeOperation, field: string): void {
  const o = op.operation;
  switch (o.case) {
    case "addRule": {
      if (o.value.ruleName === "") throw invalid(`${field}.add_rule.rule_name is required`);
      if (!o.value.rule) throw invalid(`${field}.add_rule.rule is required`);
      policy.networkPolicies[o.value.ruleName] = clone(NetworkPolicyRuleSchema, o.value.rule);
      return;
    }
    case "removeRule":
      ruleOf(policy, o.value.ruleName, `${field}.remove_rule.rule_name`);
      delete policy.networkPolicies[o.value.ruleName];
      return;
    case "removeEndpoint": {
      const rule = ruleOf(policy, o.value.ruleName, `${field}.remove_endpoint.rule_name`);
      const before = rule.endpoints.length;
      rule.endpoints = rule.endpoints.filter(
        (ep) => !(ep.host === o.value.host && (o.value.port === 0 || ep.port === o.value.port || ep.ports.includes(o.value.port))),
      );
      if (rule.endpoints.length === before) {
        throw invalid(`${field}.remove_endpoint: rule "${o.value.ruleName}" has no endpoint ${o.value.host}:${o.value.port}`);
      }
      return;
    }
    case "removeBinary": {
      const rule = ruleOf(policy, o.value.ruleName, `${field}.remove_binary.rule_name`);
      const before = rule.binaries.length;
      rule.binaries = rule.binaries.filter((b) => b.path !== o.value.binaryPath);
      if (rule.binaries.length === before) {
        throw invalid(`${field}.remove_binary: rule "${o.value.ruleName}" has no binary ${o.value.binaryPath}`);
      }
      return;
    }
    case "addDenyRules":
      for (const ep of targetEndpoints(policy, o.value.target, `${field}.add_deny_rules.target`)) ep.denyRules.push(...o.value.denyRules);
      return;
    case "addAllowRules":
      for (const ep of targetEndpoints(policy, o.value.target, `${field}.add_allow_rules.target`)) ep.rules.push(...o.value.rules);
      return;
    default:
      throw invalid(`${field}.operation is required`);
  }
}

function ruleOf(policy: SandboxPolicy, name: string, field: string) {
  if (name === "") throw invalid(`${field} is required`);
  const rule = policy.networkPolicies[name];
  if (!rule) throw invalid(`${field}: the policy has no rule "${name}"`);
  return rule;
}

function targetEndpoints(policy: SandboxPolicy, target: L7RuleTarget | undefined, field: string): NetworkEndpoint[] {
  if (!target) throw invalid(`${field} is required`);
  if (target.anyBinary && target.binaries.length > 0) throw invalid(`${field}: binaries and any_binary are mutually exclusive`);
  const rules = target.ruleName ? [ruleOf(policy, target.ruleName, `${field}.rule_name`)] : Object.values(policy.networkPolicies);
  const matches = rules.flatMap((r) =>
    r.endpoints.filter(
      (ep) =>
        (target.host === "" || ep.host === target.host) &&
        (target.ports.length === 0 || target.ports.some((p) => ep.port === p || ep.ports.includes(p))) &&
        (target.path === undefined || ep.path === target.path),
    ),
  );
  if (matches.length === 0) throw invalid(`${field} matches no endpoint`);
  return matches;
}
