// A gateway without durable operations, as an upstream release before #3273 behaves: the
// reference gateway process started with --without-operations, a reference supervisor process,
// the SDK in this process and the built CLI. Waits follow the policy status; no answer carries an
// operation and the operation RPCs are UNIMPLEMENTED; the idempotency key is ignored. And the
// done-when of issue 28 §5: a TCP proxy that lets the first commit through and cuts the connection
// as the gateway starts answering it never leads to a second revision, for the SDK and the CLI.
// The commits lost here are merge operations that append an allow rule: sent twice, they would
// append it twice, so a resend would show as a second revision (a whole policy sent twice would not).

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CommitOutcomeUnknownError, createConfigClient, type ConfigClient, type PolicyMergeOperationInput } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { ConfigUpdateWaitMode, PolicyStatus, SandboxPhase, workspaceScope } from "openshell-config/raw";
import { build, runBinary } from "../cli/harness.js";
import { startResponseDropProxy, type ResponseDropProxy } from "../support/response-drop-proxy.js";
import { policy, startE2EStack, until, type E2EStack } from "./stack.js";

const sdkSandbox = "old-sdk";
const cliSandbox = "old-cli";
/** No supervisor: its revisions stay PENDING until a newer one replaces them. */
const idleSandbox = "old-idle";
const base = { github: { host: "api.github.com" } };
const scope = workspaceScope();

let stack: E2EStack;
let proxy: ResponseDropProxy;
let cliDir: string;

/** Appends an allow rule to the github rule: not idempotent, so every commit of it is a new revision. */
const appendAllow = (path: string): PolicyMergeOperationInput[] => [
  { operation: { case: "addAllowRules", value: { rules: [{ allow: { method: "GET", path } }], target: { ruleName: "github" } } } },
];

/** A fresh SDK client through the proxy (its own HTTP/2 connection, opened by its first call). */
function proxiedClient(): ConfigClient {
  return createConfigClient({ transport: createNodeTransport({ baseUrl: proxy.url, protocol: "grpc" }), token: stack.adminToken });
}

async function versions(sandbox: string): Promise<number[]> {
  const res = await stack.raw.listSandboxPolicies({ sandbox, workspaceScope: scope });
  return res.revisions.map((r) => r.version).sort((a, b) => a - b);
}

beforeAll(async () => {
  cliDir = mkdtempSync(join(tmpdir(), "openshell-e2e-no-ops-"));
  mkdirSync(join(cliDir, "home"));
  const [started] = await Promise.all([startE2EStack({ sandboxes: [sdkSandbox, cliSandbox], gatewayArgs: ["--without-operations"] }), build()]);
  stack = started;
  proxy = await startResponseDropProxy(Number(new URL(stack.url).port));
  for (const name of [sdkSandbox, cliSandbox]) {
    await stack.createSandbox(name, policy(base));
    stack.startSupervisor({ sandbox: name });
  }
  await stack.createSandbox(idleSandbox, policy(base));
  await Promise.all([sdkSandbox, cliSandbox].map((n) => stack.waitPhase(n, SandboxPhase.READY, 30_000)));
}, 240_000);

afterAll(async () => {
  await proxy?.stop();
  await stack?.stop();
  if (cliDir) rmSync(cliDir, { recursive: true, force: true });
});

describe("a gateway without durable operations", () => {
  it("a waited policy update completes by the policy status the supervisor's answer sets", async () => {
    const res = await stack.client.updatePolicy({ sandbox: sdkSandbox, policy: policy({ ...base, npm: { host: "registry.npmjs.org" } }), wait: { timeoutMs: 15_000 } });
    expect(res.operation).toBeUndefined();
    expect(res.handle.operationId).toBeUndefined();
    expect(res.completion, `see ${stack.logFile}`).toMatchObject({ state: "applied", tracking: "policy-status", target: { kind: "policy-version", policyVersion: res.policyVersion } });
    const status = await stack.raw.getSandboxPolicyStatus({ sandbox: sdkSandbox, version: res.policyVersion, workspaceScope: scope });
    expect(status.revision?.status).toBe(PolicyStatus.LOADED);
    await until(() => stack.effective(sdkSandbox)?.revision?.policyVersion === res.policyVersion, "the supervisor to enforce the new version");
  });

  it("UpdateConfig answers carry no operation, and a repeated idempotency key is ignored: each change is a new revision", async () => {
    const update = (rules: Parameters<typeof policy>[0]) =>
      stack.raw.updateConfig({ sandbox: sdkSandbox, policy: policy(rules), idempotencyKey: "same-key", waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION, workspaceScope: scope });
    const a = await update({ ...base, pypi: { host: "pypi.org" } });
    // A gateway that tracks operations would refuse this key with another payload, then replay `a`.
    const b = await update({ ...base, crates: { host: "crates.io" } });
    const c = await update({ ...base, pypi: { host: "pypi.org" } });
    for (const res of [a, b, c]) expect(res.operation).toBeUndefined();
    expect([b.version - a.version, c.version - b.version]).toEqual([1, 1]);
  });

  it("a revision replaced before any supervisor answered for it is SUPERSEDED, and a wait on its handle says so", async () => {
    const first = await stack.client.updatePolicy({ sandbox: idleSandbox, policy: policy({ ...base, pypi: { host: "pypi.org" } }) });
    const second = await stack.client.updatePolicy({ sandbox: idleSandbox, policy: policy({ ...base, crates: { host: "crates.io" } }) });
    expect(second.policyVersion).toBe(first.policyVersion + 1);
    const status = (version: number) => stack.raw.getSandboxPolicyStatus({ sandbox: idleSandbox, version, workspaceScope: scope });
    expect((await status(first.policyVersion)).revision?.status).toBe(PolicyStatus.SUPERSEDED);
    expect((await status(second.policyVersion)).revision?.status).toBe(PolicyStatus.PENDING);
    expect(await stack.client.awaitCompletion(first.handle, { timeoutMs: 5_000 })).toMatchObject({ state: "superseded", tracking: "policy-status" });
    expect(await stack.client.getOperation(second.handle)).toMatchObject({ state: "pending", tracking: "policy-status" });
  });

  it("GetConfigUpdateOperation, ListConfigUpdateOperations and WatchConfigUpdateOperations answer UNIMPLEMENTED", async () => {
    const code = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => ConnectError.from(err).code);
    expect(await code(stack.raw.getConfigUpdateOperation({ operationId: crypto.randomUUID(), workspaceScope: scope }))).toBe(Code.Unimplemented);
    expect(await code(stack.raw.listConfigUpdateOperations({ sandbox: sdkSandbox, workspaceScope: scope }))).toBe(Code.Unimplemented);
    const watch = async () => {
      for await (const _ of stack.raw.watchConfigUpdateOperations({ sandbox: sdkSandbox, workspaceScope: scope })) return;
    };
    expect(await code(watch())).toBe(Code.Unimplemented);
  });
});

