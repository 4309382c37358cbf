// Command-line parsing for `openshell-config`: node:util parseArgs over the union of every
// option, then per command which options it accepts, which it requires and what their values
// mean. Everything wrong with the command line is a UsageError (exit status 2).

import { parseArgs } from "node:util";
import type { SettingInput } from "openshell-config";
import { parseRolloutOptions, ROLLOUT_EXIT_HELP, ROLLOUT_USAGE, type RolloutCommand } from "./rollout-args.js";
import { parseDuration, parseSelector, parseSettingValue } from "./values.js";

export { parseDuration, parseSelector, parseSettingValue };

export type Protocol = "grpc" | "connect" | "grpc-web";
export type OutputFormat = "table" | "json";

/** Options every command accepts. */
export interface GlobalOptions {
  readonly url: string | undefined;
  readonly token: string | undefined;
  /** `--config FILE`: a config file other than the default one. */
  readonly config: string | undefined;
  readonly protocol: Protocol;
  /** True when `--protocol` was given (so a resume command repeats it). */
  readonly protocolGiven: boolean;
  readonly output: OutputFormat;
  readonly allowInsecureToken: boolean;
}

/** Waiting for the outcome of an update. `timeoutMs` is `Infinity` for `--timeout 0`. */
export interface WaitFlags {
  readonly wait: boolean;
  readonly timeoutMs: number;
}

interface Scoped {
  readonly workspace: string | undefined;
}

interface UpdateFlags extends Scoped, WaitFlags {
  readonly sandbox: string;
  readonly idempotencyKey: string | undefined;
}

export type Command =
  | ({ readonly name: "policy set"; readonly file: string } & UpdateFlags)
  | ({ readonly name: "policy get"; readonly sandbox: string } & Scoped)
  | RolloutCommand
  | ({ readonly name: "settings set"; readonly key: string; readonly value: SettingInput; readonly type: SettingType } & UpdateFlags)
  | ({ readonly name: "settings delete"; readonly key: string } & UpdateFlags)
  | ({ readonly name: "operation get"; readonly id: string } & Scoped)
  | ({ readonly name: "operation wait"; readonly id: string; readonly timeoutMs: number } & Scoped)
  | ({ readonly name: "sandbox list"; readonly selector: string | undefined; readonly allWorkspaces: boolean } & Scoped)
  | { readonly name: "help"; readonly topic: string | undefined }
  | { readonly name: "version" };

export type CommandName = Exclude<Command["name"], "help" | "version">;

export interface ParsedCommandLine {
  readonly global: GlobalOptions;
  readonly command: Command;
}

export const SETTING_TYPES = ["string", "bool", "int", "bytes-base64"] as const;
export type SettingType = (typeof SETTING_TYPES)[number];

/** A command line that cannot be run. `usage` is the help text of the command it was meant for. */
export class UsageError extends Error {
  override readonly name = "UsageError";
  constructor(
    message: string,
    readonly usage: string,
  ) {
    super(message);
  }
}

/** The default of `--timeout`. */
export const DEFAULT_TIMEOUT_MS = 60_000;

