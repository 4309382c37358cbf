// `openshell-config`: the command line of the SDK. Parses the command line, resolves the gateway
// (config.ts: flags, environment, config file, the openshell CLI's registry) and its credentials
// (gateway-connection.ts: mTLS bundle, token, OIDC session), builds a client with the SDK's
// public API (createConfigClient over the Node transport, gRPC by default, with the CLI's one
// retry rule as an interceptor) and runs one command. The built file (dist/cli/main.js) starts
// with `#!/usr/bin/env node` (tsup banner).

import { createRequire } from "node:module";
import { createConfigClient, type ConfigClient } from "openshell-config";
import { createNodeTransport, INSECURE_WARNING_CODE } from "openshell-config/transport/node";
import { parseCommandLine, withWorkspaceDefault } from "./args.js";
import { assertSupported, resolveConfig, type ResolvedConfig } from "./config.js";
import { gatewayConnection } from "./gateway-connection.js";
import { createRegistry } from "./registry.js";
import { connectionArgs, resumeCommand } from "./connection.js";
import { createOutput } from "./output.js";
import { describeFailure } from "./errors.js";
import { missingSandbox, suggestSandbox } from "./sandbox-suggest.js";
import { EXIT } from "./outcome.js";
import { lineReport, RETRY_RULE, retryInterceptor } from "./retry.js";
import { COMPLETION_KINDS, completeValues, type CompletionKind } from "./dynamic-completion.js";
import type { Command, CommandName } from "./types.js";
import { Interrupted, type CommandContext } from "./commands/context.js";
import { completion } from "./commands/completion.js";
import { gatewayCurrent, gatewayList } from "./commands/gateway.js";
import { operationGet, operationList, operationWait } from "./commands/operation.js";
import { policyGet, policyMerge, policySet } from "./commands/policy.js";
import { policyDiff } from "./commands/policy-diff.js";
import { policyHistory } from "./commands/policy-history.js";
import { policyRolloutSelected } from "./commands/rollout-select.js";
import { policyRolloutResume, policyRolloutUndo } from "./commands/rollout-resume.js";
import { policyRolloutList } from "./commands/rollout-list.js";
import { policyRolloutStatus } from "./commands/rollout-status.js";
import { sandboxList } from "./commands/sandbox.js";
import { settingsDelete, settingsGet, settingsList, settingsSet } from "./commands/settings.js";

type GatewayCommand = Exclude<CommandName, "completion" | "gateway list" | "gateway current">;
type Runner<N extends GatewayCommand> = (ctx: CommandContext, cmd: Extract<Command, { name: N }>) => Promise<number>;

const COMMANDS: { readonly [N in GatewayCommand]: Runner<N> } = {
  "policy set": policySet,
  "policy get": policyGet,
  "policy diff": policyDiff,
  "policy history": policyHistory,
  "policy merge": policyMerge,
  "policy rollout": policyRolloutSelected,
  "policy rollout resume": policyRolloutResume,
  "policy rollout undo": policyRolloutUndo,
  "policy rollout status": policyRolloutStatus,
  "policy rollout approve": policyRolloutResume,
  "policy rollout list": policyRolloutList,
  "policy rollout history": policyRolloutList,
  "settings set": settingsSet,
  "settings delete": settingsDelete,
  "settings get": settingsGet,
  "settings list": settingsList,
  "operation get": operationGet,
  "operation wait": operationWait,
  "operation list": operationList,
  "sandbox list": sandboxList,
};

// The SDK's own retries, for what the interceptor does not see (a watch stream that breaks during
// a wait): the same numbers as RETRY_RULE. Unary calls reach the SDK already retried.
const SDK_RETRY = { retries: RETRY_RULE.delaysMs.length, minDelayMs: RETRY_RULE.delaysMs[0]!, maxDelayMs: RETRY_RULE.delaysMs.at(-1)! };

