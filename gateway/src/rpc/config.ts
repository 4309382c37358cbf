// UpdateConfig: validate, commit in one transaction, announce, then (optionally) wait for the
// exact operation without holding any transaction. Also the request fingerprint that makes
// idempotency keys safe.

import { createHash, randomUUID } from "node:crypto";
import { clone } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  ConfigUpdateWaitMode,
  UpdateConfigRequestSchema,
  UpdateConfigResponseSchema,
  type UpdateConfigRequest,
  type UpdateConfigResponse,
} from "openshell-config/raw";
import { canonicalMessageJson } from "../model/canonical-json.js";
import { canonicalPolicyJson } from "../model/policy.js";
import { toOperation } from "../model/convert.js";
import { commitSandboxUpdate } from "../operations/commit-update.js";
import { commitGlobalUpdate } from "../operations/commit-global.js";
import { isTerminalState } from "../operations/states.js";
import { assertWorkspace, requireAdmin, requirePlatformAdmin, singleWorkspace } from "./access.js";
import type { GatewayDeps } from "./deps.js";
import type { WaitStart } from "../operations/waiters.js";

const MAX_KEY_BYTES = 256;
/** Longest setting key (a review stored a 100 KB one): the same bound as idempotency keys. */
const MAX_SETTING_KEY_BYTES = 256;
/**
 * Characters an idempotency key or a setting key may not contain: controls, format characters (zero-width and
 * bidi marks), surrogates, private-use and unassigned code points, line separators, and U+FFFD
 * (what invalid UTF-8 decodes to). Two keys that print alike must be the same key.
 */
const KEY_FORBIDDEN = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\uFFFD]/u;
/** request_id (§3.3): empty, or a non-nil UUID in its 36-character form. */
const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

