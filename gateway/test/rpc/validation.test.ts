// Every rejected UpdateConfig request answers the documented status code, names what is wrong,
// and leaves the stored state exactly as it was. Sent with the raw client, so the SDK's own
// local checks cannot pre-empt the gateway's.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { ConfigUpdateWaitMode, workspaceScope, type UpdateConfigRequestSchema } from "openshell-config/raw";
import { startTestGateway, type TestGateway, type TOKENS } from "./harness.js";
import { createSandbox, dumpState, policy, rpcError, sandboxRecord } from "./fixtures.js";

type Request = MessageInitShape<typeof UpdateConfigRequestSchema>;

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
  await createSandbox(gw, "dev");
});
afterAll(() => gw.close());

const withPolicy = (change: (p: ReturnType<typeof policy>) => void): Request => {
  const p = policy();
  change(p);
  return { sandbox: "dev", policy: p, workspaceScope: workspaceScope() };
};

const invalid: [string, Request, RegExp, (keyof typeof TOKENS)?][] = [
  ["an unknown wait_mode", { sandbox: "dev", workspaceScope: workspaceScope(), policy: policy(), waitMode: 99 as ConfigUpdateWaitMode }, /wait mode/],
  ["a negative wait_timeout", { sandbox: "dev", workspaceScope: workspaceScope(), policy: policy(), waitTimeout: { seconds: -1n } }, /wait_timeout/],
  ["a 257-byte idempotency_key", { sandbox: "dev", workspaceScope: workspaceScope(), policy: policy(), idempotencyKey: "k".repeat(257) }, /idempotency_key exceeds 256 bytes/],
  ["a key of 129 two-byte characters (258 bytes)", { sandbox: "dev", workspaceScope: workspaceScope(), policy: policy(), idempotencyKey: "é".repeat(129) }, /idempotency_key/],
  ["a key with surrounding whitespace", { sandbox: "dev", workspaceScope: workspaceScope(), policy: policy(), idempotencyKey: " key-1 " }, /idempotency_key must not have leading or trailing whitespace/],
  ["a request_id that is not a UUID", { sandbox: "dev", workspaceScope: workspaceScope(), policy: policy(), requestId: "req-1" }, /request_id/],
  ["the nil UUID as request_id", { sandbox: "dev", workspaceScope: workspaceScope(), policy: policy(), requestId: "00000000-0000-0000-0000-000000000000" }, /request_id/],
  ["policy and setting_key together", { sandbox: "dev", workspaceScope: workspaceScope(), policy: policy(), settingKey: "log_level", settingValue: { value: { case: "stringValue", value: "debug" } } }, /policy, setting_key, and merge_operations are mutually exclusive/],
  ["none of policy, setting_key, merge_operations", { sandbox: "dev", workspaceScope: workspaceScope() }, /policy, setting_key or merge_operations/],
  ["delete_setting with setting_value", { sandbox: "dev", workspaceScope: workspaceScope(), settingKey: "log_level", deleteSetting: true, settingValue: { value: { case: "boolValue", value: true } } }, /setting_value/],
  ["a setting upsert without setting_value", { sandbox: "dev", workspaceScope: workspaceScope(), settingKey: "log_level" }, /setting_value is required/],
  ["global with a sandbox", { global: true, sandbox: "dev", policy: policy() }, /sandbox and workspace must be omitted/, "platform"],
  ["global with a workspace", { global: true, policy: policy(), workspaceScope: { selection: { case: "workspace", value: "default" } } }, /sandbox and workspace must be omitted/, "platform"],
  ["global with WAIT_FOR_COMPLETION", { global: true, policy: policy(), waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION }, /WAIT_FOR_COMPLETION is only supported for sandbox-scoped updates/, "platform"],
  ["global with an idempotency_key", { global: true, policy: policy(), idempotencyKey: "g-1" }, /idempotency_key is only supported for sandbox-scoped updates/, "platform"],
  ["global with annotations", { global: true, policy: policy(), annotations: { "example.com/why": "x" } }, /annotations/, "platform"],
  ["global with merge_operations", { global: true, mergeOperations: [{ operation: { case: "removeRule", value: { ruleName: "github" } } }] }, /merge_operations/, "platform"],
  ["an empty sandbox", { sandbox: "", policy: policy(), workspaceScope: workspaceScope() }, /sandbox is required/],
  // The upstream gateway requires a named workspace ("default" for the default one).
  ["no workspace_scope", { sandbox: "dev", policy: policy() }, /^workspace_scope is required$/],
  ["a workspace_scope with no selection", { sandbox: "dev", policy: policy(), workspaceScope: {} }, /^workspace_scope is required$/],
  ["workspace_scope all_workspaces", { sandbox: "dev", policy: policy(), workspaceScope: { selection: { case: "allWorkspaces", value: {} } } }, /workspace_scope/],
  ["an empty workspace name", { sandbox: "dev", policy: policy(), workspaceScope: { selection: { case: "workspace", value: "" } } }, /workspace_scope\.workspace/],
  ["a merge op on a missing rule", { sandbox: "dev", workspaceScope: workspaceScope(), mergeOperations: [{ operation: { case: "removeRule", value: { ruleName: "nope" } } }] }, /merge_operations\[0\]\.remove_rule\.rule_name.*"nope"/],
  ["a second merge op on a missing endpoint", { sandbox: "dev", workspaceScope: workspaceScope(), mergeOperations: [
    { operation: { case: "addRule", value: { ruleName: "npm", rule: { name: "npm", endpoints: [{ host: "registry.npmjs.org", ports: [443] }] } } } },
    { operation: { case: "removeEndpoint", value: { ruleName: "npm", host: "example.com", port: 443 } } },
  ] }, /merge_operations\[1\]\.remove_endpoint/],
  ["an allow-rules target matching no endpoint", { sandbox: "dev", workspaceScope: workspaceScope(), mergeOperations: [
    { operation: { case: "addAllowRules", value: { target: { ruleName: "github", host: "nowhere.example.com" }, rules: [{ allow: { method: "GET" } }] } } },
  ] }, /merge_operations\[0\]\.add_allow_rules\.target/],
  ["a changed filesystem", withPolicy((p) => p.filesystem!.readWrite!.push("/")), /policy\.filesystem/],
  ["a changed process", withPolicy((p) => (p.process = { runAsUser: "root" })), /policy\.process/],
  ["an added landlock", withPolicy((p) => (p.landlock = { compatibility: "hard_requirement" })), /policy\.landlock/],
  ["an added middleware", withPolicy((p) => (p.networkMiddlewares = { audit: { name: "audit", middleware: "audit", order: 1 } })), /policy\.network_middlewares\["audit"\]/],
  ["an endpoint with an empty host", withPolicy((p) => (p.networkPolicies!["github"]!.endpoints = [{ host: "", ports: [443] }])), /network_policies\["github"\]\.endpoints\[0\]\.host/],
  ["an endpoint port above 65535", withPolicy((p) => (p.networkPolicies!["github"]!.endpoints = [{ host: "api.github.com", ports: [65_536] }])), /network_policies\["github"\]\.endpoints\[0\]\.ports/],
  ["a legacy port above 65535", withPolicy((p) => (p.networkPolicies!["github"]!.endpoints = [{ host: "api.github.com", port: 70_000 }])), /endpoints\[0\]\.ports/],
];

