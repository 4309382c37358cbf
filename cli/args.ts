// Command-line parsing for `openshell-config`: runs the commander program of program.ts over the
// arguments, turns what commander rejects into one-line UsageErrors (with "did you mean" for
// commands and options), and checks and converts the values of the command that was given.
// Everything wrong with the command line is a UsageError (exit status 2), whose hint points to
// that command's --help.

import { CommanderError, type Command as CommanderCommand } from "commander";
import { parseRolloutId, parseRolloutOptions } from "./rollout-args.js";
import { mergeOperationsFromFlags } from "./merge-ops.js";
import { buildProgram, commandPath, COMMANDS, GLOBAL_OPTIONS, type CommandSpec } from "./program.js";
import { parseSelector } from "./selector.js";
import { didYouMean } from "./suggest.js";
import {
  DEFAULT_TIMEOUT_MS,
  OUTPUT_FORMATS,
  PROTOCOLS,
  SETTING_TYPES,
  SHELLS,
  UsageError,
  type Command,
  type GlobalOptions,
  type OutputFormat,
  type ParsedCommandLine,
  type Protocol,
  type SettingType,
  type Shell,
} from "./types.js";
import { parseCount, parseDuration, parseOperationId, parseSettingValue } from "./values.js";

export { DEFAULT_TIMEOUT_MS, SETTING_TYPES, UsageError, parseDuration, parseSelector, parseSettingValue };
export type { Command, CommandName, GlobalOptions, OutputFormat, ParsedCommandLine, Protocol, SettingType, WaitFlags } from "./types.js";

/** The hint line of a usage error: where the help of `command` (or of the program) is. */
export function usageOf(command?: string): string {
  return `run 'openshell-config ${command ? `${command} ` : ""}--help' for usage`;
}

// Thrown through commander's exit override, with the command that stopped.
class Stop {
  constructor(
    readonly error: CommanderError,
    readonly command: CommanderCommand,
  ) {}
}

/** Parses `argv` (without `node` and the script). Throws UsageError for anything wrong. */
export function parseCommandLine(argv: readonly string[]): ParsedCommandLine {
  let ran: { spec: CommandSpec; args: string[]; options: Record<string, unknown>; foreign: readonly string[] } | undefined;
  let out = "";
  const program = buildProgram("", (spec, args, options, foreign) => (ran = { spec, args, options, foreign }));
  const all = (c: CommanderCommand): CommanderCommand[] => [c, ...c.commands.flatMap(all)];
  for (const c of all(program)) {
    c.configureOutput({
      writeOut: (s) => (out += s),
      writeErr: () => {},
      outputError: () => {},
      getOutHelpWidth: () => 80,
      getErrHelpWidth: () => 80,
      getOutHasColors: () => false,
      getErrHasColors: () => false,
    });
    c.exitOverride((err) => {
      throw new Stop(err, c);
    });
  }
  // `help policy set` is `policy set --help`.
  const args = argv[0] === "help" ? [...argv.slice(1), "--help"] : [...argv];
  try {
    program.parse(args, { from: "user" });
  } catch (err) {
    if (!(err instanceof Stop)) throw err;
    const stopped = commandPath(err.command);
    if (err.error.code === "commander.version") return { global: globalOptions({}), command: { name: "version" } };
    if (err.error.exitCode === 0 && (err.error.code === "commander.helpDisplayed" || err.error.code === "commander.help")) {
      return { global: globalOptions({}), command: { name: "help", topic: stopped || undefined, text: out.trimEnd() } };
    }
    throw fromCommander(err.error, err.command, stopped);
  }
  if (ran === undefined) throw new UsageError("no command given", usageOf());
  if (ran.foreign.length > 0) throw new UsageError(`${ran.spec.name} does not take ${ran.foreign[0]}`, usageOf(ran.spec.name));
  const global = globalOptions(ran.options);
  return { global, command: commandOf(ran.spec, ran.args, ran.options) };
}

