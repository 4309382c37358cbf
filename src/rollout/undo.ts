// The rollback engine: returns every sandbox a rollout changed to what it had before, as its own
// waited update keyed `undo/<id>/<sandbox>`. Right before a sandbox's rollback its desired state
// is checked to still be what the rollout made, and the rollback is sent with the sandbox's
// resource_version read before that check, so check and commit are atomic (ABORTED otherwise,
// then checked again). Each batch's handles are recorded and made durable before the batch is
// sent: a resumed rollback re-sends the identical request with the same key, so a sandbox gets
// exactly one rollback revision.

import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import type { ConfigClient } from "../client.js";
import { CompletionTimeoutError, ConflictError, toSdkError } from "../errors.js";
import { createHandle } from "../refs.js";
import { isOperationHandle, type OperationHandle } from "../handle.js";
import { buildRequest } from "../update.js";
import { ConfigRpc } from "../rpc.js";
import { SettingValueSchema } from "../gen/openshell/sandbox/v1/sandbox_pb.js";
import { fromSettingValue, toSettingValue } from "../convert/setting-value.js";
import { workspaceScope } from "../workspace.js";
import { requestToChange, rolloutKey, undoKey, type RolloutChange } from "./state.js";
import { GetSandboxRpc } from "./select.js";
import { settingKeyOf } from "./before.js";
import { mapLimit } from "./map-limit.js";
import type { SandboxRollback } from "./result.js";
import type { RolloutEvent } from "./events.js";
import type { Plan } from "./plan.js";

/** The annotation that marks a revision as the rollback of a rollout (its value: the rollout id). */
export const ROLLBACK_ANNOTATION = "openshell-config/rollback-of";

const CONFLICT_RETRIES = 3;

type Prepared = { readonly sandbox: string; readonly handle: OperationHandle } | { readonly sandbox: string; readonly done: SandboxRollback };

/** The plain change and fields a recorded rollback handle re-sends. */
function sendHandle(client: ConfigClient, handle: OperationHandle, p: Plan, signal: AbortSignal | undefined) {
  const { change, annotations } = requestToChange(handle.request);
  const erv = (handle.request as JsonObject).expectedResourceVersion;
  const common = {
    sandbox: handle.sandbox,
    idempotencyKey: handle.idempotencyKey,
    ...(handle.workspace !== undefined ? { workspace: handle.workspace } : {}),
    ...(erv !== undefined ? { expectedResourceVersion: BigInt(erv as string) } : {}),
    annotations,
    wait: { ...(p.waitTimeoutMs !== undefined ? { timeoutMs: p.waitTimeoutMs } : {}), ...(signal ? { signal } : {}) },
  };
  if ("key" in change && change.key !== undefined) return client.updateSettings({ ...common, ...change } as Parameters<ConfigClient["updateSettings"]>[0] & { wait: object });
  return client.updatePolicy({ ...common, ...change } as Parameters<ConfigClient["updatePolicy"]>[0] & { wait: object });
}

function sameSetting(a: unknown, b: unknown): boolean {
  const norm = (v: unknown) => (v instanceof Uint8Array ? `b:${[...v].join(",")}` : typeof v === "number" ? `n:${BigInt(v)}` : typeof v === "bigint" ? `n:${v}` : `${typeof v}:${String(v)}`);
  return norm(a) === norm(b);
}

/** The policy version this rollout's commit created for `sandbox` (replaying the commit when the state lacks it). */
async function ourPolicyVersion(client: ConfigClient, p: Plan, sandbox: string, signal: AbortSignal | undefined): Promise<number> {
  const ref = p.refs[sandbox];
  if (ref?.policyVersion !== undefined) return ref.policyVersion;
  // Commit only, with the rollout's key: replays the commit (sent before a crash) and tells its version.
  const r = await client.updatePolicy({
    sandbox,
    idempotencyKey: rolloutKey(p.id, sandbox),
    ...(p.workspace !== undefined ? { workspace: p.workspace } : {}),
    ...(p.annotations !== undefined ? { annotations: p.annotations } : {}),
    ...(signal ? { signal } : {}),
    ...(p.change as Extract<RolloutChange, { policy?: unknown }>),
  });
  return r.policyVersion;
}

/**
 * Checks one sandbox and builds its rollback request: `done` when it is left alone (changed by
 * others, no earlier revision) or cannot be rolled back.
 */