describe("UpdateConfig rejects invalid requests and changes nothing", () => {
  it.each(invalid)("%s is INVALID_ARGUMENT naming the field", async (_name, request, message, who = "admin") => {
    const before = await dumpState(gw);
    const err = await rpcError(gw.raw(who).updateConfig(request));
    expect(Code[err.code]).toBe(Code[Code.InvalidArgument]);
    expect(err.rawMessage).toMatch(message);
    expect(await dumpState(gw)).toBe(before);
  });

  it("a well-formed request_id is accepted", async () => {
    const res = await gw.raw("admin").updateConfig({ sandbox: "dev", settingKey: "rid", settingValue: { value: { case: "boolValue", value: true } }, requestId: crypto.randomUUID(), workspaceScope: workspaceScope() });
    expect(res.operation?.operationId).toBeTruthy();
  });

  it("an unknown sandbox is NOT_FOUND and changes nothing", async () => {
    const before = await dumpState(gw);
    const err = await rpcError(gw.raw("admin").updateConfig({ sandbox: "ghost", policy: policy(), idempotencyKey: "ghost-1", workspaceScope: workspaceScope() }));
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toMatch(/sandbox "ghost" not found/);
    expect(await dumpState(gw)).toBe(before);
  });

  it("an expected_resource_version mismatch is ABORTED and changes nothing; the current one commits", async () => {
    const sb = await sandboxRecord(gw, "dev");
    const before = await dumpState(gw);
    const change = { sandbox: "dev", policy: policy({ github: "api.github.com", pypi: "pypi.org" }), workspaceScope: workspaceScope() };
    const err = await rpcError(gw.raw("admin").updateConfig({ ...change, expectedResourceVersion: sb.resourceVersion + 5n }));
    expect(err.code).toBe(Code.Aborted);
    expect(err.rawMessage).toMatch(/resource version/);
    expect(await dumpState(gw)).toBe(before);
    const ok = await gw.raw("admin").updateConfig({ ...change, expectedResourceVersion: sb.resourceVersion });
    expect(ok.version).toBe(sb.policyVersion + 1);
  });

  it("a sandbox setting whose key is managed globally is FAILED_PRECONDITION and changes nothing", async () => {
    await gw.raw("platform").updateConfig({ global: true, settingKey: "egress_mode", settingValue: { value: { case: "stringValue", value: "strict" } } });
    const before = await dumpState(gw);
    for (const request of [
      { sandbox: "dev", settingKey: "egress_mode", settingValue: { value: { case: "stringValue" as const, value: "open" } }, workspaceScope: workspaceScope() },
      { sandbox: "dev", settingKey: "egress_mode", deleteSetting: true, workspaceScope: workspaceScope() },
    ]) {
      const err = await rpcError(gw.raw("admin").updateConfig(request));
      expect(err.code).toBe(Code.FailedPrecondition);
      expect(err.rawMessage).toBe("setting 'egress_mode' is managed globally; delete the global setting first");
    }
    expect(await dumpState(gw)).toBe(before);
  });

  it("the same key with a different payload is INVALID_ARGUMENT and changes nothing", async () => {
    await gw.raw("admin").updateConfig({ sandbox: "dev", settingKey: "log_level", settingValue: { value: { case: "stringValue", value: "info" } }, idempotencyKey: "same-key", workspaceScope: workspaceScope() });
    const before = await dumpState(gw);
    const err = await rpcError(
      gw.raw("admin").updateConfig({ sandbox: "dev", settingKey: "log_level", settingValue: { value: { case: "stringValue", value: "debug" } }, idempotencyKey: "same-key", workspaceScope: workspaceScope() }),
    );
    expect(err.code).toBe(Code.InvalidArgument);
    expect(err.rawMessage).toBe("idempotency_key was already used with a different request payload");
    expect(await dumpState(gw)).toBe(before);
  });
});
