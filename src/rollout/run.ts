// The rollout engine: one change to many sandboxes through the SDK's public client. A pool of
// `concurrency` workers commits each sandbox's change with a key derived from the rollout id and
// waits for that exact revision's outcome. After `maxFailures` failed or cancelled sandboxes no
// new sandbox is committed (canary behaviour); changes already sent are still awaited. Resuming
// (the same id, or the saved state) re-sends the same keys, so a committed sandbox replays its
// original operation and never gets a second revision.

import type { ConfigClient } from "../client.js";
import { CompletionTimeoutError, InvalidArgumentError, toSdkError } from "../errors.js";
import { createHandle } from "../refs.js";
import { isOperationHandle, type OperationHandle } from "../handle.js";
import type { PolicyMergeOperationInput, SandboxPolicyInput, SettingChange } from "../change.js";
import { buildRequest, newIdempotencyKey } from "../update.js";
import {
  ROLLOUT_KIND,
  changeToRequestJson,
  checkCount,
  requestToChange,
  restoreRolloutState,
  rolloutKey,
  validateRolloutId,
  type RolloutChange,
  type RolloutState,
} from "./state.js";
import { checkSandboxNames, normalizeSelector, selectByLabels } from "./select.js";
import { countResults, isFailure, slowestOf, type RolloutResult, type SandboxRolloutResult } from "./result.js";
import { createEventLog, type RolloutEvent } from "./events.js";

/** Options of `client.rollout`. Name the targets (`sandboxes` or `labelSelector`) and the change, or pass `resume`. */
export interface RolloutOptions {
  /** The rollout id keys are derived from. Default: a fresh UUID. Run again with the same id (and change) to resume. */
  readonly id?: string;
  /** The target sandbox names. Give this or `labelSelector`. */
  readonly sandboxes?: readonly string[];
  /** `k=v,k2=v2`: every sandbox of the workspace with these labels, chosen once when the rollout starts. */
  readonly labelSelector?: string;
  /** The workspace of the sandboxes; defaults to the client's. */
  readonly workspace?: string;
  /** A complete policy for every sandbox. Give exactly one of `policy`, `mergeOperations` and `settings`. */
  readonly policy?: SandboxPolicyInput;
  /** Policy merge operations applied to each sandbox's current policy. */
  readonly mergeOperations?: readonly PolicyMergeOperationInput[];
  /** One setting upsert (`{ key, value }`) or delete (`{ key, delete: true }`). */
  readonly settings?: SettingChange;
  /** Non-secret provenance stored with every revision. */
  readonly annotations?: Readonly<Record<string, string>>;
  /** Sandboxes committed and awaited at once. Default 16. */
  readonly concurrency?: number;
  /** Stop committing new sandboxes once this many failed, were cancelled or errored. Default: never stop. */
  readonly maxFailures?: number;
  /** The local bound on each sandbox's wait, in ms. Default: the client's (60 s). A sandbox past it is `pending`. */
  readonly waitTimeoutMs?: number;
  /**
   * A saved `RolloutState` (e.g. `restoreRolloutState(text)`) to continue: its id, targets, change
   * and commits. Then give no targets or change; `concurrency`, `maxFailures` and `waitTimeoutMs` override the saved ones.
   */
  readonly resume?: RolloutState;
  /** Stops committing and ends the waits: sandboxes already sent are reported `pending`, the rest `skipped`. */
  readonly signal?: AbortSignal;
  /** Called with every event (a throwing callback is ignored). */
  readonly onProgress?: (event: RolloutEvent) => void;
}

/**
 * A running rollout: await it for the result, or iterate it for events (ending with
 * `finished`). Starts as soon as it is created.
 */
export interface RolloutRun extends PromiseLike<RolloutResult>, AsyncIterable<RolloutEvent> {
  /** The rollout id. */
  readonly id: string;
  /** The result; rejects only when the targets could not be chosen (e.g. ListSandboxes failed). */
  readonly result: Promise<RolloutResult>;
  /** The state so far, plain JSON: save it to resume in another process. */
  state(): RolloutState;
}

const DEFAULT_CONCURRENCY = 16;

interface Plan {
  id: string;
  workspace: string | undefined;
  labelSelector: string | undefined;
  names: readonly string[] | undefined;
  requestJson: RolloutState["request"];
  change: RolloutChange;
  annotations: Readonly<Record<string, string>> | undefined;
  concurrency: number;
  maxFailures: number | undefined;
  waitTimeoutMs: number | undefined;
  refs: Record<string, OperationHandle>;
}