const OPTIONS = {
  // global
  url: { type: "string" },
  token: { type: "string" },
  config: { type: "string" },
  protocol: { type: "string" },
  output: { type: "string", short: "o" },
  "allow-insecure-token": { type: "boolean" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean" },
  // per command
  sandbox: { type: "string", short: "s" },
  file: { type: "string", short: "f" },
  wait: { type: "boolean" },
  timeout: { type: "string" },
  "idempotency-key": { type: "string" },
  workspace: { type: "string" },
  key: { type: "string" },
  value: { type: "string" },
  type: { type: "string" },
  selector: { type: "string", multiple: true, short: "l" },
  "all-workspaces": { type: "boolean" },
  concurrency: { type: "string" },
  "max-failures": { type: "string" },
  resume: { type: "string" },
} as const;

type OptionName = keyof typeof OPTIONS;
type Values = { [K in OptionName]?: (typeof OPTIONS)[K] extends { multiple: true } ? string[] : (typeof OPTIONS)[K]["type"] extends "boolean" ? boolean : string };

const GLOBAL_OPTIONS: readonly OptionName[] = ["url", "token", "config", "protocol", "output", "allow-insecure-token", "help", "version"];

const UPDATE_OPTIONS: readonly OptionName[] = ["sandbox", "wait", "timeout", "idempotency-key", "workspace"];

/** Per command: the options it accepts beyond the global ones, and its positional arguments. */
const COMMANDS: Readonly<Record<CommandName, { readonly options: readonly OptionName[]; readonly positionals: readonly string[] }>> = {
  "policy set": { options: [...UPDATE_OPTIONS, "file"], positionals: [] },
  "policy get": { options: ["sandbox", "workspace"], positionals: [] },
  "policy rollout": { options: ["selector", "file", "concurrency", "max-failures", "timeout", "resume", "workspace"], positionals: [] },
  "settings set": { options: [...UPDATE_OPTIONS, "key", "value", "type"], positionals: [] },
  "settings delete": { options: [...UPDATE_OPTIONS, "key"], positionals: [] },
  "operation get": { options: ["workspace"], positionals: ["ID"] },
  "operation wait": { options: ["workspace", "timeout"], positionals: ["ID"] },
  "sandbox list": { options: ["selector", "workspace", "all-workspaces"], positionals: [] },
};

const GROUPS = ["policy", "settings", "operation", "sandbox"] as const;

const CONNECTION_HELP = `Connection (every command):
  --url URL               gateway URL (env OPENSHELL_GATEWAY_URL, or "url" in the config file)
  --token TOKEN           bearer token (env OPENSHELL_TOKEN, or "token" in the config file);
                          prefer the environment or the file: a flag is visible to other users
  --config FILE           config file (default ~/.config/openshell-config/config.json)
  --protocol P            grpc (default), connect or grpc-web
  --allow-insecure-token  allow a token over plain http to a non-loopback host
  -o, --output FORMAT     table (default) or json`;

const WAIT_HELP = `  --wait                  wait for the outcome at the sandbox (otherwise return once committed)
  --timeout DURATION      how long to wait, e.g. 500ms, 30s, 5m (default 60s; 0 = no limit);
                          implies --wait
  --idempotency-key KEY   resending the same change with the same key never creates a second
                          revision (default: a fresh UUID, printed)
  --workspace W           the sandbox's workspace (default: the gateway's default workspace)`;

const EXIT_HELP = `Exit status: 0 applied (also degraded, with a warning) or inactive; 1 failed, superseded,
cancelled, or an error; 2 usage error; 124 the wait timed out (the operation keeps running:
resume it with "openshell-config operation wait ID"); 130 interrupted.`;

const USAGE: Readonly<Record<CommandName | "main", string>> = {
  main: `Usage: openshell-config <command> [options]

Change an OpenShell sandbox's configuration and know what became of the change.

Commands:
  policy set        --sandbox S --file FILE [--wait] [--timeout D] [--idempotency-key K]
  policy get        --sandbox S
  policy rollout    --selector k=v --file FILE [--max-failures N] [--concurrency N] [--resume ID]
  settings set      --sandbox S --key K --value V [--type T] [--wait] [--timeout D]
  settings delete   --sandbox S --key K [--wait] [--timeout D]
  operation get     ID
  operation wait    ID [--timeout D]
  sandbox list      [--selector k=v]

Run "openshell-config <command> --help" for a command's options.`,
  "policy set": `Usage: openshell-config policy set --sandbox S --file FILE [options]

Replaces the sandbox's policy with the SandboxPolicy in FILE (YAML, or JSON for *.json; field
names in camelCase or snake_case, as in the protobuf JSON mapping).

  -s, --sandbox S         the sandbox name (required)
  -f, --file FILE         the policy file (required)
${WAIT_HELP}`,
  "policy get": `Usage: openshell-config policy get --sandbox S [options]

Shows the sandbox's current policy, its version and whether the sandbox has loaded it.

  -s, --sandbox S         the sandbox name (required)
  --workspace W           the sandbox's workspace`,
  "policy rollout": ROLLOUT_USAGE,
  "settings set": `Usage: openshell-config settings set --sandbox S --key K --value V [options]

Sets one sandbox setting.

  -s, --sandbox S         the sandbox name (required)
  --key K                 the setting's key (required)
  --value V               its value (required; a negative number as --value=-5)
  --type T                string (default), bool (true or false), int (64-bit) or bytes-base64
${WAIT_HELP}`,
  "settings delete": `Usage: openshell-config settings delete --sandbox S --key K [options]

Deletes one sandbox setting.

  -s, --sandbox S         the sandbox name (required)
  --key K                 the setting's key (required)
${WAIT_HELP}`,
  "operation get": `Usage: openshell-config operation get ID [options]

Shows the current state of an update operation, without waiting. Exits 0 whatever the state.

  --workspace W           the operation's workspace`,
  "operation wait": `Usage: openshell-config operation wait ID [options]

Waits for the outcome of an update operation (e.g. one whose wait timed out).

  --timeout DURATION      how long to wait (default 60s; 0 = no limit)
  --workspace W           the operation's workspace`,
  "sandbox list": `Usage: openshell-config sandbox list [options]

Lists sandboxes.

  -l, --selector k=v      only sandboxes with this label (repeatable, or k=v,k2=v2)
  --workspace W           list this workspace (default: the gateway's default workspace)
  --all-workspaces        list every workspace you can see`,
};

const WAITS: ReadonlySet<string> = new Set(["main", "policy set", "policy rollout", "settings set", "settings delete", "operation wait"]);

/**
 * The help text of a command, or of the whole program. `full` (for --help) adds the connection
 * options and the exit statuses; a usage error shows the short form and points to --help.
 */
export function usageOf(command?: string, full = false): string {
  const key = command !== undefined && command in USAGE ? (command as CommandName) : "main";
  if (!full) return `${USAGE[key]}\n\nRun "openshell-config ${key === "main" ? "" : `${key} `}--help" for the connection options${WAITS.has(key) ? " and the exit statuses" : ""}.`;
  const exit = key === "policy rollout" ? ROLLOUT_EXIT_HELP : EXIT_HELP;
  return `${USAGE[key]}\n\n${CONNECTION_HELP}${WAITS.has(key) ? `\n\n${exit}` : ""}`;
}

/** Parses `argv` (without `node` and the script). Throws UsageError for anything wrong. */
export function parseCommandLine(argv: readonly string[]): ParsedCommandLine {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true }) as typeof parsed;
  } catch (err) {
    throw new UsageError(parseArgsMessage(err), usageOf(guessCommand(argv)));
  }
  const { values, positionals } = parsed;

  const global = globalOptions(values);
  const [group, verb, ...rest] = positionals;
  // `help`, `help policy set`
  if (group === "help") {
    const topic = [verb, ...rest].join(" ").trim();
    if (topic !== "" && !(topic in USAGE)) throw new UsageError(`unknown command "${topic}"`, usageOf());
    return { global, command: { name: "help", topic: topic === "" ? undefined : topic } };
  }
  if (group === undefined) {
    if (values.version) return { global, command: { name: "version" } };
    if (values.help) return { global, command: { name: "help", topic: undefined } };
    throw new UsageError("no command given", usageOf());
  }
  if (!(GROUPS as readonly string[]).includes(group)) throw new UsageError(`unknown command "${group}"`, usageOf());
  const name = `${group} ${verb ?? ""}`.trim();
  if (!(name in COMMANDS)) {
    if (values.help && verb === undefined) return { global, command: { name: "help", topic: undefined } };
    throw new UsageError(verb === undefined ? `"${group}" needs a subcommand` : `unknown command "${name}"`, usageOf());
  }
  const commandName = name as CommandName;
  const usage = usageOf(commandName);
  if (values.help) return { global, command: { name: "help", topic: commandName } };

  const spec = COMMANDS[commandName];
  for (const option of Object.keys(values) as OptionName[]) {
    if (!GLOBAL_OPTIONS.includes(option) && !spec.options.includes(option)) {
      throw new UsageError(`${commandName} does not take --${option}`, usage);
    }
  }
  if (rest.length > spec.positionals.length) {
    throw new UsageError(`unexpected argument "${rest[spec.positionals.length]}"`, usage);
  }
  if (rest.length < spec.positionals.length) {
    throw new UsageError(`${commandName} needs ${spec.positionals.slice(rest.length).join(" ")}`, usage);
  }

  const fail = (message: string): never => {
    throw new UsageError(message, usage);
  };
  const required = (option: "sandbox" | "file" | "key" | "value"): string => {
    const v = values[option];
    if (v === undefined) fail(`${commandName} needs --${option}`);
    if (v === "" && option !== "value") fail(`--${option} must not be empty`);
    return v!;
  };
  const attempt = <T>(f: () => T): T => {
    try {
      return f();
    } catch (err) {
      return fail((err as Error).message);
    }
  };
  const workspace = values.workspace;
  if (workspace === "") fail("--workspace must not be empty");
  const timeoutMs = values.timeout === undefined ? DEFAULT_TIMEOUT_MS : attempt(() => parseDuration(values.timeout!));
  const idempotencyKey = values["idempotency-key"];
  if (idempotencyKey !== undefined && (idempotencyKey === "" || idempotencyKey.trim() !== idempotencyKey)) {
    fail("--idempotency-key must not be empty or have leading or trailing spaces");
  }
  const update = () => ({
    sandbox: required("sandbox"),
    workspace,
    idempotencyKey,
    // --timeout alone means "wait this long".
    wait: values.wait === true || values.timeout !== undefined,
    timeoutMs,
  });

  let command: Command;
  switch (commandName) {
    case "policy set":
      command = { name: commandName, ...update(), file: required("file") };
      break;
    case "policy get":
      command = { name: commandName, sandbox: required("sandbox"), workspace };
      break;
    case "policy rollout":
      command = attempt(() =>
        parseRolloutOptions(
          { ...values, selector: parseSelector(values.selector ?? []), timeoutMs: values.timeout === undefined ? undefined : timeoutMs },
          workspace,
        ),
      );
      break;
    case "settings set": {
      const type = (values.type ?? "string") as SettingType;
      if (!SETTING_TYPES.includes(type)) fail(`--type must be one of ${SETTING_TYPES.join(", ")}; got "${values.type}"`);
      const common = update();
      const key = required("key");
      const raw = required("value");
      command = { name: commandName, ...common, key, type, value: attempt(() => parseSettingValue(raw, type)) };
      break;
    }
    case "settings delete":
      command = { name: commandName, ...update(), key: required("key") };
      break;
    case "operation get":
    case "operation wait": {
      const id = rest[0]!;
      if (id.trim() === "") fail("the operation ID must not be empty");
      command = commandName === "operation get" ? { name: commandName, id, workspace } : { name: commandName, id, workspace, timeoutMs };
      break;
    }
    case "sandbox list":
      if (values["all-workspaces"] && workspace !== undefined) fail("--workspace and --all-workspaces are mutually exclusive");
      command = {
        name: commandName,
        selector: attempt(() => parseSelector(values.selector ?? [])),
        workspace,
        allWorkspaces: values["all-workspaces"] === true,
      };
      break;
  }
  return { global, command };
}