function version(): string {
  // The package's own package.json, by name (self-reference), from dist/cli/main.js and from
  // cli/main.ts alike.
  return (createRequire(import.meta.url)("openshell-config/package.json") as { version: string }).version;
}

async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  // The completion scripts' hidden helper: candidates on stdout, nothing else, always exit 0.
  if (argv[0] === "__complete") {
    const kind = argv[1] as CompletionKind;
    if ((COMPLETION_KINDS as readonly string[]).includes(kind)) for (const v of await completeValues(kind, argv.slice(2), env)) process.stdout.write(`${v}\n`);
    return EXIT.ok;
  }
  const plain = createOutput("table", process.stdout, process.stderr);
  let parsed;
  try {
    parsed = parseCommandLine(argv);
  } catch (err) {
    const failure = describeFailure(err, undefined);
    plain.error(failure.message);
    if (failure.details) plain.note(failure.details);
    return failure.exitCode;
  }
  const { global } = parsed;
  const command = withWorkspaceDefault(parsed.command, env);
  switch (command.name) {
    case "help":
      process.stdout.write(`${command.text}\n`);
      return EXIT.ok;
    case "version":
      process.stdout.write(`openshell-config ${version()}\n`);
      return EXIT.ok;
    case "completion":
      return completion(process.stdout, command.shell);
  }

  const out = createOutput(global.output, process.stdout, process.stderr, process.env, { headers: global.headers });
  out.redact(global.token);
  // Process warnings as the command line's own lines (redacted, escaped), instead of Node's
  // "(node:PID) ..." form; the SDK's insecure-TLS one is said by gateway-connection.ts already.
  process.removeAllListeners("warning");
  process.on("warning", (w: Error & { code?: string }) => {
    if (w.code !== INSECURE_WARNING_CODE) out.warn(w.message);
  });
  let config: ResolvedConfig | undefined;
  let client: ConfigClient | undefined;
  const controller = new AbortController();
  const onSigint = () => {
    // A second Ctrl-C does not wait for anything.
    if (controller.signal.aborted) process.exit(EXIT.interrupted);
    controller.abort(new Interrupted());
  };
  process.on("SIGINT", onSigint);
  try {
    if (command.name === "gateway list") return gatewayList(out, createRegistry(env));
    config = resolveConfig(global, env);
    out.redact(config.token);
    if (command.name === "gateway current") return gatewayCurrent(out, config, env);
    assertSupported(config);
    const resolved = config;
    const connection = await gatewayConnection(config, { warn: (m) => out.warn(m), redact: (s) => out.redact(s) });
    client = createConfigClient({
      transport: createNodeTransport({
        baseUrl: config.url,
        protocol: global.protocol,
        interceptors: [retryInterceptor(lineReport((line) => out.note(line)))],
        ...(connection.tls !== undefined ? { tls: connection.tls } : {}),
      }),
      token: connection.token,
      allowInsecureToken: global.allowInsecureToken,
      retry: SDK_RETRY,
    });
    const ctx: CommandContext = {
      client,
      out,
      signal: controller.signal,
      spinnerStream: process.stderr,
      resumeCommand: (id, workspace) => resumeCommand(global, resolved, id, workspace),
      connectionArgs: connectionArgs(global, resolved),
    };
    const run = COMMANDS[command.name] as Runner<GatewayCommand>;
    return await run(ctx, command as never);
  } catch (err) {
    let failure = describeFailure(controller.signal.aborted ? controller.signal.reason : err, config);
    const missing = client && !controller.signal.aborted ? missingSandbox(command, failure) : undefined;
    let meant = missing === undefined ? "" : await suggestSandbox(client!, missing, (command as { workspace?: string }).workspace, controller.signal);
    // Ctrl-C during that lookup: the command was interrupted (130), whatever it had failed with.
    if (missing !== undefined && controller.signal.aborted) {
      failure = describeFailure(controller.signal.reason, config);
      meant = "";
    }
    out.error(failure.message + meant);
    if (failure.details) out.note(failure.details);
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
