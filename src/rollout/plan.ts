// A rollout's options and the plan they validate into: targets, the change, limits, waves and
// gates, rollback mode, and (when resuming) everything the saved state carries. Throws
// InvalidArgumentError naming the field before anything is sent.

import { InvalidArgumentError } from "../errors.js";
import type { OperationHandle } from "../handle.js";
import type { PolicyMergeOperationInput, SandboxPolicyInput, SettingChange } from "../change.js";
import { newIdempotencyKey } from "../update.js";
import {
  changeToRequestJson,
  checkCount,
  requestToChange,
  restoreRolloutState,
  validateRolloutId,
  type RolloutChange,
  type RolloutState,
  type SandboxBefore,
} from "./state.js";
import { checkSandboxNames, normalizeSelector } from "./select.js";
import { checkWaves, resolveGate, type Gate, type GateInput, type PlannedWave, type WaveInput } from "./waves.js";
import type { RolloutEvent } from "./events.js";
import type { ShareOptions } from "./record-sync.js";

/** Options of `client.rollout`. Name the targets (`sandboxes` or `labelSelector`) and the change, or pass `resume`. */
export interface RolloutOptions extends ShareOptions {
  /** The rollout id keys are derived from. Default: a fresh UUID. Run again with the same id (and change) to resume. */
  readonly id?: string;
  /** The target sandbox names. Give this or `labelSelector`. */
  readonly sandboxes?: readonly string[];
  /**
   * A kubectl label selector (`env=prod`, `env in (dev,staging),!legacy`; see `parseLabelSelector`):
   * every sandbox of the workspace it matches, chosen once when the rollout starts.
   */
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
  /** Sandboxes committed and awaited at once (also the rollback's). Default 16. */
  readonly concurrency?: number;
  /**
   * Stop committing new sandboxes once this many failed, were cancelled or errored over the whole
   * rollout. Default: never stop (without waves), or the gates' `maxTotalFailures` default (with waves).
   */
  readonly maxFailures?: number;
  /** The local bound on each sandbox's wait, in ms. Default: the client's (60 s). A sandbox past it is `pending`. */
  readonly waitTimeoutMs?: number;
  /**
   * Progressive delivery: the targets in waves, each judged by its gate before the next starts.
   * Numbers and percentages are cumulative (`[1, "10%", "50%", "100%"]`); a list of names is that
   * wave's own sandboxes. Sandboxes no wave names are ordered by a hash of (rollout id, name):
   * stable for this rollout in every process, different between rollouts. A last wave with the
   * rest is added when needed. Membership is fixed when the rollout starts and kept in the state.
   * Without waves the rollout is one wave that halts after `maxFailures` (if given).
   */
  readonly waves?: readonly WaveInput[];
  /** Every wave's gate (a wave's own gate overrides it field by field). With waves, `maxFailures` defaults to 1. */
  readonly gate?: GateInput;
  /**
   * `on-halt`: when a gate fails, once the commits in flight are awaited, every sandbox this
   * rollout changed is returned to what it had before (see `undoRollout`). Default `never`.
   */
  readonly rollback?: "never" | "on-halt";
  /** With `resume`: roll back everything the rollout changed so far, whatever its phase (same as `undoRollout`). */
  readonly undo?: boolean;
  /**
   * A saved `RolloutState` (e.g. `restoreRolloutState(text)`) to continue: its id, targets, waves,
   * change and commits. Resuming a rollout paused for approval is the approval. Then give no
   * targets, change, waves or gate; `concurrency`, `maxFailures`, `waitTimeoutMs` and `rollback` override the saved ones.
   */
  readonly resume?: RolloutState;
  /** Stops committing and ends the waits: sandboxes already sent are reported `pending`, the rest `skipped`. */
  readonly signal?: AbortSignal;
  /** Called with every event (a throwing callback is ignored). */
  readonly onProgress?: (event: RolloutEvent) => void;
  /**
   * Makes the state durable: called with a fresh state whenever resuming needs it (waves fixed;
   * each wave's before-state read, awaited before its first commit; before each rollback batch;
   * on pause; at the end) and at most every 250 ms while sandboxes are sent. Awaited where it
   * matters. If it throws or rejects, nothing more is committed and the run ends `aborted` with
   * the error in `stateError` (commits the caller could not record would break resuming).
   */
  readonly onState?: (state: RolloutState) => void | Promise<void>;
}

const DEFAULT_CONCURRENCY = 16;

/** The shared-record options (record-sync.ts), checked before anything is sent. */
function checkShareOptions(options: RolloutOptions): void {
  if (options.share !== undefined && !["auto", "required", "off"].includes(options.share)) {
    throw new InvalidArgumentError('share must be "auto", "required" or "off"', { field: "share" });
  }
  const d = options.driver;
  // eslint-disable-next-line no-control-regex
  if (d !== undefined && (typeof d !== "string" || d.length === 0 || d.length > 200 || /[\u0000-\u001f\u007f]/.test(d))) {
    throw new InvalidArgumentError("driver must be 1-200 characters without control characters", { field: "driver" });
  }
  const ttl = options.leaseTtlMs;
  if (ttl !== undefined && !(Number.isSafeInteger(ttl) && ttl >= 1000 && ttl <= 300_000)) {
    throw new InvalidArgumentError("leaseTtlMs must be an integer from 1000 to 300000", { field: "leaseTtlMs" });
  }
}

