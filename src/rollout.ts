/**
 * Fleet rollouts: one change to many sandboxes, with one answer.
 *
 * `rollout(client, options)` commits the same policy or settings change to every target sandbox
 * (named, or chosen by label), at most `concurrency` at a time, waits for each one's outcome and
 * reports them together. It lives in its own entry point so that `createConfigClient` alone stays
 * within its browser bundle budget: the engine and the ListSandboxes descriptors add about 4 kB
 * (brotli) and load only with `openshell-config/rollout`.
 *
 * @module
 */

import type { ConfigClient } from "./client.js";
import { startRollout, type RolloutOptions, type RolloutRun } from "./rollout/run.js";

export type { RolloutOptions, RolloutRun } from "./rollout/run.js";
export type { RolloutEvent, RolloutProgress } from "./rollout/events.js";
export type { RolloutResult, RolloutCounts, SandboxRolloutResult, SlowSandbox } from "./rollout/result.js";
export type { RolloutState, RolloutChange } from "./rollout/state.js";
export { ROLLOUT_KIND, restoreRolloutState, rolloutKey } from "./rollout/state.js";

/**
 * Sends one change to many sandboxes through `client` and reports each one's outcome. Await the
 * returned run for the result, or iterate it (`for await`) for events. Re-running with the same
 * `id` and change, or with `resume: state`, never creates a second revision for a sandbox.
 * Throws InvalidArgumentError, naming the field, before anything is sent.
 */
export function rollout(client: ConfigClient, options: RolloutOptions): RolloutRun {
  return startRollout(client, options);
}

/** A ConfigClient that also rolls out: `client.rollout(options)`. */
export interface RolloutClient extends ConfigClient {
  /** Same as `rollout(client, options)`. */
  rollout(options: RolloutOptions): RolloutRun;
}

/**
 * Adds `rollout` to a client, for code that wants `client.rollout({...})`:
 * `const client = withRollout(createConfigClient({ baseUrl }))`. The client's own methods are
 * unchanged; only this entry point carries the rollout engine.
 */
export function withRollout(client: ConfigClient): RolloutClient {
  return { ...client, rollout: (options: RolloutOptions) => startRollout(client, options) };
}