/** commander's message for `err`, as one line of ours. */
function fromCommander(err: CommanderError, cmd: CommanderCommand, path: string): UsageError {
  const hint = usageOf(path || undefined);
  const message = err.message.replace(/^error: /, "");
  const quoted = /'([^']*)'/.exec(message)?.[1] ?? "";
  const suggested = /\(Did you mean (?:one of )?(.+)\?\)/.exec(message)?.[1];
  const mean = suggested ? `; did you mean ${suggested.split(", ").map((s) => `"${path && !s.startsWith("-") ? `${path} ` : ""}${s}"`).join(" or ")}?` : "";
  switch (err.code) {
    case "commander.help": {
      // A group without a subcommand, or no command at all.
      if (path === "") return new UsageError(`no command given; commands: ${COMMANDS.map((c) => c.name.split(" ")[0]).filter((g, i, a) => a.indexOf(g) === i).join(", ")}`, hint);
      return new UsageError(`"${path}" needs a subcommand: ${cmd.commands.map((c) => c.name()).join(", ")}`, hint);
    }
    case "commander.unknownCommand": {
      // Suggested from the subcommands themselves (the program's help lists leaves, which commander would offer).
      const near = didYouMean(quoted, cmd.commands.map((c) => c.name()));
      return new UsageError(`unknown command "${path ? `${path} ` : ""}${quoted}"${near.replace(/"([^"]+)"\?$/, (_, w: string) => `"${path ? `${path} ` : ""}${w}"?`)}`, hint);
    }
    case "commander.unknownOption": {
      const elsewhere = COMMANDS.some((c) => c.options.some((o) => o.flags.split(/[ ,]+/).includes(quoted)));
      if (path !== "" && elsewhere && mean === "") return new UsageError(`${path} does not take ${quoted}`, hint);
      return new UsageError(`unknown option "${quoted}"${path ? ` for ${path}` : ""}${mean}`, hint);
    }
    case "commander.optionMissingArgument": {
      const flag = /--[\w-]+/.exec(quoted)?.[0] ?? quoted;
      return new UsageError(`${flag} needs a value`, hint);
    }
    case "commander.missingArgument":
      return new UsageError(`${path} needs ${quoted}`, hint);
    case "commander.excessArguments": {
      const extra = cmd.args[cmd.registeredArguments.length];
      if (cmd.commands.length > 0 && cmd.registeredArguments.length === 0) {
        // A command with its own action and subcommands (`policy rollout`): a mistyped subcommand.
        const near = didYouMean(extra ?? "", cmd.commands.map((c) => c.name()));
        return new UsageError(`unknown command "${path} ${extra ?? ""}"${near.replace(/"([^"]+)"\?$/, (_, w: string) => `"${path} ${w}"?`)}`, hint);
      }
      return new UsageError(`unexpected argument "${extra ?? ""}"${cmd.registeredArguments.length === 0 ? ` (${path} takes no arguments)` : ""}`, hint);
    }
    default:
      return new UsageError(message.split("\n")[0]!, hint);
  }
}

function choice<T extends string>(value: unknown, choices: readonly T[], flag: string, fallback: T, hint: string): T {
  if (value === undefined) return fallback;
  const v = String(value);
  if ((choices as readonly string[]).includes(v)) return v as T;
  throw new UsageError(`${flag} must be ${choices.slice(0, -1).join(", ")} or ${choices.at(-1)}; got "${v}"${didYouMean(v, choices)}`, hint);
}

