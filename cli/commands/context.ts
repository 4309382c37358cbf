// What every command gets: the SDK client, the output, the interrupt signal, and how to tell the
// user to resume a wait.

import type { ConfigClient } from "openshell-config";
import type { Output } from "../output.js";
import type { SpinnerStream } from "../spinner.js";

export interface CommandContext {
  readonly client: ConfigClient;
  readonly out: Output;
  /** Aborted on SIGINT: ends a wait (the operation keeps running) or a request. */
  readonly signal: AbortSignal;
  /** Where the spinner goes (stderr). */
  readonly spinnerStream: SpinnerStream;
  /** The exact command that resumes waiting for an operation (never with the token). */
  resumeCommand(operationId: string, workspace: string | undefined): string;
  /** The connection flags given on this command line (never the token), for follow-up commands. */
  readonly connectionArgs: readonly string[];
}

/** The reason the signal is aborted with on SIGINT. */
export class Interrupted extends Error {
  override readonly name = "Interrupted";
  constructor() {
    super("interrupted");
  }
}

/** Quotes an argument for a POSIX shell when it needs it. */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}
