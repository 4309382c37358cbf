// Reading and acting on shared rollouts by id, from any process: list, get, watch, approve,
// resume and undo. Acting takes the record's lease first (record-sync.ts), so a live driver
// elsewhere refuses the second one, and a dead one's rollout is taken over once its lease runs out.

import { Code, ConnectError } from "@connectrpc/connect";
import type { ConfigClient } from "../client.js";
import { FailedPreconditionError, InvalidArgumentError, toSdkError } from "../errors.js";
import { allWorkspacesScope, workspaceScope } from "../workspace.js";
import { RolloutView } from "../gen/openshell/v1/rollouts_pb.js";
import { phaseNumber, fromRecord, type SharedRollout } from "./shared-rollout.js";
import { recordClient, DEFAULT_LEASE_TTL_MS, type ShareOptions } from "./record-sync.js";
import { RolloutLeaseHeldError, SharedRolloutsUnsupportedError } from "./record-errors.js";
import { startRollout, type RolloutRun } from "./run.js";
import type { RolloutOptions } from "./plan.js";
import type { RolloutStatePhase } from "./state.js";
import { validateRolloutId } from "./state.js";

/** Options of `listRollouts`. */
export interface ListRolloutsOptions {
  /** A workspace, or "*" for every workspace the caller may see. Default: the client's. */
  readonly workspace?: string;
  /** Only these phases. */
  readonly phases?: readonly RolloutStatePhase[];
  /** Only rollouts chosen with exactly this label selector. */
  readonly labelSelector?: string;
  /** At most this many (default 50, at most 500). */
  readonly pageSize?: number;
  /** A previous page's `nextPageToken`. */
  readonly pageToken?: string;
  /** Cancels the request. */
  readonly signal?: AbortSignal;
}

/** A page of shared rollouts, newest first. */
export interface RolloutPage {
  /** The rollouts (summary: no `state`). */
  readonly rollouts: readonly SharedRollout[];
  /** The next page's token; undefined on the last page. */
  readonly nextPageToken: string | undefined;
}

/** Options of the calls that read one rollout. */
export interface RolloutReadOptions {
  /** The rollout's workspace. Default: the client's. */
  readonly workspace?: string;
  /** Cancels the request (or ends the watch). */
  readonly signal?: AbortSignal;
}

/** Options of `approveRollout` and `resumeRollout`: run-time knobs of the resumed run, and its lease. */
export type ResumeOptions = Pick<RolloutOptions, "concurrency" | "maxFailures" | "waitTimeoutMs" | "signal" | "onProgress" | "onState"> &
  Pick<ShareOptions, "driver" | "leaseTtlMs"> & {
    /** The rollout's workspace. Default: the client's. */
    readonly workspace?: string;
  };

/** What a gateway offers beyond upstream OpenShell, as far as rollouts are concerned. */
export interface RolloutCapabilities {
  /** It keeps shared rollout records: `listRollouts` and friends work, and rollouts are visible to everyone. */
  readonly sharedRollouts: boolean;
}

const scopeOf = (client: ConfigClient, workspace: string | undefined) => workspaceScope(workspace ?? client.workspace);

const mapError = (err: unknown): Error =>
  ConnectError.from(err).code === Code.Unimplemented ? new SharedRolloutsUnsupportedError({ cause: err }) : toSdkError(err);

/** Whether the gateway keeps shared rollout records (one cheap call: ListRollouts of one). */
export async function getRolloutCapabilities(client: ConfigClient, options: { signal?: AbortSignal } = {}): Promise<RolloutCapabilities> {
  try {
    await recordClient(client).listRollouts({ workspaceScope: scopeOf(client, undefined), pageSize: 1 }, { signal: options.signal });
    return { sharedRollouts: true };
  } catch (err) {
    const code = ConnectError.from(err).code;
    if (code === Code.Unimplemented) return { sharedRollouts: false };
    throw toSdkError(err);
  }
}