function globalOptions(values: Record<string, unknown>): GlobalOptions {
  const hint = usageOf();
  for (const [flag, key] of [["--url", "url"], ["--gateway-endpoint", "gatewayEndpoint"], ["--gateway", "gateway"], ["--token", "token"], ["--config", "config"]] as const) {
    if (values[key] === "") throw new UsageError(`${flag} must not be empty`, hint);
  }
  return {
    url: values.url as string | undefined,
    gatewayEndpoint: values.gatewayEndpoint as string | undefined,
    gateway: values.gateway as string | undefined,
    gatewayInsecure: values.gatewayInsecure === true,
    token: values.token as string | undefined,
    config: values.config as string | undefined,
    protocol: choice<Protocol>(values.protocol, PROTOCOLS, "--protocol", "grpc", hint),
    protocolGiven: values.protocol !== undefined,
    output: choice<OutputFormat>(values.output, OUTPUT_FORMATS, "--output", "table", hint),
    headers: values.headers !== false,
    allowInsecureToken: values.allowInsecureToken === true,
  };
}

/** The command `spec` with its arguments and option values checked and converted. */
function commandOf(spec: CommandSpec, args: readonly string[], v: Record<string, unknown>): Command {
  const name = spec.name;
  const hint = usageOf(name);
  const fail = (message: string): never => {
    throw new UsageError(message, hint);
  };
  const attempt = <T>(f: () => T): T => {
    try {
      return f();
    } catch (err) {
      return fail((err as Error).message);
    }
  };
  const str = (key: string): string | undefined => v[key] as string | undefined;
  const required = (key: string, flag: string, allowEmpty = false): string => {
    const value = str(key);
    if (value === undefined) fail(`${name} needs ${flag}`);
    if (value === "" && !allowEmpty) fail(`${flag} must not be empty`);
    return value!;
  };
  const workspace = str("workspace");
  if (workspace === "") fail("--workspace must not be empty");
  const timeoutMs = v.timeout === undefined ? DEFAULT_TIMEOUT_MS : attempt(() => parseDuration(str("timeout")!));
  const idempotencyKey = str("idempotencyKey");
  if (idempotencyKey !== undefined && (idempotencyKey === "" || idempotencyKey.trim() !== idempotencyKey)) {
    fail("--idempotency-key must not be empty or have leading or trailing spaces");
  }
  const scoped = () => ({ sandbox: required("sandbox", "--sandbox"), workspace });
  const update = () => ({
    ...scoped(),
    idempotencyKey,
    // --timeout alone means "wait this long".
    wait: v.wait === true || v.timeout !== undefined,
    timeoutMs,
  });
  const limit = () => (v.limit === undefined ? 20 : attempt(() => parseCount(str("limit")!, "--limit", 0)));
  const selector = () => attempt(() => parseSelector((v.selector as string[] | undefined) ?? []));
  const operationId = () => attempt(() => parseOperationId(args[0]!));

  switch (name) {
    case "policy set":
      return { name, ...update(), file: required("file", "--file"), dryRun: v.dryRun === true };
    case "policy get":
      return { name, ...scoped() };
    case "policy diff":
      return { name, ...scoped(), file: required("file", "--file") };
    case "policy history":
      return { name, ...scoped(), limit: limit() };
    case "policy merge": {
      const common = update();
      const file = str("file");
      if (file === "") fail("--file must not be empty");
      const operations = attempt(() => mergeOperationsFromFlags(v));
      if (file === undefined && operations.length === 0) {
        fail("policy merge needs --file or an operation: --add-rule, --remove-rule, --remove-endpoint or --remove-binary");
      }
      return { name, ...common, file, operations };
    }
    case "policy rollout":
      return attempt(() =>
        parseRolloutOptions({ ...(v as Record<string, string>), pauseForApproval: v.pauseForApproval === true, rollbackOnFailure: v.rollbackOnFailure === true, failOnDegraded: v.failOnDegraded === true, fourEyes: v.fourEyes === true, labelSelector: selector(), timeoutMs: v.timeout === undefined ? undefined : timeoutMs }, workspace),
      );
    case "policy rollout resume":
    case "policy rollout approve":
      return {
        name,
        id: attempt(() => parseRolloutId(args[0]!, "ROLLOUT_ID")),
        workspace,
        concurrency: v.concurrency === undefined ? undefined : attempt(() => parseCount(str("concurrency")!, "--concurrency", 1)),
        maxFailures: v.maxFailures === undefined ? undefined : attempt(() => parseCount(str("maxFailures")!, "--max-failures", 1)),
        timeoutMs: v.timeout === undefined ? undefined : timeoutMs,
      };
    case "policy rollout undo":
      return {
        name,
        id: attempt(() => parseRolloutId(args[0]!, "ROLLOUT_ID")),
        workspace,
        concurrency: v.concurrency === undefined ? undefined : attempt(() => parseCount(str("concurrency")!, "--concurrency", 1)),
        timeoutMs: v.timeout === undefined ? undefined : timeoutMs,
      };
    case "policy rollout status":
      return { name, id: attempt(() => parseRolloutId(args[0]!, "ROLLOUT_ID")), workspace, watch: v.watch === true };
    case "policy rollout list":
    case "policy rollout history":
      if (v.allWorkspaces && workspace !== undefined) fail("--workspace and --all-workspaces are mutually exclusive");
      return { name, workspace, allWorkspaces: v.allWorkspaces === true, watch: v.watch === true, limit: name === "policy rollout history" ? limit() : 0 };
    case "settings set": {
      const type = choice<SettingType>(v.type, SETTING_TYPES, "--type", "string", hint);
      const common = update();
      const key = required("key", "--key");
      const raw = required("value", "--value", true);
      return { name, ...common, key, type, value: attempt(() => parseSettingValue(raw, type)) };
    }
    case "settings delete":
      return { name, ...update(), key: required("key", "--key") };
    case "settings get": {
      const common = scoped();
      const key = args[0] ?? str("key");
      if (args[0] !== undefined && v.key !== undefined && v.key !== args[0]) fail("give the key once: as KEY or as --key");
      if (key === undefined) fail("settings get needs KEY");
      if (key === "") fail("KEY must not be empty");
      return { name, ...common, key: key! };
    }
    case "settings list":
      return { name, ...scoped() };
    case "operation get":
      return { name, id: operationId(), workspace, watch: v.watch === true };
    case "operation wait":
      return { name, id: operationId(), workspace, timeoutMs };
    case "operation list":
      return { name, ...scoped(), limit: limit() };
    case "sandbox list":
      if (v.allWorkspaces && workspace !== undefined) fail("--workspace and --all-workspaces are mutually exclusive");
      return { name, selector: selector(), workspace, allWorkspaces: v.allWorkspaces === true, watch: v.watch === true };
    case "completion":
      return { name, shell: choice<Shell>(args[0], SHELLS, "the shell", "bash", hint) };
    case "gateway list":
    case "gateway current":
      return { name };
  }
}

/**
 * `command` with OPENSHELL_WORKSPACE as its workspace when it takes --workspace and none was
 * given (the flag wins). Not for what has a workspace of its own: a rollout resumed from its
 * saved state, a listing of every workspace.
 */
export function withWorkspaceDefault<C extends Command>(command: C, env: NodeJS.ProcessEnv): C {
  const fromEnv = env.OPENSHELL_WORKSPACE;
  if (fromEnv === undefined || fromEnv === "" || !("workspace" in command) || command.workspace !== undefined) return command;
  if (command.name === "policy rollout resume" || (command.name === "policy rollout" && command.resume !== undefined)) return command;
  if ("allWorkspaces" in command && command.allWorkspaces) return command;
  return { ...command, workspace: fromEnv };
}

/** Every long option of every command and the global ones, for tests and completion. */
export const ALL_LONG_OPTIONS: readonly string[] = [...new Set([...GLOBAL_OPTIONS, ...COMMANDS.flatMap((c) => c.options)].map((o) => /--[\w-]+/.exec(o.flags)![0]))];
