// Shared fixtures for RPC tests: a policy, sandbox creation, resolving an operation the way the
// supervisor session will, and a dump of stored state to prove a rejected request changed nothing.

import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { ConnectError } from "@connectrpc/connect";
import {
  ConfigApplyOutcome,
  ConfigUpdateOperationState as State,
  SandboxPolicySchema,
  type SandboxPolicy,
  type UpdateConfigRequestSchema,
  workspaceScope,
} from "openshell-config/raw";
import type { TestGateway } from "./harness.js";

export function policy(rules: Record<string, string> = { github: "api.github.com" }): MessageInitShape<typeof SandboxPolicySchema> {
  return {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp"] },
    process: { runAsUser: "sandbox", runAsGroup: "sandbox" },
    networkPolicies: Object.fromEntries(
      Object.entries(rules).map(([name, host]) => [name, { name, endpoints: [{ host, ports: [443] }], binaries: [{ path: "/usr/bin/curl" }] }]),
    ),
  };
}

export function policyMessage(rules?: Record<string, string>): SandboxPolicy {
  return create(SandboxPolicySchema, policy(rules));
}

export async function createSandbox(gw: TestGateway, name = "dev", options: { workspace?: string; labels?: Record<string, string>; who?: Parameters<TestGateway["raw"]>[0] } = {}) {
  const res = await gw.raw(options.who ?? "admin").createSandbox({
    name,
    labels: options.labels ?? {},
    spec: { policy: policy(), template: { image: "ghcr.io/example/agent:1" } },
    workspaceScope: workspaceScope(options.workspace),
  });
  return res.sandbox!;
}

/** Resolves a pending operation through the gateway's transition path (what a supervisor result does). */
export async function resolve(gw: TestGateway, operationId: string, outcome: ConfigApplyOutcome, error = "") {
  const state =
    outcome === ConfigApplyOutcome.IGNORED_STALE
      ? State.SUPERSEDED
      : outcome === ConfigApplyOutcome.APPLIED || outcome === ConfigApplyOutcome.DEGRADED || outcome === ConfigApplyOutcome.IGNORED_DUPLICATE
        ? State.APPLIED
        : State.FAILED;
  return gw.gateway.transitions.resolve(operationId, { state, outcome, error });
}

/** Every stored row reachable through the store's API, as comparable text. */
export async function dumpState(gw: TestGateway): Promise<string> {
  const store = gw.store;
  const out: unknown[] = [];
  const page = await store.listSandboxes({ workspace: undefined, labels: {}, pageSize: 1000, pageToken: "" });
  for (const sb of page.items) {
    out.push(sb);
    out.push((await store.listPolicyRevisions(sb.id, 1000, "")).items);
    out.push(await store.settings(sb.id));
    // Redelivery bookkeeping (attempts, next attempt, row version, updated time) belongs to the
    // reconciler, which may run between two dumps; everything a caller committed is compared.
    out.push(
      (await store.operationsOfSandbox(sb.id, 1000)).map(({ attemptCount: _a, nextAttemptAt: _n, rowVersion: _r, updatedAt: _u, ...op }) => op),
    );
  }
  out.push(await store.settings(""));
  out.push((await store.listPolicyRevisions("", 1000, "")).items);
  out.push(String(await store.globalSettingsRevision()));
  return JSON.stringify(out, (_k, v) => (typeof v === "bigint" ? `${v}n` : v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v));
}


/** The ConnectError a call fails with; fails the test when the call succeeds. */
export async function rpcError(call: Promise<unknown>): Promise<ConnectError> {
  try {
    await call;
  } catch (err) {
    return ConnectError.from(err);
  }
  throw new Error("expected the call to fail, but it succeeded");
}

/** Polls `check` until it returns a truthy value (or throws after `timeoutMs`). */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 5_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The stored sandbox record (by name, in `workspace`), failing when it does not exist. */
export async function sandboxRecord(gw: TestGateway, name: string, workspace = "default") {
  const sb = await gw.store.sandboxByName(workspace, name);
  if (!sb) throw new Error(`sandbox ${workspace}/${name} not found in the store`);
  return sb;
}

/** Commits `req` commit-only with an idempotency key and returns the operation id (for later waits by replay). */
export async function commitKeyed(gw: TestGateway, req: MessageInitShape<typeof UpdateConfigRequestSchema> & { idempotencyKey: string }) {
  const res = await gw.raw("admin").updateConfig(req);
  if (!res.operation) throw new Error("the gateway returned no operation");
  return res.operation.operationId;
}
