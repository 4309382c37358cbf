// The options of `policy rollout`: which sandboxes (--selector), which policy (--file), how many
// at once, when to halt, and --resume ROLLOUT_ID. Kept apart from args.ts, which parses the
// command line as a whole (durations and selectors included) and calls this for the one command.

import { formatSelector, gatewaySelector, isGatewayExact, type Selector } from "./selector.js";
import type { RolloutCommand } from "./types.js";
import { parseCount } from "./values.js";

export type { RolloutCommand } from "./types.js";

/** The command line's values for `policy rollout`, selector and timeout already parsed. */
export interface RolloutValues {
  readonly labelSelector: Selector | undefined;
  readonly timeoutMs: number | undefined;
  readonly file?: string;
  readonly concurrency?: string;
  readonly maxFailures?: string;
  readonly resume?: string;
}

/** Parses the options of `policy rollout`. Throws an Error with a message for the user. */
export function parseRolloutOptions(values: RolloutValues, workspace: string | undefined): RolloutCommand {
  const { labelSelector } = values;
  if (values.file === "") throw new Error("--file must not be empty");
  const resume = values.resume;
  if (resume !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(resume)) {
    throw new Error(`--resume must be a rollout id (letters, digits, ".", "_", ":", "-"); got "${resume}"`);
  }
  if (resume === undefined) {
    if (labelSelector === undefined) throw new Error("policy rollout needs --selector (or --resume ROLLOUT_ID)");
    if (values.file === undefined) throw new Error("policy rollout needs --file (or --resume ROLLOUT_ID)");
  } else if ((labelSelector === undefined) !== (values.file === undefined)) {
    throw new Error("with --resume, give both --selector and --file (to re-run a rollout without saved state) or neither");
  }
  return {
    name: "policy rollout",
    file: values.file,
    // The SDK's form when it says everything; otherwise the CLI resolves the names (commands/rollout-select.ts).
    selector: labelSelector === undefined ? undefined : isGatewayExact(labelSelector) ? gatewaySelector(labelSelector) : formatSelector(labelSelector),
    labelSelector,
    workspace,
    concurrency: values.concurrency === undefined ? undefined : parseCount(values.concurrency, "--concurrency", 1),
    maxFailures: values.maxFailures === undefined ? undefined : parseCount(values.maxFailures, "--max-failures", 1),
    timeoutMs: values.timeoutMs,
    resume,
  };
}
