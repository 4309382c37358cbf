// The options of `policy rollout`: which sandboxes (--selector), which policy (--file), how many
// at once, when to halt, the waves and their gate (--waves, --max-failures, --fail-on-degraded,
// --pause or --pause-for-approval, --rollback-on-failure), and --resume ROLLOUT_ID; and the
// rollout id of `policy rollout resume|undo|status ID`. Kept apart from args.ts, which parses the
// command line as a whole (durations and selectors included) and calls this for the one command.

import { formatSelector, gatewaySelector, isGatewayExact, type Selector } from "./selector.js";
import type { RolloutCommand, RolloutGateFlags } from "./types.js";
import { parseCount, parseDuration } from "./values.js";

export type { RolloutCommand } from "./types.js";

const ROLLOUT_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;

/** Checks a rollout id as the SDK does; `what` names it in the message (`--resume`, `ROLLOUT_ID`). */
export function parseRolloutId(text: string, what: string): string {
  if (!ROLLOUT_ID.test(text)) throw new Error(`${what} must be a rollout id (letters, digits, ".", "_", ":", "-"); got "${text}"`);
  return text;
}

/**
 * `--waves 1,10%,100%`: cumulative wave sizes, each a count (at least 1) or a percentage of the
 * targets (above 0%, at most 100%); counts must increase among counts and percentages among
 * percentages, as the SDK requires. Throws an Error naming --waves and the bad item.
 */
export function parseWaves(text: string): (number | `${number}%`)[] {
  const items = text.split(",").map((s) => s.trim());
  if (text.trim() === "" || items.some((i) => i === "")) throw new Error(`--waves must be a comma-separated list of counts and percentages such as 1,10%,100%; got "${text}"`);
  let lastCount = 0;
  let lastPct = 0;
  return items.map((item) => {
    const pct = /^(\d+(?:\.\d+)?)%$/.exec(item);
    if (pct) {
      const n = Number(pct[1]);
      if (!(n > 0 && n <= 100)) throw new Error(`--waves: ${item} is not a percentage above 0% and at most 100%`);
      if (n <= lastPct) throw new Error(`--waves: sizes are cumulative and must increase (${item} after ${lastPct}%)`);
      lastPct = n;
      return `${n}%` as `${number}%`;
    }
    if (!/^\d+$/.test(item) || Number(item) < 1) throw new Error(`--waves: "${item}" is neither a count of at least 1 nor a percentage (e.g. 1,10%,100%)`);
    const n = Number(item);
    if (n <= lastCount) throw new Error(`--waves: sizes are cumulative and must increase (${n} after ${lastCount})`);
    lastCount = n;
    return n;
  });
}

/** The command line's values for `policy rollout`, selector and timeout already parsed. */
export interface RolloutValues {
  readonly labelSelector: Selector | undefined;
  readonly timeoutMs: number | undefined;
  readonly file?: string;
  readonly concurrency?: string;
  readonly maxFailures?: string;
  readonly resume?: string;
  readonly waves?: string;
  readonly pause?: string;
  readonly pauseForApproval?: boolean;
  readonly rollbackOnFailure?: boolean;
  readonly failOnDegraded?: boolean;
  readonly fourEyes?: boolean;
}

/** Parses the options of `policy rollout`. Throws an Error with a message for the user. */
export function parseRolloutOptions(values: RolloutValues, workspace: string | undefined): RolloutCommand {
  const { labelSelector } = values;
  if (values.file === "") throw new Error("--file must not be empty");
  const resume = values.resume === undefined ? undefined : parseRolloutId(values.resume, "--resume");
  if (resume === undefined) {
    if (labelSelector === undefined) throw new Error("policy rollout needs --selector (or --resume ROLLOUT_ID)");
    if (values.file === undefined) throw new Error("policy rollout needs --file (or --resume ROLLOUT_ID)");
  } else if ((labelSelector === undefined) !== (values.file === undefined)) {
    throw new Error("with --resume, give both --selector and --file (to re-run a rollout without saved state) or neither");
  }
  const waves = values.waves === undefined ? undefined : parseWaves(values.waves);
  if (values.pause !== undefined && values.pauseForApproval) throw new Error("--pause and --pause-for-approval are mutually exclusive");
  const pause = values.pauseForApproval ? ("approval" as const) : values.pause === undefined ? undefined : parseDuration(values.pause, "--pause");
  if (pause === Infinity) throw new Error('--pause must be a duration such as 30s or 5m (for no limit, use --pause-for-approval); got "0"');
  if (resume !== undefined && (waves !== undefined || pause !== undefined || values.rollbackOnFailure || values.failOnDegraded)) {
    throw new Error("--waves, --pause, --pause-for-approval, --rollback-on-failure and --fail-on-degraded start a rollout; a resumed one keeps its own");
  }
  if (values.fourEyes && pause !== "approval") throw new Error("--four-eyes is about who approves a wave: give --pause-for-approval");
  if (pause !== undefined && waves === undefined) throw new Error(`${values.pauseForApproval ? "--pause-for-approval" : "--pause"} pauses between waves: give --waves`);
  const maxFailures = values.maxFailures === undefined ? undefined : parseCount(values.maxFailures, "--max-failures", 1);
  if (values.rollbackOnFailure && waves === undefined && maxFailures === undefined) {
    throw new Error("--rollback-on-failure needs --waves or --max-failures (without either, no gate fails)");
  }
  const gate: RolloutGateFlags = {
    // With waves, --max-failures is each wave's gate; without, the rollout's limit as before.
    ...(waves !== undefined && maxFailures !== undefined ? { maxFailures } : {}),
    ...(values.failOnDegraded ? { failOnDegraded: true } : {}),
    ...(pause !== undefined ? { pause } : {}),
  };
  return {
    name: "policy rollout",
    file: values.file,
    // The SDK's form when it says everything; otherwise the CLI resolves the names (commands/rollout-select.ts).
    selector: labelSelector === undefined ? undefined : isGatewayExact(labelSelector) ? gatewaySelector(labelSelector) : formatSelector(labelSelector),
    labelSelector,
    workspace,
    concurrency: values.concurrency === undefined ? undefined : parseCount(values.concurrency, "--concurrency", 1),
    maxFailures: waves === undefined ? maxFailures : undefined,
    timeoutMs: values.timeoutMs,
    resume,
    ...(waves !== undefined ? { waves } : {}),
    ...(Object.keys(gate).length > 0 ? { gate } : {}),
    ...(values.rollbackOnFailure ? { rollback: true } : {}),
    ...(values.fourEyes ? { fourEyes: true } : {}),
  };
}