function globalOptions(values: Values): GlobalOptions {
  const protocol = values.protocol ?? "grpc";
  if (protocol !== "grpc" && protocol !== "connect" && protocol !== "grpc-web") {
    throw new UsageError(`--protocol must be grpc, connect or grpc-web; got "${protocol}"`, usageOf());
  }
  const output = values.output ?? "table";
  if (output !== "table" && output !== "json") {
    throw new UsageError(`--output must be table or json; got "${output}"`, usageOf());
  }
  if (values.url === "") throw new UsageError("--url must not be empty", usageOf());
  if (values.token === "") throw new UsageError("--token must not be empty", usageOf());
  if (values.config === "") throw new UsageError("--config must not be empty", usageOf());
  return {
    url: values.url,
    token: values.token,
    config: values.config,
    protocol,
    protocolGiven: values.protocol !== undefined,
    output,
    allowInsecureToken: values["allow-insecure-token"] === true,
  };
}

// The command the user was typing, for the usage text of an unparseable command line.
function guessCommand(argv: readonly string[]): string | undefined {
  const words = argv.filter((a) => /^[a-z]+$/.test(a));
  for (let i = 0; i + 1 < words.length; i++) {
    const name = `${words[i]} ${words[i + 1]}`;
    if (name in COMMANDS) return name;
  }
  return undefined;
}

// node:util's messages, shortened to one line.
function parseArgsMessage(err: unknown): string {
  const e = err as { code?: string; message?: string };
  const message = String(e.message ?? err);
  if (e.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const m = /Unknown option '([^']+)'/.exec(message);
    return `unknown option ${m?.[1] ?? ""}`.trim();
  }
  if (e.code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    const missing = /Option '(-\w, )?(--[\w-]+)[^']*' argument missing/.exec(message);
    if (missing) return `${missing[2]} needs a value`;
    const ambiguous = /Option '(--[\w-]+)' argument is ambiguous/.exec(message);
    if (ambiguous) return `${ambiguous[1]} needs a value (for a value starting with "-", write ${ambiguous[1]}=-…)`;
    const flag = /Option '(--[\w-]+)' does not take an argument/.exec(message);
    if (flag) return `${flag[1]} does not take a value`;
  }
  return message.split("\n")[0]!;
}
