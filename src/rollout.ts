/**
 * Fleet rollouts: one change to many sandboxes, with one answer.
 *
 * `rollout(client, options)` commits the same policy or settings change to every target sandbox
 * (named, or chosen by label), at most `concurrency` at a time, waits for each one's outcome and
 * reports them together; optionally in waves, each judged by a health gate, pausing between
 * waves, and rolling everything back when a gate fails. It lives in its own entry point so that `createConfigClient` alone stays
 * within its browser bundle budget: the engine and the ListSandboxes descriptors add about 4 kB
 * (brotli) and load only with `openshell-config/rollout`.
 *
 * @example
 * ```ts
 * import { rollout } from "openshell-config/rollout";
 *
 * // Iterate instead of awaiting to stream each sandbox's result as it comes:
 * for await (const e of rollout(client, { labelSelector: "env=prod", policy })) {
 *   if (e.type === "result") console.log(e.result.sandbox, e.result.status, `${e.progress.done}/${e.progress.total}`);
 * }
 * ```
 *
 * @module openshell-config/rollout
 */

import type { ConfigClient } from "./client.js";
import { startRollout, type RolloutOptions, type RolloutRun } from "./rollout/run.js";
import type { RolloutState } from "./rollout/state.js";

export type { RolloutOptions, RolloutRun } from "./rollout/run.js";
export type { RolloutEvent, RolloutProgress } from "./rollout/events.js";
export type {
  RolloutResult,
  RolloutCounts,
  SandboxRolloutResult,
  SandboxRolloutCommon,
  SandboxRollback,
  SlowSandbox,
  WaveResult,
  RolloutPhase,
  RollbackSummary,
} from "./rollout/result.js";
export type { RolloutState, RolloutChange, RolloutStatePhase, SandboxBefore } from "./rollout/state.js";
export type { WaveInput, WaveSize, GateInput, Gate, PlannedWave } from "./rollout/waves.js";
export type { GateVerdict } from "./rollout/gate.js";
export { ROLLOUT_KIND, ROLLOUT_KIND_V1, restoreRolloutState, rolloutKey, undoKey } from "./rollout/state.js";
export type { LabelSelector, LabelRequirement } from "./rollout/label-selector.js";
export { parseLabelSelector, formatLabelSelector, matchesLabelSelector, gatewayLabelSelector, isGatewayExact } from "./rollout/label-selector.js";
export { ROLLBACK_ANNOTATION } from "./rollout/undo.js";
export type { SharedRollout, RolloutApproval, RolloutLease } from "./rollout/shared-rollout.js";
export type { ShareOptions } from "./rollout/record-sync.js";
export { RolloutLeaseHeldError, SharedRolloutsUnsupportedError } from "./rollout/record-errors.js";
export type { ListRolloutsOptions, RolloutPage, RolloutReadOptions, ResumeOptions, RolloutCapabilities, RolloutWatchEvent } from "./rollout/shared-api.js";
export {
  listRollouts,
  getRollout,
  watchRollout,
  watchRollouts,
  resumeRollout,
  approveRollout,
  recordApproval,
  undoSharedRollout,
  getRolloutCapabilities,
} from "./rollout/shared-api.js";

