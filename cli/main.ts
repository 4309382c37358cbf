// `openshell-config`: the command line of the SDK. Parses the command line, resolves the gateway
// URL and token, builds a client with the SDK's public API (createConfigClient over the Node
// transport, gRPC by default) and runs one command. The built file (dist/cli/main.js) starts
// with `#!/usr/bin/env node` (tsup banner).

import { createRequire } from "node:module";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { parseCommandLine, usageOf, type Command, type CommandName, type GlobalOptions } from "./args.js";
import { resolveConfig, type ResolvedConfig } from "./config.js";
import { createOutput } from "./output.js";
import { describeFailure } from "./errors.js";
import { EXIT } from "./outcome.js";
import { Interrupted, shellQuote, type CommandContext } from "./commands/context.js";
import { policyGet, policySet } from "./commands/policy.js";
import { settingsDelete, settingsSet } from "./commands/settings.js";
import { operationGet, operationWait } from "./commands/operation.js";
import { sandboxList } from "./commands/sandbox.js";
import { policyRollout } from "./commands/rollout.js";

type Runner<N extends CommandName> = (ctx: CommandContext, cmd: Extract<Command, { name: N }>) => Promise<number>;

const COMMANDS: { readonly [N in CommandName]: Runner<N> } = {
  "policy set": policySet,
  "policy get": policyGet,
  "policy rollout": policyRollout,
  "settings set": settingsSet,
  "settings delete": settingsDelete,
  "operation get": operationGet,
  "operation wait": operationWait,
  "sandbox list": sandboxList,
};

// Transient failures (gateway restarting) are retried briefly: a command line should not hang.
const RETRY = { retries: 3, minDelayMs: 200, maxDelayMs: 2_000 };

function version(): string {
  // The package's own package.json, by name (self-reference), from dist/cli/main.js and from
  // cli/main.ts alike.
  return (createRequire(import.meta.url)("openshell-config/package.json") as { version: string }).version;
}

/** The connection flags that were given, to repeat in a follow-up command (never the token). */
function connectionArgs(global: GlobalOptions, config: ResolvedConfig): string[] {
  const args: string[] = [];
  if (config.urlSource === "flag") args.push("--url", config.url);
  if (global.config !== undefined) args.push("--config", global.config);
  if (global.protocolGiven) args.push("--protocol", global.protocol);
  if (global.allowInsecureToken) args.push("--allow-insecure-token");
  return args;
}

/** The resume command: the connection flags that were given and the workspace. */
function resumeCommand(global: GlobalOptions, config: ResolvedConfig, operationId: string, workspace: string | undefined): string {
  const args = ["openshell-config", "operation", "wait", operationId];
  if (workspace !== undefined) args.push("--workspace", workspace);
  return [...args, ...connectionArgs(global, config)].map(shellQuote).join(" ");
}

async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const plain = createOutput("table", process.stdout, process.stderr);
  let parsed;
  try {
    parsed = parseCommandLine(argv);
  } catch (err) {
    const failure = describeFailure(err, undefined);
    plain.error(failure.message);
    if (failure.details) process.stderr.write(`\n${failure.details}\n`);
    return failure.exitCode;
  }
  const { global, command } = parsed;
  if (command.name === "help") {
    process.stdout.write(`${usageOf(command.topic, true)}\n`);
    return EXIT.ok;
  }
  if (command.name === "version") {
    process.stdout.write(`openshell-config ${version()}\n`);
    return EXIT.ok;
  }

  const out = createOutput(global.output, process.stdout, process.stderr);
  out.redact(global.token);
  let config: ResolvedConfig | undefined;
  const controller = new AbortController();
  const onSigint = () => {
    // A second Ctrl-C does not wait for anything.
    if (controller.signal.aborted) process.exit(EXIT.interrupted);
    controller.abort(new Interrupted());
  };
  process.on("SIGINT", onSigint);
  try {
    config = resolveConfig(global, env);
    out.redact(config.token);
    const resolved = config;
    const client = createConfigClient({
      transport: createNodeTransport({ baseUrl: config.url, protocol: global.protocol }),
      token: config.token,
      allowInsecureToken: global.allowInsecureToken,
      retry: RETRY,
    });
    const ctx: CommandContext = {
      client,
      out,
      signal: controller.signal,
      spinnerStream: process.stderr,
      resumeCommand: (id, workspace) => resumeCommand(global, resolved, id, workspace),
      connectionArgs: connectionArgs(global, resolved),
    };
    const run = COMMANDS[command.name] as Runner<CommandName>;
    return await run(ctx, command as never);
  } catch (err) {
    const failure = describeFailure(controller.signal.aborted ? controller.signal.reason : err, config);
    out.error(failure.message);
    return failure.exitCode;
  } finally {
    process.off("SIGINT", onSigint);
  }
}

// A closed pipe (`openshell-config sandbox list | head -1`) is not an error.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(EXIT.ok);
  throw err;
});

const flush = (stream: NodeJS.WriteStream) => new Promise<void>((resolve) => stream.write("", () => resolve()));

main(process.argv.slice(2), process.env).then(
  async (code) => {
    await Promise.all([flush(process.stdout), flush(process.stderr)]);
    // HTTP/2 sessions stay open for reuse; a command line is done once it has printed.
    process.exit(code);
  },
  async (err: unknown) => {
    process.stderr.write(`error: unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    await flush(process.stderr);
    process.exit(EXIT.failed);
  },
);