/** Validates options into a plan; throws InvalidArgumentError naming the field. */
function plan(options: RolloutOptions, clientWorkspace: string | undefined): Plan {
  const concurrency = checkCount(options.concurrency ?? options.resume?.concurrency ?? DEFAULT_CONCURRENCY, "concurrency", 1);
  const maxFailures = options.maxFailures ?? options.resume?.maxFailures;
  if (maxFailures !== undefined && maxFailures !== Infinity) checkCount(maxFailures, "maxFailures", 1);
  const waitTimeoutMs = options.waitTimeoutMs ?? options.resume?.waitTimeoutMs;
  if (waitTimeoutMs !== undefined && !(waitTimeoutMs >= 0)) {
    throw new InvalidArgumentError("waitTimeoutMs must be a non-negative number", { field: "waitTimeoutMs" });
  }
  const limits = { concurrency, maxFailures: maxFailures === Infinity ? undefined : maxFailures, waitTimeoutMs };

  if (options.resume !== undefined) {
    for (const f of ["id", "sandboxes", "labelSelector", "workspace", "policy", "mergeOperations", "settings", "annotations"] as const) {
      if (options[f] !== undefined) throw new InvalidArgumentError(`${f} comes from resume; do not give it again`, { field: f });
    }
    const s = restoreRolloutState(options.resume);
    const { change, annotations } = requestToChange(s.request);
    return { ...limits, id: s.id, workspace: s.workspace, labelSelector: s.labelSelector, names: s.sandboxes, requestJson: s.request, change, annotations, refs: { ...s.refs } };
  }

  const id = options.id === undefined ? newIdempotencyKey() : validateRolloutId(options.id);
  if ((options.sandboxes === undefined) === (options.labelSelector === undefined)) {
    throw new InvalidArgumentError("give exactly one of sandboxes and labelSelector", { field: "sandboxes" });
  }
  const names = options.sandboxes === undefined ? undefined : checkSandboxNames(options.sandboxes);
  const labelSelector = options.labelSelector === undefined ? undefined : normalizeSelector(options.labelSelector);
  const given = (["policy", "mergeOperations", "settings"] as const).filter((f) => options[f] !== undefined);
  if (given.length !== 1) {
    throw new InvalidArgumentError("give exactly one of policy, mergeOperations and settings", { field: given[1] ?? "policy" });
  }
  const change: RolloutChange =
    options.policy !== undefined
      ? { policy: options.policy }
      : options.mergeOperations !== undefined
        ? { mergeOperations: options.mergeOperations }
        : options.settings!;
  // The client's workspace when none is named, fixed in the state: the sandboxes are listed, the
  // changes committed and a resumed rollout replayed in the same one.
  const workspace = options.workspace ?? clientWorkspace;
  const requestJson = changeToRequestJson(change, { workspace, annotations: options.annotations });
  return { ...limits, id, workspace, labelSelector, names, requestJson, change, annotations: options.annotations, refs: {} };
}

/** Starts a rollout with `client`. Throws InvalidArgumentError (naming the field) before anything is sent. */
export function startRollout(client: ConfigClient, options: RolloutOptions): RolloutRun {
  const p = plan(options, client.workspace);
  const log = createEventLog(options.onProgress);
  let targets: readonly string[] = p.names ?? [];
  const state = (): RolloutState => ({
    kind: ROLLOUT_KIND,
    id: p.id,
    ...(p.workspace !== undefined ? { workspace: p.workspace } : {}),
    ...(p.labelSelector !== undefined ? { labelSelector: p.labelSelector } : {}),
    request: p.requestJson,
    concurrency: p.concurrency,
    ...(p.maxFailures !== undefined ? { maxFailures: p.maxFailures } : {}),
    ...(p.waitTimeoutMs !== undefined ? { waitTimeoutMs: p.waitTimeoutMs } : {}),
    sandboxes: [...targets],
    refs: { ...p.refs },
  });

  const result = (async (): Promise<RolloutResult> => {
    // No event before rollout() has returned its run: a callback may use the run.
    await Promise.resolve();
    const started = Date.now();
    if (p.names === undefined) targets = await selectByLabels(client, p.labelSelector!, p.workspace, options.signal);
    log.push({ type: "started", id: p.id, sandboxes: [...targets], alreadyCommitted: targets.filter((t) => p.refs[t]).length });
    const { results, halted } = await runPool(client, p, targets, options.signal, log.push);
    const failures = results.filter(isFailure).length;
    const counts = countResults(results, targets.length);
    const out: RolloutResult = {
      id: p.id,
      sandboxes: results,
      counts,
      failures,
      halted,
      aborted: options.signal?.aborted === true,
      complete: counts.byStatus.completed === targets.length,
      slowest: slowestOf(results),
      durationMs: Date.now() - started,
      state: state(),
    };
    log.push({ type: "finished", result: out });
    return out;
  })();
  result.then(
    () => log.close(),
    (error: unknown) => log.close({ error }),
  );
  // Iterating is an alternative to awaiting: an unobserved rejection must not crash the process.
  result.catch(() => {});

  return {
    id: p.id,
    result,
    state,
    then: (onFulfilled, onRejected) => result.then(onFulfilled, onRejected),
    [Symbol.asyncIterator]: () => log.iterate(),
  };
}

