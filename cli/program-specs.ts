// The declarations program.ts builds the command line from: one option, one command, and the
// options several commands share. Apart from program.ts so that the rollout commands
// (program-rollout.ts) can use them without importing the program.

import type { CommandName } from "./types.js";

/** One option: commander's flags (`-s, --sandbox <S>`), its help, the values it takes. */
export interface OptionSpec {
  readonly flags: string;
  readonly help: string;
  /** Values completion offers; the parser checks them (args.ts). */
  readonly choices?: readonly string[];
  /** Given more than once, each value is kept (`--selector a=b --selector c=d`). */
  readonly repeatable?: boolean;
  /** What completion offers for the value: files, the registry's gateway names, the gateway's sandbox names, or nothing. */
  readonly complete?: "file" | "gateway" | "sandbox";
}

export interface CommandSpec {
  /** `policy set`. */
  readonly name: CommandName;
  /** One line for the list of commands. */
  readonly summary: string;
  /** The paragraph of its own --help (defaults to the summary). */
  readonly description?: string;
  /** What follows the command's name in its Usage: line. */
  readonly usage: string;
  /** Positional arguments: `<ID>` (required), `[KEY]` (optional). */
  readonly args?: readonly string[];
  readonly options: readonly OptionSpec[];
  /** Text after the options (exit statuses). */
  readonly after?: string;
}

export const sandbox: OptionSpec = { flags: "-s, --sandbox <S>", help: "the sandbox name (required)", complete: "sandbox" };
export const workspace: OptionSpec = { flags: "--workspace <W>", help: "the sandbox's workspace (default: $OPENSHELL_WORKSPACE, else the gateway's default workspace)" };
export const policyFile: OptionSpec = { flags: "-f, --file <FILE>", help: "the policy file: YAML, or JSON for *.json (required)", complete: "file" };
export const selector: OptionSpec = {
  flags: "-l, --selector <SELECTOR>",
  help: 'labels, as kubectl: k=v, k!=v, "k in (a,b)", "k notin (a)", k, !k; a comma ANDs (repeatable, ANDs too)',
  repeatable: true,
};