/**
 * Sends one change to many sandboxes through `client` and reports each one's outcome. Await the
 * returned run for the result, or iterate it (`for await`) for events. Re-running with the same
 * `id` and change, or with `resume: state`, never creates a second revision for a sandbox.
 * Throws InvalidArgumentError, naming the field, before anything is sent.
 *
 * @example
 * ```ts
 * import { readFile, writeFile } from "node:fs/promises";
 * import { restoreRolloutState, rollout } from "openshell-config/rollout";
 *
 * const result = await rollout(client, {
 *   labelSelector: "env=prod", // or "env in (prod,staging)", or sandboxes: ["agent-1", "agent-2"]
 *   settings: { key: "log_level", value: "info" }, // or policy, or mergeOperations
 *   concurrency: 32, // default 16
 *   maxFailures: 3, // after 3 failed, cancelled or errored sandboxes, send to no further one
 * });
 * console.log(result.counts.byState); // e.g. { applied: 497, failed: 3 }
 * if (!result.complete) await writeFile("rollout.json", JSON.stringify(result.state));
 *
 * // Later, in any process: the sandboxes already sent are awaited again, never committed twice.
 * const resumed = await rollout(client, { resume: restoreRolloutState(await readFile("rollout.json", "utf8")) });
 * ```
 *
 * @example
 * ```ts
 * import { writeFileSync } from "node:fs";
 * import { rollout } from "openshell-config/rollout";
 *
 * // A canary, then 10%, then everyone, each wave judged by its gate; a failed gate rolls back.
 * const result = await rollout(client, {
 *   labelSelector: "env=prod",
 *   policy,
 *   waves: [["agent-canary"], "10%", "100%"], // or [1, "10%", "100%"]: cumulative sizes
 *   gate: { maxFailures: 1, failOnDegraded: true, pause: 60_000 }, // per wave; a wave may set its own
 *   rollback: "on-halt",
 *   onState: (state) => writeFileSync("rollout.json", JSON.stringify(state)), // durable at every step
 * });
 * if (result.phase === "rolled-back") console.log(result.gateFailure?.reason, result.rollback);
 * // "paused" (gate.pause: "approval"): `rollout(client, { resume: state })` approves the next wave.
 * ```
 */
export function rollout(client: ConfigClient, options: RolloutOptions): RolloutRun {
  return startRollout(client, options);
}

/** Options of `undoRollout`: the same run-time knobs as a resumed rollout. */
export type UndoOptions = Pick<RolloutOptions, "concurrency" | "waitTimeoutMs" | "signal" | "onProgress" | "onState" | "driver" | "leaseTtlMs" | "share">;

/**
 * Rolls back everything rollout `state` changed so far, whatever its phase (running, paused,
 * halted, done, or a rollback a crash cut short): the same as `rollout(client, { resume: state,
 * undo: true })`. Commits still in flight are awaited first; then each changed sandbox returns to
 * what it had before its wave (the policy revision it enforced, or its own setting value or
 * none), as its own waited update keyed `undo/<id>/<sandbox>`. A sandbox someone else changed
 * since is left alone (`changed-by-others`); one with no earlier policy revision too
 * (`no-earlier-revision`). Needs a state with before-state, i.e. from a rollout given `waves` or
 * `rollback`. Running it again (or resuming its state) replays: one rollback revision per sandbox.
 *
 * @example
 * ```ts
 * import { readFile } from "node:fs/promises";
 * import { restoreRolloutState, undoRollout } from "openshell-config/rollout";
 *
 * const state = restoreRolloutState(await readFile("rollout.json", "utf8"));
 * const result = await undoRollout(client, state, { concurrency: 16 });
 * console.log(result.phase, result.rollback); // "rolled-back", { rolledBack: 40, leftAlone: [...], failed: [], pending: [] }
 * ```
 */
export function undoRollout(client: ConfigClient, state: RolloutState, options: UndoOptions = {}): RolloutRun {
  return startRollout(client, { ...options, resume: state, undo: true });
}

/** A ConfigClient that also rolls out: `client.rollout(options)`. */
export interface RolloutClient extends ConfigClient {
  /** Same as `rollout(client, options)`. */
  rollout(options: RolloutOptions): RolloutRun;
}

/**
 * Adds `rollout` to a client, for code that wants `client.rollout({...})`. The client's own
 * methods are unchanged; only this entry point carries the rollout engine.
 *
 * @example
 * ```ts
 * import { createConfigClient } from "openshell-config";
 * import { withRollout } from "openshell-config/rollout";
 *
 * const client = withRollout(createConfigClient({ baseUrl: "https://gateway.example.com" }));
 * await client.updatePolicy({ sandbox: "agent-7", policy }); // the client's own methods, as before
 * const result = await client.rollout({ sandboxes: ["agent-1", "agent-2"], policy });
 * ```
 */
export function withRollout(client: ConfigClient): RolloutClient {
  return { ...client, rollout: (options: RolloutOptions) => startRollout(client, options) };
}