/** Commits and awaits every target with at most `p.concurrency` in flight; results in target order. */
async function runPool(
  client: ConfigClient,
  p: Plan,
  targets: readonly string[],
  signal: AbortSignal | undefined,
  emit: (e: RolloutEvent) => void,
): Promise<{ results: SandboxRolloutResult[]; halted: boolean }> {
  const results: SandboxRolloutResult[] = new Array(targets.length);
  let next = 0;
  let done = 0;
  let failures = 0;
  let halted = false;

  const finish = (i: number, r: SandboxRolloutResult) => {
    results[i] = r;
    done++;
    if (isFailure(r)) failures++;
    emit({ type: "result", result: r, progress: { done, total: targets.length, failures } });
    if (!halted && p.maxFailures !== undefined && failures >= p.maxFailures) {
      halted = true;
      emit({ type: "halted", failures, maxFailures: p.maxFailures });
    }
  };

  const one = async (i: number) => {
    const sandbox = targets[i]!;
    const sentBefore = p.refs[sandbox] !== undefined;
    if (!sentBefore && (halted || signal?.aborted)) {
      return finish(i, { status: "skipped", sandbox, reason: signal?.aborted ? "aborted" : "halted" });
    }
    if (signal?.aborted) return finish(i, { status: "pending", sandbox, handle: p.refs[sandbox]!, reason: "aborted", durationMs: 0 });
    // Recorded before sending: from here on a resume re-sends this sandbox's change (with the same
    // key, so at most one revision) even after a halt, as this run meant to commit it.
    const sent = p.refs[sandbox] ?? sentHandle(p, sandbox);
    p.refs[sandbox] = sent;
    emit({ type: "sent", sandbox, handle: sent });
    const t0 = Date.now();
    try {
      const { completion, handle } = await commitAndWait(client, p, sandbox, signal);
      p.refs[sandbox] = handle;
      finish(i, { status: "completed", sandbox, completion, handle, durationMs: Date.now() - t0 });
    } catch (err) {
      const durationMs = Date.now() - t0;
      if (err instanceof CompletionTimeoutError) {
        if (isOperationHandle(err.ref)) p.refs[sandbox] = err.ref;
        return finish(i, { status: "pending", sandbox, handle: p.refs[sandbox]!, reason: err.reason, durationMs });
      }
      // Refused by the gateway (e.g. no such sandbox): nothing was committed by this send.
      if (!sentBefore) delete p.refs[sandbox];
      finish(i, { status: "error", sandbox, error: toSdkError(err), handle: p.refs[sandbox], durationMs });
    }
  };

  const worker = async () => {
    while (next < targets.length) await one(next++);
  };
  await Promise.all(Array.from({ length: Math.min(p.concurrency, targets.length) }, worker));
  return { results, halted };
}

/** A handle for a change about to be sent: re-sending it replays (or makes) the one commit. */
function sentHandle(p: Plan, sandbox: string): OperationHandle {
  const request = buildRequest(
    { sandbox, idempotencyKey: rolloutKey(p.id, sandbox), workspace: p.workspace, annotations: p.annotations },
    p.change,
  );
  return createHandle(request, { operationId: undefined, workspace: p.workspace, policyVersion: undefined });
}

/**
 * Commits one sandbox's change and waits for its outcome in one request (the gateway's own wait),
 * or replays the commit made by an earlier run. One unary call per sandbox: no stream per
 * sandbox, whose cancellation a server could count as a reset flood.
 */
function commitAndWait(client: ConfigClient, p: Plan, sandbox: string, signal: AbortSignal | undefined) {
  const common = {
    sandbox,
    idempotencyKey: rolloutKey(p.id, sandbox),
    ...(p.workspace !== undefined ? { workspace: p.workspace } : {}),
    ...(p.annotations !== undefined ? { annotations: p.annotations } : {}),
    wait: { ...(p.waitTimeoutMs !== undefined ? { timeoutMs: p.waitTimeoutMs } : {}), ...(signal ? { signal } : {}) },
  };
  const c = p.change;
  if ("key" in c && c.key !== undefined) return client.updateSettings({ ...common, ...c } as Parameters<ConfigClient["updateSettings"]>[0] & { wait: object });
  return client.updatePolicy({ ...common, ...c } as Parameters<ConfigClient["updatePolicy"]>[0] & { wait: object });
}