/** Shared rollouts of a workspace (or all), newest first. Throws SharedRolloutsUnsupportedError against a gateway without records. */
export async function listRollouts(client: ConfigClient, options: ListRolloutsOptions = {}): Promise<RolloutPage> {
  const pageSize = options.pageSize ?? 50;
  if (!Number.isSafeInteger(pageSize) || pageSize < 1) throw new InvalidArgumentError("pageSize must be a positive integer", { field: "pageSize" });
  try {
    const res = await recordClient(client).listRollouts(
      {
        workspaceScope: options.workspace === "*" ? allWorkspacesScope() : scopeOf(client, options.workspace),
        phases: (options.phases ?? []).map(phaseNumber),
        labelSelector: options.labelSelector ?? "",
        pageSize,
        pageToken: options.pageToken ?? "",
      },
      { signal: options.signal },
    );
    return { rollouts: res.rollouts.map(fromRecord), nextPageToken: res.nextPageToken === "" ? undefined : res.nextPageToken };
  } catch (err) {
    throw mapError(err);
  }
}

/** One shared rollout with its full state. NotFoundError when there is none (or it is in a workspace the caller cannot see). */
export async function getRollout(client: ConfigClient, id: string, options: RolloutReadOptions = {}): Promise<SharedRollout> {
  validateRolloutId(id);
  try {
    const res = await recordClient(client).getRollout({ workspaceScope: scopeOf(client, options.workspace), id, view: RolloutView.FULL }, { signal: options.signal });
    return fromRecord(res.rollout!);
  } catch (err) {
    throw mapError(err);
  }
}

/** The rollout now, then again at every change, until `signal` aborts (then it just ends). */
export async function* watchRollout(client: ConfigClient, id: string, options: RolloutReadOptions = {}): AsyncGenerator<SharedRollout> {
  validateRolloutId(id);
  try {
    const stream = recordClient(client).watchRollouts({ workspaceScope: scopeOf(client, options.workspace), id, view: RolloutView.FULL }, { signal: options.signal });
    for await (const m of stream) if (m.rollout) yield fromRecord(m.rollout);
  } catch (err) {
    if (options.signal?.aborted) return;
    throw mapError(err);
  }
}

/** An event of `watchRollouts`: a rollout as it is now (initially, or after a change), or the end of the initial list. */
export type RolloutWatchEvent =
  | {
      /** A rollout's current summary. */
      readonly type: "rollout";
      /** True while the watch sends what exists already. */
      readonly initial: boolean;
      /** The rollout (summary: no `state`). */
      readonly rollout: SharedRollout;
    }
  | {
      /** Every rollout that existed has been sent; what follows are changes. */
      readonly type: "synced";
    };

/** Every rollout of a workspace (or "*": all the caller may see): the newest 500, then each change, until `signal` aborts. */
export async function* watchRollouts(client: ConfigClient, options: { workspace?: string; signal?: AbortSignal } = {}): AsyncGenerator<RolloutWatchEvent> {
  try {
    const stream = recordClient(client).watchRollouts(
      { workspaceScope: options.workspace === "*" ? allWorkspacesScope() : scopeOf(client, options.workspace), view: RolloutView.SUMMARY },
      { signal: options.signal },
    );
    for await (const m of stream) {
      if (m.initialDone) yield { type: "synced" };
      else if (m.rollout) yield { type: "rollout", initial: m.initial, rollout: fromRecord(m.rollout) };
    }
  } catch (err) {
    if (options.signal?.aborted) return;
    throw mapError(err);
  }
}

const randomId = () => Math.random().toString(16).slice(2, 10);

/**
 * Takes the lease of rollout `id` (refused with RolloutLeaseHeldError while another driver's is
 * live) and returns the record as it then is, with its state.
 */
async function acquire(client: ConfigClient, id: string, options: ResumeOptions, driver: string): Promise<SharedRollout> {
  const rpc = recordClient(client);
  const workspaceScope = scopeOf(client, options.workspace);
  try {
    const r = fromRecord((await rpc.getRollout({ workspaceScope, id, view: RolloutView.FULL }, { signal: options.signal })).rollout!);
    if (r.lease && r.lease.holder !== driver && r.lease.expiresAt.getTime() > Date.now()) throw new RolloutLeaseHeldError(id, r.lease);
    const res = await rpc.updateRollout(
      { workspaceScope, id, expectedResourceVersion: r.resourceVersion, driver, leaseTtlMs: options.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS },
      { signal: options.signal },
    );
    return { ...fromRecord(res.rollout!), state: r.state };
  } catch (err) {
    if (err instanceof RolloutLeaseHeldError) throw err;
    throw mapError(err);
  }
}

