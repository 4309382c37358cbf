// The commands printed for picking up where a command stopped (a wait that timed out or was
// interrupted, a rollout that did not finish): they repeat what was asked of the first one, the
// timeout, workspace, output format and connection flags (never the token), so that running
// them resumes the same way.

import { shellQuote } from "./commands/context.js";

/** What a follow-up command repeats of this one. */
export interface Repeat {
  /** The connection flags given (`ctx.connectionArgs`, from main.ts). */
  readonly connectionArgs: readonly string[];
  /** The output format; `table` (the default) is not repeated. */
  readonly format: string;
}

/** A duration as --timeout takes it, exact and short: `500ms`, `1.5s`, `2s`, `5m`, `1h`; `0` for no limit. */
export function formatTimeoutFlag(ms: number): string {
  if (!Number.isFinite(ms)) return "0";
  const whole = Math.round(ms);
  if (whole < 1_000) return `${whole}ms`;
  if (whole % 3_600_000 === 0) return `${whole / 3_600_000}h`;
  if (whole % 60_000 === 0) return `${whole / 60_000}m`;
  return `${whole / 1_000}s`;
}

/** Below this, a wait's --timeout is not repeated in the command that resumes it. */
export const SHORT_TIMEOUT_MS = 10_000;

/**
 * The --timeout a resume command repeats: the one given, unless it is the default (no flag needed)
 * or so short that a wait resumed with it would most likely end the same way (`--timeout 1ms`):
 * then none, and the default bound applies.
 */
export function resumeTimeout(ms: number, defaultMs: number): number | undefined {
  return ms === defaultMs || ms < SHORT_TIMEOUT_MS ? undefined : ms;
}

function tail(repeat: Repeat): string[] {
  return [...(repeat.format !== "table" ? ["-o", repeat.format] : []), ...repeat.connectionArgs];
}

const line = (args: readonly string[]) => ["openshell-config", ...args].map(shellQuote).join(" ");

/** `openshell-config operation wait ID` with the workspace and timeout of the wait that ended. */
export function waitCommand(repeat: Repeat, operationId: string, options: { readonly workspace?: string | undefined; readonly timeoutMs?: number | undefined }): string {
  const args = ["operation", "wait", operationId];
  if (options.workspace !== undefined) args.push("--workspace", options.workspace);
  if (options.timeoutMs !== undefined) args.push("--timeout", formatTimeoutFlag(options.timeoutMs));
  return line([...args, ...tail(repeat)]);
}

/** `openshell-config policy rollout resume ID` (the saved state has the rest); `policy rollout --resume ID` is the same. */
export function rolloutResumeCommand(repeat: Repeat, id: string, options: { readonly timeoutMs?: number | undefined } = {}): string {
  const args = ["policy", "rollout", "resume", id];
  if (options.timeoutMs !== undefined) args.push("--timeout", formatTimeoutFlag(options.timeoutMs));
  return line([...args, ...tail(repeat)]);
}

/** `openshell-config policy rollout approve ID`: for another person, when the rollout needs four eyes. */
export function rolloutApproveCommand(repeat: Repeat, id: string): string {
  return line(["policy", "rollout", "approve", id, ...tail(repeat)]);
}

/** `openshell-config policy rollout undo ID`. */
export function rolloutUndoCommand(repeat: Repeat, id: string): string {
  return line(["policy", "rollout", "undo", id, ...tail(repeat)]);
}

/** `openshell-config policy rollout status ID`. */
export function rolloutStatusCommand(repeat: Repeat, id: string): string {
  return line(["policy", "rollout", "status", id, ...tail(repeat)]);
}

/**
 * Where a change to a gateway that tracks no operations can be checked: `policy history` (or
 * `settings list` for a setting) of its sandbox. Such a gateway ignores idempotency keys, so the
 * same command again could commit the change a second time.
 */
export function checkCommand(repeat: Repeat, options: { readonly sandbox: string; readonly workspace?: string | undefined; readonly settings: boolean }): string {
  const args = options.settings ? ["settings", "list", "--sandbox", options.sandbox] : ["policy", "history", "--sandbox", options.sandbox];
  if (options.workspace !== undefined) args.push("--workspace", options.workspace);
  return line([...args, ...repeat.connectionArgs]);
}

const TOKEN_FLAG = /^--token(=|$)/;

/**
 * This command line again with `--idempotency-key KEY` (for an update whose commit was never
 * confirmed: sent again with its key it commits at most once). `--token` and its value are left
 * out; the token comes from the environment or the config file as before, or must be given again.
 */
export function rerunCommand(argv: readonly string[], idempotencyKey: string): string {
  const args: string[] = [];
  let hasKey = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (TOKEN_FLAG.test(a)) {
      if (a === "--token") i++;
      continue;
    }
    if (a === "--idempotency-key" || a.startsWith("--idempotency-key=")) hasKey = true;
    args.push(a);
  }
  if (!hasKey) args.push("--idempotency-key", idempotencyKey);
  return line(args);
}
