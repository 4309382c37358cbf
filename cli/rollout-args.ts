// The options of `policy rollout`: which sandboxes (--selector), which policy (--file), how many
// at once, when to halt, and --resume ROLLOUT_ID. Kept apart from args.ts, which parses the
// command line as a whole (durations and selectors included) and calls this for the one command.

/** `policy rollout`, parsed. */
export interface RolloutCommand {
  readonly name: "policy rollout";
  /** The policy file; absent only with --resume of a saved rollout. */
  readonly file: string | undefined;
  /** The label selector (`k=v,k2=v2`); absent only with --resume of a saved rollout. */
  readonly selector: string | undefined;
  readonly workspace: string | undefined;
  readonly concurrency: number | undefined;
  readonly maxFailures: number | undefined;
  /** The bound on each sandbox's wait; undefined: the SDK's default (60 s). */
  readonly timeoutMs: number | undefined;
  /** The rollout id to continue. */
  readonly resume: string | undefined;
}

export const ROLLOUT_USAGE = `Usage: openshell-config policy rollout --selector k=v --file FILE [options]
       openshell-config policy rollout --resume ROLLOUT_ID [options]

Replaces the policy of every sandbox with matching labels by the SandboxPolicy in FILE, a few at a
time, and waits for each one's outcome: a progress bar on a terminal, then a summary. The rollout's
id is printed first; its state is kept under $XDG_STATE_HOME/openshell-config/rollouts (default
~/.local/state/openshell-config/rollouts). Running it again with --resume ROLLOUT_ID continues it:
sandboxes already sent are awaited again (never given a second revision), the rest are sent.

  -l, --selector k=v      the sandboxes with these labels (repeatable, or k=v,k2=v2)
  -f, --file FILE         the policy file (YAML, or JSON for *.json)
  --concurrency N         sandboxes updated at once (default 16)
  --max-failures N        stop sending to new sandboxes after N failed or cancelled (default: never)
  --timeout DURATION      how long to wait for each sandbox (default 60s; 0 = no limit)
  --resume ROLLOUT_ID     continue that rollout from its saved state (then give no --selector or
                          --file); without a saved state, re-run it with --selector and --file
  --workspace W           the sandboxes' workspace (default: the gateway's default workspace)`;

export const ROLLOUT_EXIT_HELP = `Exit status: 0 every sandbox applied (also degraded) or inactive; 1 a sandbox failed, was
superseded or cancelled, an error, the rollout halted, or no sandbox matched; 2 usage error; 124 a
sandbox's wait timed out (resume with --resume ROLLOUT_ID); 130 interrupted (resume likewise).`;

/** The command line's values for `policy rollout`, selector and timeout already parsed. */
export interface RolloutValues {
  readonly selector: string | undefined;
  readonly timeoutMs: number | undefined;
  readonly file?: string;
  readonly concurrency?: string;
  readonly "max-failures"?: string;
  readonly resume?: string;
}

function count(text: string, flag: string, min: number): number {
  if (!/^\d+$/.test(text.trim()) || Number(text) < min || !Number.isSafeInteger(Number(text))) {
    throw new Error(`${flag} must be an integer of at least ${min}; got "${text}"`);
  }
  return Number(text);
}

/** Parses the options of `policy rollout`. Throws an Error with a message for the user. */
export function parseRolloutOptions(values: RolloutValues, workspace: string | undefined): RolloutCommand {
  const { selector } = values;
  if (values.file === "") throw new Error("--file must not be empty");
  const resume = values.resume;
  if (resume !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/.test(resume)) {
    throw new Error(`--resume must be a rollout id (letters, digits, ".", "_", ":", "-"); got "${resume}"`);
  }
  if (resume === undefined) {
    if (selector === undefined) throw new Error("policy rollout needs --selector (or --resume ROLLOUT_ID)");
    if (values.file === undefined) throw new Error("policy rollout needs --file (or --resume ROLLOUT_ID)");
  } else if ((selector === undefined) !== (values.file === undefined)) {
    throw new Error("with --resume, give both --selector and --file (to re-run a rollout without saved state) or neither");
  }
  return {
    name: "policy rollout",
    file: values.file,
    selector,
    workspace,
    concurrency: values.concurrency === undefined ? undefined : count(values.concurrency, "--concurrency", 1),
    maxFailures: values["max-failures"] === undefined ? undefined : count(values["max-failures"], "--max-failures", 1),
    timeoutMs: values.timeoutMs,
    resume,
  };
}