/** A validated rollout. The mutable parts are what the state records as the rollout goes. */
export interface Plan {
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
  /** The caller's waves (fresh rollouts), planned once the targets are known. */
  waveInput: readonly WaveInput[] | undefined;
  /** The gate every planned wave starts from. */
  baseGate: Gate;
  rollback: "never" | "on-halt";
  /**
   * Each wave's before-state is read, always (undo needs it, with or without waves). "required"
   * (waves or a rollback mode): a sandbox whose state cannot be read is not sent; "best-effort":
   * it is sent anyway, and an undo leaves it alone for want of a before-state.
   */
  capture: "required" | "best-effort";
  undo: boolean;
  resumed: boolean;
  refs: Record<string, OperationHandle>;
  waves: PlannedWave[];
  wave: number;
  phase: RolloutState["phase"];
  pausedUntil: string | undefined;
  gateFailure: RolloutState["gateFailure"];
  before: Record<string, SandboxBefore>;
  undoRefs: Record<string, OperationHandle>;
}

/** Validates options into a plan; throws InvalidArgumentError naming the field. */
export function plan(options: RolloutOptions, clientWorkspace: string | undefined): Plan {
  const concurrency = checkCount(options.concurrency ?? options.resume?.concurrency ?? DEFAULT_CONCURRENCY, "concurrency", 1);
  const maxFailures = options.maxFailures ?? options.resume?.maxFailures;
  if (maxFailures !== undefined && maxFailures !== Infinity) checkCount(maxFailures, "maxFailures", 1);
  const waitTimeoutMs = options.waitTimeoutMs ?? options.resume?.waitTimeoutMs;
  if (waitTimeoutMs !== undefined && !(waitTimeoutMs >= 0)) {
    throw new InvalidArgumentError("waitTimeoutMs must be a non-negative number", { field: "waitTimeoutMs" });
  }
  const rollback = options.rollback ?? options.resume?.rollback ?? "never";
  if (rollback !== "never" && rollback !== "on-halt") throw new InvalidArgumentError('rollback must be "never" or "on-halt"', { field: "rollback" });
  if (options.undo !== undefined && options.resume === undefined) throw new InvalidArgumentError("undo needs resume: the state to undo", { field: "undo" });
  checkShareOptions(options);
  const total = maxFailures === Infinity ? undefined : maxFailures;
  const limits = { concurrency, maxFailures: total, waitTimeoutMs, rollback, undo: options.undo === true } as const;

  if (options.resume !== undefined) {
    for (const f of ["id", "sandboxes", "labelSelector", "workspace", "policy", "mergeOperations", "settings", "annotations", "waves", "gate"] as const) {
      if (options[f] !== undefined) throw new InvalidArgumentError(`${f} comes from resume; do not give it again`, { field: f });
    }
    const s = restoreRolloutState(options.resume);
    const { change, annotations } = requestToChange(s.request);
    const baseGate: Gate = { maxFailures: total ?? null, maxTotalFailures: total ?? null, failOnDegraded: false, pause: null };
    return {
      ...limits,
      id: s.id,
      workspace: s.workspace,
      labelSelector: s.labelSelector,
      names: s.sandboxes,
      requestJson: s.request,
      change,
      annotations,
      waveInput: undefined,
      baseGate,
      // Every rollout records what each sandbox had before it (undo works for all of them); a
      // state saved before that was so still captures it for the sandboxes it has yet to send.
      capture: s.waves.length > 1 || rollback !== "never" ? "required" : "best-effort",
      resumed: true,
      refs: { ...s.refs },
      waves: s.waves.map((w) => ({ sandboxes: [...w.sandboxes], gate: w.gate })),
      wave: s.wave,
      phase: s.phase,
      pausedUntil: s.pausedUntil,
      gateFailure: s.gateFailure,
      before: { ...s.before },
      undoRefs: { ...s.undoRefs },
    };
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
  // Without waves the one wave halts after maxFailures (if any), as before waves existed; with
  // waves a gate tolerates no failure unless told otherwise.
  const waved = options.waves !== undefined;
  const defaults: Gate = { maxFailures: waved ? 1 : (total ?? null), maxTotalFailures: total ?? null, failOnDegraded: false, pause: null };
  const baseGate = resolveGate(options.gate, defaults, "gate");
  if (waved) checkWaves(options.waves, baseGate);
  // The client's workspace when none is named, fixed in the state: the sandboxes are listed, the
  // changes committed and a resumed rollout replayed in the same one.
  const workspace = options.workspace ?? clientWorkspace;
  const requestJson = changeToRequestJson(change, { workspace, annotations: options.annotations });
  return {
    ...limits,
    id,
    workspace,
    labelSelector,
    names,
    requestJson,
    change,
    annotations: options.annotations,
    waveInput: options.waves,
    baseGate,
    capture: waved || options.rollback !== undefined ? "required" : "best-effort",
    resumed: false,
    refs: {},
    waves: [],
    wave: 0,
    phase: "running",
    pausedUntil: undefined,
    gateFailure: undefined,
    before: {},
    undoRefs: {},
  };
}
