// The connection flags of this command line, to repeat in a follow-up command it prints (resume
// a wait, continue a rollout): --url when it was a flag, --config, --protocol,
// --allow-insecure-token. Never the token: a follow-up command takes it from where this one did
// (the environment or the config file), or it must be given again.

import { shellQuote } from "./commands/context.js";
import type { ResolvedConfig } from "./config.js";
import type { GlobalOptions } from "./types.js";

/** The connection flags that were given, to repeat in a follow-up command (never the token). */
export function connectionArgs(global: GlobalOptions, config: ResolvedConfig): string[] {
  const args: string[] = [];
  if (config.urlSource === "flag") args.push("--url", config.url);
  if (global.config !== undefined) args.push("--config", global.config);
  if (global.protocolGiven) args.push("--protocol", global.protocol);
  if (global.allowInsecureToken) args.push("--allow-insecure-token");
  return args;
}

/** `openshell-config operation wait ID [--workspace W]` with the connection flags that were given. */
export function resumeCommand(global: GlobalOptions, config: ResolvedConfig, operationId: string, workspace: string | undefined): string {
  const args = ["openshell-config", "operation", "wait", operationId];
  if (workspace !== undefined) args.push("--workspace", workspace);
  return [...args, ...connectionArgs(global, config)].map(shellQuote).join(" ");
}