function checkPrintable(field: string, key: string): void {
  const bad = KEY_FORBIDDEN.exec(key);
  if (bad) {
    const code = bad[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
    throw invalid(`${field} must contain only printable characters (U+${code} at index ${bad.index})`);
  }
}

/** Checks everything that needs no database, in upstream's order. */
export function validateUpdate(req: UpdateConfigRequest): void {
  if (!(req.waitMode in ConfigUpdateWaitMode)) throw invalid(`wait_mode: unknown configuration update wait mode ${req.waitMode}`);
  const wt = req.waitTimeout;
  if (wt && (wt.seconds < 0n || wt.nanos < 0)) throw invalid("wait_timeout must be a nonnegative duration");
  if (Buffer.byteLength(req.idempotencyKey, "utf8") > MAX_KEY_BYTES) throw invalid("idempotency_key exceeds 256 bytes");
  if (req.idempotencyKey.trim() !== req.idempotencyKey) {
    throw invalid("idempotency_key must not have leading or trailing whitespace");
  }
  checkPrintable("idempotency_key", req.idempotencyKey);
  // A key over the bound may still be deleted: one stored before the bound existed.
  if (req.settingKey !== "" && !req.deleteSetting) {
    if (Buffer.byteLength(req.settingKey, "utf8") > MAX_SETTING_KEY_BYTES) throw invalid(`setting_key exceeds ${MAX_SETTING_KEY_BYTES} bytes`);
    if (req.settingKey.trim() !== req.settingKey) throw invalid("setting_key must not have leading or trailing whitespace");
    checkPrintable("setting_key", req.settingKey);
  }
  if (req.requestId !== "" && (!REQUEST_ID.test(req.requestId) || /^[0-]+$/.test(req.requestId))) {
    throw invalid("request_id must be a non-nil UUID");
  }
  const kinds = [req.policy !== undefined, req.settingKey !== "", req.mergeOperations.length > 0].filter(Boolean).length;
  if (kinds > 1) throw invalid("policy, setting_key, and merge_operations are mutually exclusive");
  if (kinds === 0) throw invalid("one of policy, setting_key or merge_operations is required");
  if (req.deleteSetting && req.settingKey === "") throw invalid("delete_setting requires setting_key");
  if (req.deleteSetting && req.settingValue !== undefined) throw invalid("setting_value and delete_setting are mutually exclusive");
  for (const key of Object.keys(req.annotations)) {
    if (key === "") throw invalid("annotations must not have an empty key");
  }
  if (req.global) {
    if (req.sandbox !== "" || req.workspaceScope !== undefined) {
      throw invalid("sandbox and workspace must be omitted when global is true");
    }
    if (req.waitMode === ConfigUpdateWaitMode.WAIT_FOR_COMPLETION) {
      throw invalid("wait_mode WAIT_FOR_COMPLETION is only supported for sandbox-scoped updates");
    }
    if (req.idempotencyKey !== "") throw invalid("idempotency_key is only supported for sandbox-scoped updates");
    if (Object.keys(req.annotations).length > 0) throw invalid("annotations are only supported for sandbox-scoped updates");
    if (req.mergeOperations.length > 0) throw invalid("merge_operations are only supported for sandbox-scoped updates");
  } else if (req.sandbox === "") {
    throw invalid("sandbox is required");
  }
}

/** SHA-256 of the canonical request without the fields a retry may change (wait settings, request_id). */
export function requestFingerprint(req: UpdateConfigRequest): string {
  return fingerprintOf(req).fingerprint;
}

/**
 * `requestFingerprint`, and the policy's canonical JSON it contains (what `policyHash` hashes),
 * so that the commit need not write the policy as JSON a second time.
 */
function fingerprintOf(req: UpdateConfigRequest): { fingerprint: string; policyJson: string | undefined } {
  // A shallow copy is enough: the writer only reads it (a deep clone would copy the whole policy).
  const c: UpdateConfigRequest = { ...req, waitMode: ConfigUpdateWaitMode.UNSPECIFIED, waitTimeout: undefined, requestId: "" };
  // The policy is written once: its text is the same nested as alone.
  const policyJson = req.policy ? canonicalPolicyJson(req.policy) : undefined;
  const raw = req.policy && policyJson !== undefined ? new Map([[req.policy, policyJson]]) : undefined;
  return { fingerprint: createHash("sha256").update(canonicalMessageJson(UpdateConfigRequestSchema, c, raw)).digest("hex"), policyJson };
}

function waitMs(req: UpdateConfigRequest, deps: GatewayDeps): number {
  const wt = req.waitTimeout;
  const ms = wt ? Number(wt.seconds) * 1000 + Math.floor(wt.nanos / 1e6) : 0;
  // A sub-millisecond request still means "wait a little", not "use the default".
  if (ms === 0 && wt && (wt.seconds > 0n || wt.nanos > 0)) return 1;
  return ms === 0 ? deps.waitDefaultMs : Math.min(ms, deps.waitMaxMs);
}

/**
 * UpdateConfig as an upstream release before durable operations (#3273) answers it, for a gateway
 * created with `trackOperations: false`: such a release does not know request_id, wait_mode,
 * idempotency_key or wait_timeout (proto fields 11 to 114), so they are dropped unread. The
 * change commits at once with no operation, and every request that changes something makes a new
 * revision, a resend with the same key included.
 */
export async function updateConfigUntracked(deps: GatewayDeps, req: UpdateConfigRequest, ctx: HandlerContext): Promise<UpdateConfigResponse> {
  const plain: UpdateConfigRequest = { ...req, requestId: "", waitMode: ConfigUpdateWaitMode.UNSPECIFIED, waitTimeout: undefined, idempotencyKey: "" };
  return updateConfig(deps, plain, ctx, false);
}

export async function updateConfig(deps: GatewayDeps, req: UpdateConfigRequest, ctx: HandlerContext, trackOperation = true): Promise<UpdateConfigResponse> {
  // Who may ask comes before what is asked: a caller without the role learns nothing more.
  const principal = req.global ? requirePlatformAdmin(ctx) : requireAdmin(ctx);
  validateUpdate(req);
  if (req.global) {
    const response = await commitGlobalUpdate(deps, req);
    deps.desired?.invalidateGlobal();
    deps.publish();
    return response;
  }
  const workspace = singleWorkspace(req.workspaceScope);
  assertWorkspace(principal, workspace, `sandbox "${req.sandbox}"`);

  const { fingerprint, policyJson } = fingerprintOf(req);
  if (!trackOperation) return commitUntracked(deps, req, principal.name, workspace, fingerprint, policyJson);
  // A waited update listens to its operation before committing it: the wait then needs no read.
  const waits = req.waitMode === ConfigUpdateWaitMode.WAIT_FOR_COMPLETION;
  const start = waits ? deps.waiters.listen(randomUUID()) : undefined;
  try {
    return await commitAndWait(deps, req, ctx, principal.name, workspace, fingerprint, policyJson, start);
  } finally {
    start?.close();
  }
}

async function commitUntracked(
  deps: GatewayDeps,
  req: UpdateConfigRequest,
  principal: string,
  workspace: string,
  fingerprint: string,
  policyJson: string | undefined,
): Promise<UpdateConfigResponse> {
  const result = await commitSandboxUpdate(deps.store, workspace, req, fingerprint, {
    desired: deps.desired,
    policyJson,
    trackOperation: false,
    maxSnapshotBytes: deps.maxSnapshotBytes,
  });
  if (result.policy) deps.desired?.committedPolicy(result.policy.record, result.policy.decoded);
  deps.transitions.announce(result.touched);
  deps.publish(result.sandbox.id, result.pending ? { sandbox: result.sandbox, pending: result.pending } : undefined);
  deps.logger.info({ sandbox: req.sandbox, workspace, changed: result.changed, principal, untracked: true }, "update committed");
  return clone(UpdateConfigResponseSchema, result.response);
}

async function commitAndWait(
  deps: GatewayDeps,
  req: UpdateConfigRequest,
  ctx: HandlerContext,
  principal: string,
  workspace: string,
  fingerprint: string,
  policyJson: string | undefined,
  start: WaitStart | undefined,
): Promise<UpdateConfigResponse> {
  const result = await commitSandboxUpdate(deps.store, workspace, req, fingerprint, {
    desired: deps.desired,
    policyJson,
    operationId: start?.id,
    maxSnapshotBytes: deps.maxSnapshotBytes,
  });
  // Present: this path tracks operations.
  const committed = result.operation!;
  // Durable now: the next snapshot of this revision may use the policy as committed.
  if (result.policy) deps.desired?.committedPolicy(result.policy.record, result.policy.decoded);
  deps.transitions.announce(result.touched);
  deps.publish(result.sandbox.id, result.pending ? { sandbox: result.sandbox, pending: result.pending } : undefined);
  deps.logger.info(
    {
      sandbox: req.sandbox,
      workspace,
      operationId: committed.id,
      replayed: result.replayed,
      changed: result.changed,
      principal,
    },
    result.replayed ? "update replayed" : "update committed",
  );

  let operation = committed;
  if (req.waitMode === ConfigUpdateWaitMode.WAIT_FOR_COMPLETION && !isTerminalState(operation.state)) {
    const started = performance.now();
    try {
      // A replay answers with an earlier operation, which `start` did not listen to.
      const from = start && operation.id === start.id ? { start, current: operation } : undefined;
      operation = await deps.waiters.waitFor(operation.id, waitMs(req, deps), ctx.signal, from);
    } finally {
      deps.observeWait((performance.now() - started) / 1000);
    }
  } else if (result.replayed) {
    operation = (await deps.store.operation(operation.id)) ?? operation;
  }
  const response = clone(UpdateConfigResponseSchema, result.response);
  response.operation = toOperation(operation);
  return response;
}