function drive(client: ConfigClient, record: SharedRollout, options: ResumeOptions, driver: string, undo: boolean): RolloutRun {
  if (record.state === undefined) throw new InvalidArgumentError(`rollout "${record.id}" has no state to resume`, { field: "id" });
  const { workspace: _w, ...rest } = options;
  return startRollout(client, { ...rest, driver, resume: record.state, undo }, record);
}

/**
 * A run that starts once `start` has read the record and taken its lease: like `rollout()`, it is
 * returned at once (await it for the result, iterate it for events), and a refusal before anything
 * is sent (a live lease elsewhere, a refused approval) rejects its result.
 */
function deferredRun(id: string, start: () => Promise<{ run: RolloutRun }>): RolloutRun {
  let inner: RolloutRun | undefined;
  // Boxed: a run is a thenable, and a promise resolved with one would become its result.
  const ready = start().then((box) => {
    inner = box.run;
    return box;
  });
  const result = ready.then(({ run }) => run.result);
  // Iterating is an alternative to awaiting: an unobserved rejection must not crash the process.
  result.catch(() => {});
  return {
    id,
    result,
    state: () => {
      if (inner === undefined) throw new FailedPreconditionError(`rollout "${id}" has not started yet: its record is being read`);
      return inner.state();
    },
    then: (onFulfilled, onRejected) => result.then(onFulfilled, onRejected),
    async *[Symbol.asyncIterator]() {
      yield* (await ready).run;
    },
  };
}

/**
 * Continues shared rollout `id` from its record, in any process: waits again for what was sent
 * (never a second revision), then sends the rest. A rollout paused for approval is approved by
 * this call (the gateway refuses a user, and its creator under four eyes). Returned at once, like
 * `rollout()`; its result rejects with RolloutLeaseHeldError while another driver's lease is live.
 */
export function resumeRollout(client: ConfigClient, id: string, options: ResumeOptions = {}): RolloutRun {
  validateRolloutId(id);
  const driver = options.driver ?? `sdk ${randomId()}`;
  return deferredRun(id, async () => {
    const before = await getRollout(client, id, options);
    // Approved before the lease is taken: a refused approval must not leave a lease behind.
    if (before.awaitingApproval && !before.approvals.some((a) => a.wave === before.waves.done)) await recordApproval(client, id, options);
    return { run: drive(client, await acquire(client, id, options, driver), options, driver, false) };
  });
}

/**
 * Records an approval of the wave shared rollout `id` waits for (who, and when) without driving
 * it: another client resumes it. FailedPreconditionError when it waits for none;
 * PermissionDeniedError for a user, or for its creator under four eyes.
 */
export async function recordApproval(client: ConfigClient, id: string, options: RolloutReadOptions = {}): Promise<SharedRollout> {
  validateRolloutId(id);
  const current = await getRollout(client, id, options);
  try {
    const res = await recordClient(client).approveRollout(
      { workspaceScope: scopeOf(client, options.workspace), id, wave: current.waves.done, expectedResourceVersion: current.resourceVersion },
      { signal: options.signal },
    );
    return fromRecord(res.rollout!);
  } catch (err) {
    throw mapError(err);
  }
}

/**
 * Approves the wave shared rollout `id` waits for, then drives the rest (`resumeRollout`). Unlike
 * `resumeRollout` its result rejects (FailedPreconditionError) when the rollout waits for no approval.
 */
export function approveRollout(client: ConfigClient, id: string, options: ResumeOptions = {}): RolloutRun {
  validateRolloutId(id);
  const driver = options.driver ?? `sdk ${randomId()}`;
  return deferredRun(id, async () => {
    await recordApproval(client, id, options);
    return { run: drive(client, await acquire(client, id, options, driver), options, driver, false) };
  });
}

/** Rolls back shared rollout `id` from its record, in any process (see `undoRollout`); its lease first. */
export function undoSharedRollout(client: ConfigClient, id: string, options: ResumeOptions = {}): RolloutRun {
  validateRolloutId(id);
  const driver = options.driver ?? `sdk ${randomId()}`;
  return deferredRun(id, async () => ({ run: drive(client, await acquire(client, id, options, driver), options, driver, true) }));
}
