// The connection flags of this command line, to repeat in a follow-up command it prints (resume
// a wait, continue a rollout): the gateway as it was given (-g NAME for a registered gateway,
// --gateway-endpoint or --url for an endpoint, when they were flags), --gateway-insecure,
// --config, --protocol, --allow-insecure-token. Never the token: a follow-up command takes it
// from where this one did (the environment, the config file, the registry), or it must be given
// again. What came from the environment or the registry is not repeated: it is still there.

import { shellQuote } from "./commands/context.js";
import type { ResolvedConfig } from "./config.js";
import type { GlobalOptions } from "./types.js";

/** The connection flags that were given, to repeat in a follow-up command (never the token). */
export function connectionArgs(global: GlobalOptions, config: ResolvedConfig): string[] {
  const args: string[] = [];
  if (config.gateway?.source === "flag") args.push("-g", config.gateway.name);
  if (config.urlSource === "flag") args.push(config.urlFrom === "--url" ? "--url" : "--gateway-endpoint", config.url);
  if (config.insecure === "flag") args.push("--gateway-insecure");
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
