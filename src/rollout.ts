/**
 * Fleet rollouts: one change to many sandboxes, with one answer.
 *
 * `rollout(client, options)` commits the same policy or settings change to every target sandbox
 * (named, or chosen by label), at most `concurrency` at a time, waits for each one's outcome and
 * reports them together. It lives in its own entry point so that `createConfigClient` alone stays
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
 *
 * @example
 * ```ts
 * import { readFile, writeFile } from "node:fs/promises";
 * import { restoreRolloutState, rollout } from "openshell-config/rollout";
 *
 * const result = await rollout(client, {
 *   labelSelector: "env=prod", // or sandboxes: ["agent-1", "agent-2"]
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