describe("a commit whose answer a proxy drops", () => {
  it("the SDK reports CommitOutcomeUnknownError and the gateway holds exactly one new revision", async () => {
    const before = await versions(sdkSandbox);
    proxy.armNextConnection();
    const dropped = proxy.dropped;
    const err = await proxiedClient().updatePolicy({ sandbox: sdkSandbox, mergeOperations: appendAllow("/repos/sdk") }).catch((e: unknown) => e);
    expect(proxy.dropped).toBe(dropped + 1);
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect((err as Error).message).toBe(
      `the answer to the commit to sandbox "${sdkSandbox}" was lost and this gateway does not track operations, so it may or may not have been committed; check "openshell-config policy history --sandbox ${sdkSandbox}" before sending it again, or pin expectedResourceVersion`,
    );
    expect(await versions(sdkSandbox)).toEqual([...before, before.at(-1)! + 1]);
  });

  it("a waited commit ends the same way, with one new revision", async () => {
    const before = await versions(sdkSandbox);
    proxy.armNextConnection();
    const err = await proxiedClient()
      .updatePolicy({ sandbox: sdkSandbox, mergeOperations: appendAllow("/repos/waited"), wait: { timeoutMs: 10_000 } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect(await versions(sdkSandbox)).toEqual([...before, before.at(-1)! + 1]);
  });

  it("pinned to the resource version, the commit is sent again and refused, as the first attempt moved the sandbox: still one new revision", async () => {
    const sandbox = (await stack.raw.getSandbox({ name: sdkSandbox, workspaceScope: scope })).sandbox!;
    const before = await versions(sdkSandbox);
    proxy.armNextConnection();
    const err = await proxiedClient()
      .updatePolicy({ sandbox: sdkSandbox, mergeOperations: appendAllow("/repos/pinned"), expectedResourceVersion: sandbox.metadata!.resourceVersion })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommitOutcomeUnknownError);
    expect((err as Error).message).toContain(`its retry, pinned to resource version ${sandbox.metadata!.resourceVersion}, was refused because the sandbox changed`);
    expect(await versions(sdkSandbox)).toEqual([...before, before.at(-1)! + 1]);
  });

  it("the CLI exits 1 with the one line and the gateway holds exactly one new revision", async () => {
    const before = await versions(cliSandbox);
    const ops = join(cliDir, "append.yaml");
    writeFileSync(ops, "- addAllowRules: { rules: [{ allow: { method: GET, path: /repos/cli } }], target: { ruleName: github } }\n");
    proxy.armNextConnection();
    const dropped = proxy.dropped;
    const run = await runBinary(["policy", "merge", "--sandbox", cliSandbox, "--file", ops], cliDir, {
      PATH: process.env.PATH,
      HOME: join(cliDir, "home"),
      OPENSHELL_GATEWAY_URL: proxy.url,
      OPENSHELL_TOKEN: stack.adminToken,
    });
    expect(proxy.dropped).toBe(dropped + 1);
    expect(run.code, run.stderr).toBe(1);
    expect(run.stdout).toBe("");
    expect(run.stderr.trimEnd().split("\n")).toEqual([
      `error: the answer to the commit to sandbox "${cliSandbox}" was lost and this gateway does not track operations, so it may or may not have been committed; check "openshell-config policy history --sandbox ${cliSandbox}" before sending it again, or pin expectedResourceVersion`,
    ]);
    expect(await versions(cliSandbox)).toEqual([...before, before.at(-1)! + 1]);
  });

  it("a CLI wait that ends before the outcome points at the policy history, never at a resend, which such a gateway would commit again", async () => {
    const before = await versions(idleSandbox);
    const run = await runBinary(["policy", "merge", "--sandbox", idleSandbox, "--add-rule", "pypi", "--host", "pypi.org", "--port", "443", "--timeout", "1s"], cliDir, {
      PATH: process.env.PATH,
      HOME: join(cliDir, "home"),
      OPENSHELL_GATEWAY_URL: stack.url,
      OPENSHELL_TOKEN: stack.adminToken,
    });
    expect(run.code, run.stderr).toBe(124);
    expect(run.stderr).toMatch(/committed; still pending after 1s \(the gateway tracks no operation for it, and a resend could commit it again\)/);
    expect(run.stderr).toContain(`follow it with: openshell-config policy history --sandbox ${idleSandbox}`);
    expect(run.stderr).not.toContain("resume with:");
    expect(run.stderr).not.toContain("--idempotency-key");
    expect(await versions(idleSandbox)).toEqual([...before, before.at(-1)! + 1]);
  });
});