async function prepare(client: ConfigClient, p: Plan, sandbox: string, signal: AbortSignal | undefined): Promise<Prepared> {
  try {
    const before = p.before[sandbox];
    if (before === undefined) return { sandbox, done: { status: "error", error: new Error(`no before-state of ${sandbox} was recorded`) } };
    const key = settingKeyOf(p.change);
    if (key === undefined && before.policyVersion === undefined) return { sandbox, done: { status: "no-earlier-revision" } };
    const ws = p.workspace !== undefined ? { workspace: p.workspace } : {};
    const call = signal ? { signal } : {};
    // resource_version first: anything committed after this read makes the rollback ABORTED.
    const sb = await client.raw(GetSandboxRpc).getSandbox({ name: sandbox, workspaceScope: workspaceScope(p.workspace) }, call);
    const resourceVersion = sb.sandbox?.metadata?.resourceVersion ?? 0n;
    const cfg = await client.getConfig({ sandbox, ...ws, ...call });
    let change: RolloutChange;
    if (key !== undefined) {
      const cur = cfg.desired.settings[key];
      const mine = "value" in p.change && p.change.value !== undefined ? p.change.value : undefined;
      const ours = mine === undefined ? cur?.scope !== "sandbox" : cur?.scope === "sandbox" && sameSetting(cur.value, fromSettingValue(toSettingValue(mine)));
      if (!ours) return { sandbox, done: { status: "changed-by-others", detail: `setting ${key} is no longer what this rollout set` } };
      change = before.settingValue === undefined ? { key, delete: true } : { key, value: fromSettingValue(fromJson(SettingValueSchema, before.settingValue))! };
    } else {
      const mine = await ourPolicyVersion(client, p, sandbox, signal);
      if (cfg.desired.policyVersion !== mine) {
        return { sandbox, done: { status: "changed-by-others", detail: `desired policy is v${cfg.desired.policyVersion}, this rollout made v${mine}` } };
      }
      const status = await client.raw(ConfigRpc).getSandboxPolicyStatus({ sandbox, version: before.policyVersion!, workspaceScope: workspaceScope(p.workspace) }, call);
      const policy = status.revision?.policy;
      if (!policy) return { sandbox, done: { status: "error", error: new Error(`the gateway did not return policy v${before.policyVersion} of ${sandbox}`) } };
      change = { policy };
    }
    const request = buildRequest(
      { sandbox, idempotencyKey: undoKey(p.id, sandbox), workspace: p.workspace, expectedResourceVersion: resourceVersion, annotations: { ...p.annotations, [ROLLBACK_ANNOTATION]: p.id } },
      change,
    );
    return { sandbox, handle: createHandle(request, { operationId: undefined, workspace: p.workspace, policyVersion: undefined }) };
  } catch (err) {
    return { sandbox, done: { status: "error", error: toSdkError(err) } };
  }
}

/** Sends one recorded rollback and waits; a ConflictError (someone committed meanwhile) is returned as such. */
async function send(client: ConfigClient, p: Plan, handle: OperationHandle, signal: AbortSignal | undefined): Promise<SandboxRollback | ConflictError> {
  try {
    const { completion, handle: committed } = await sendHandle(client, handle, p, signal);
    p.undoRefs[handle.sandbox] = committed;
    return { status: "completed", completion, handle: committed };
  } catch (err) {
    if (err instanceof CompletionTimeoutError) {
      if (isOperationHandle(err.ref)) p.undoRefs[handle.sandbox] = err.ref;
      return { status: "pending", handle: p.undoRefs[handle.sandbox]! };
    }
    const e = toSdkError(err);
    return e instanceof ConflictError ? e : { status: "error", error: e };
  }
}

/**
 * Rolls back every sandbox in `sandboxes` (those the rollout changed), `p.concurrency` per batch.
 * `persist` is awaited after a batch's handles are recorded in `p.undoRefs` and before any is sent.
 */
export async function runUndo(
  client: ConfigClient,
  p: Plan,
  sandboxes: readonly string[],
  opts: { readonly signal: AbortSignal | undefined; readonly emit: (e: RolloutEvent) => void; readonly persist: () => Promise<void> },
): Promise<Map<string, SandboxRollback>> {
  const out = new Map<string, SandboxRollback>();
  const settle = (sandbox: string, rb: SandboxRollback) => {
    out.set(sandbox, rb);
    opts.emit({ type: "rollback-result", sandbox, rollback: rb });
  };
  let todo = [...sandboxes];
  for (let attempt = 0; todo.length > 0; attempt++) {
    const conflicted: string[] = [];
    for (let i = 0; i < todo.length; i += p.concurrency) {
      const batch = todo.slice(i, i + p.concurrency);
      if (opts.signal?.aborted) {
        for (const s of batch) settle(s, p.undoRefs[s] ? { status: "pending", handle: p.undoRefs[s] } : { status: "error", error: toSdkError(opts.signal.reason) });
        continue;
      }
      // A recorded rollback is re-sent as it was (same key, same resource version): it replays.
      const prepared = await mapLimit(batch, p.concurrency, async (s): Promise<Prepared> =>
        p.undoRefs[s] && attempt === 0 ? { sandbox: s, handle: p.undoRefs[s] } : prepare(client, p, s, opts.signal),
      );
      for (const x of prepared) {
        if ("handle" in x) p.undoRefs[x.sandbox] = x.handle;
        // After a conflict nothing was committed under the recorded handle: drop it.
        else if (attempt > 0) delete p.undoRefs[x.sandbox];
      }
      if (prepared.some((x) => "handle" in x)) await opts.persist();
      await mapLimit(prepared, p.concurrency, async (x) => {
        if (!("handle" in x)) return settle(x.sandbox, x.done);
        const r = await send(client, p, x.handle, opts.signal);
        if (!(r instanceof ConflictError)) return settle(x.sandbox, r);
        // Nothing was committed under the key: check again (with a fresh resource version).
        if (attempt < CONFLICT_RETRIES) conflicted.push(x.sandbox);
        else settle(x.sandbox, { status: "error", error: r });
      });
    }
    todo = conflicted;
  }
  return out;
}
