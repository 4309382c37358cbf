// The commands and options of `openshell-config`, declared once for commander 14: parsing, the
// `--help` of each command, "did you mean" for mistyped commands and options, and the shell
// completion scripts (completion.ts walks the same tree). args.ts runs it and checks the values.
//
// Why commander rather than the node:util parseArgs code this replaced: commander is maintained,
// has no dependencies and runs on Node 20; it gives per-command help, suggestions for mistyped
// commands and options, and a tree of commands that completion scripts can be generated from.
// The hand-written parser needed its own help texts, a table of which command takes which
// option, and would have needed its own suggestions and completion on top (~400 lines then, and
// growing with each command); with commander the declarations below are the whole contract.

import { examplesHelp } from "./examples.js";
import { Command, Help } from "commander";
import { OUTPUT_FORMATS, PROTOCOLS, SETTING_TYPES, SHELLS, type CommandName } from "./types.js";
import { policyFile, sandbox, selector, workspace, type CommandSpec, type OptionSpec } from "./program-specs.js";
import { ROLLOUT_COMMANDS } from "./program-rollout.js";

export type { CommandSpec, OptionSpec } from "./program-specs.js";

const limit = (what: string): OptionSpec => ({ flags: "--limit <N>", help: `show the newest N ${what} (default 20; 0 = all)` });
const WAIT: readonly OptionSpec[] = [
  { flags: "--wait", help: "wait for the outcome at the sandbox (otherwise return once committed)" },
  { flags: "--timeout <DURATION>", help: "how long to wait: 500ms, 30s, 5m (default 60s; 0 = no limit); implies --wait" },
  { flags: "--idempotency-key <KEY>", help: "the same change with the same key never makes a second revision (default: a fresh UUID, printed)" },
  workspace,
];

export const EXIT_HELP = `Exit status: 0 applied (also degraded, with a warning) or inactive; 1 failed,
superseded, cancelled, or an error; 2 usage error; 124 the wait timed out (the
operation keeps running: resume it with "openshell-config operation wait ID");
69 the gateway went away during the wait (resume likewise); 130 interrupted.`;

export const COMMANDS: readonly CommandSpec[] = [
  {
    name: "policy get",
    summary: "the desired policy, what the sandbox enforces, and the drift",
    description: "Shows the sandbox's desired policy (as YAML), its version and load status, what the sandbox enforces according to its latest result, and the drift between them.",
    usage: "--sandbox S [options]",
    options: [sandbox, workspace],
  },
  {
    name: "policy set",
    summary: "replace a sandbox's policy with the one in a file",
    description:
      "Replaces the sandbox's policy with the SandboxPolicy in FILE (YAML, or JSON for *.json; field names in camelCase or snake_case, as in the protobuf JSON mapping). With --dry-run it checks the file and shows the diff against the desired policy, and sends nothing.",
    usage: "--sandbox S --file FILE [options]",
    options: [sandbox, policyFile, { flags: "--dry-run", help: "check the file and show the diff; send nothing" }, ...WAIT],
    after: EXIT_HELP,
  },
  {
    name: "policy diff",
    summary: "the desired policy against a file, before sending it",
    description: "Shows how the policy in FILE differs from the sandbox's desired policy, as a unified diff of their YAML. Exit status 0 when they are equal, 1 when they differ (as diff), 2 usage error.",
    usage: "--sandbox S --file FILE [options]",
    options: [sandbox, policyFile, workspace],
  },
  {
    name: "policy history",
    summary: "a sandbox's policy revisions, newest first, with each one's status",
    description: "Lists the sandbox's policy revisions, newest first: version, load status (pending, loaded, failed, superseded; the one the sandbox enforces is marked), hash, when committed and loaded, and the load error of a failed one.",
    usage: "--sandbox S [options]",
    options: [sandbox, limit("revisions"), workspace],
  },
  {
    name: "policy merge",
    summary: "edit a sandbox's network rules in place (merge operations)",
    description:
      "Applies merge operations to the sandbox's current policy. OPERATIONS are flags (one --add-rule, --remove-endpoint or --remove-binary with its --host, --port and --binary; --remove-rule repeats) and/or --file FILE, a YAML or JSON list of PolicyMergeOperation (e.g. - removeRule: { ruleName: npm }). The file's operations apply first, then --remove-rule, --remove-endpoint, --remove-binary, --add-rule. The static fields stay as they are.",
    usage: "--sandbox S OPERATIONS [options]",
    options: [
      sandbox,
      { flags: "-f, --file <FILE>", help: "merge operations: a YAML or JSON list of PolicyMergeOperation", complete: "file" },
      { flags: "--add-rule <NAME>", help: "add (or replace) the network rule NAME: endpoints --host and --port, binaries --binary" },
      { flags: "--remove-rule <NAME>", help: "remove the network rule NAME (repeatable)", repeatable: true },
      { flags: "--remove-endpoint <NAME>", help: "remove the endpoint --host, --port from the rule NAME" },
      { flags: "--remove-binary <NAME>", help: "remove the binary --binary from the rule NAME" },
      { flags: "--host <HOST>", help: "the endpoint's host (exact name or glob)" },
      { flags: "--port <PORT>", help: "the endpoint's port (repeatable with --add-rule)", repeatable: true },
      { flags: "--binary <PATH>", help: "a binary allowed to use the rule (repeatable with --add-rule)", repeatable: true },
      ...WAIT,
    ],
    after: EXIT_HELP,
  },
  ...ROLLOUT_COMMANDS,
  {
    name: "settings get",
    summary: "one setting of a sandbox, with its type and scope",
    description: "Shows one effective setting of the sandbox: its value, type (string, bool, int, bytes-base64) and scope (sandbox, or global when the gateway-wide value applies). Exit status 1 when it is not set.",
    usage: "--sandbox S KEY [options]",
    args: ["[KEY]"],
    options: [sandbox, { flags: "--key <K>", help: "the setting's key (or give it as KEY)" }, workspace],
  },
  {
    name: "settings list",
    summary: "every setting of a sandbox, with its type and scope",
    description: "Lists the sandbox's effective settings: key, type, value and scope (sandbox or global).",
    usage: "--sandbox S [options]",
    options: [sandbox, workspace],
  },
  {
    name: "settings set",
    summary: "set one setting",
    description: "Sets one sandbox setting.",
    usage: "--sandbox S --key K --value V [options]",
    options: [
      sandbox,
      { flags: "--key <K>", help: "the setting's key (required)" },
      { flags: "--value <V>", help: "its value (required; a negative number works: --value -5)" },
      { flags: "--type <T>", help: "string (default), bool (true or false), int (64-bit) or bytes-base64", choices: SETTING_TYPES },
      ...WAIT,
    ],
    after: EXIT_HELP,
  },
  {
    name: "settings delete",
    summary: "delete one setting",
    description: "Deletes one sandbox setting.",
    usage: "--sandbox S --key K [options]",
    options: [sandbox, { flags: "--key <K>", help: "the setting's key (required)" }, ...WAIT],
    after: EXIT_HELP,
  },
  {
    name: "operation get",
    summary: "an update operation's current state (-w: follow it)",
    description: "Shows the current state of an update operation and the sandbox it is for, without waiting; exit status 0 whatever the state. With --watch, prints each change of state until it is final (redrawn in place on a terminal).",
    usage: "ID [options]",
    args: ["<ID>"],
    options: [{ flags: "-w, --watch", help: "follow the operation until its outcome (Ctrl-C stops)" }, { ...workspace, help: "the operation's workspace" }],
  },
  {
    name: "operation wait",
    summary: "wait for an update operation's outcome",
    description: "Waits for the outcome of an update operation (e.g. one whose wait timed out).",
    usage: "ID [options]",
    args: ["<ID>"],
    options: [{ flags: "--timeout <DURATION>", help: "how long to wait (default 60s; 0 = no limit)" }, { ...workspace, help: "the operation's workspace" }],
    after: EXIT_HELP,
  },
  {
    name: "operation list",
    summary: "a sandbox's update operations, newest first",
    description: "Lists the sandbox's configuration update operations, newest first: id, what it changed, state, outcome, when. Needs a gateway with the ListConfigUpdateOperations extension (this project's); others are told so.",
    usage: "--sandbox S [options]",
    options: [sandbox, limit("operations"), workspace],
  },
  {
    name: "sandbox list",
    summary: "sandboxes with desired and enforced policy versions (-w: follow)",
    description: "Lists sandboxes with their phase, desired policy version, what each enforces, the drift, and labels. With --watch, lists again whenever one of them changes (redrawn in place on a terminal, appended otherwise; Ctrl-C stops).",
    usage: "[--selector SELECTOR] [options]",
    options: [
      { ...selector, help: `only these sandboxes: ${selector.help}` },
      { flags: "-w, --watch", help: "list again on every change (Ctrl-C stops)" },
      { flags: "--workspace <W>", help: "list this workspace (default: the gateway's default workspace)" },
      { flags: "-A, --all-workspaces", help: "list every workspace you can see" },
    ],
  },
  {
    name: "gateway list",
    summary: "the gateways of the openshell CLI's registry (* marks the active one)",
    description:
      "Lists the gateways registered with the openshell CLI: the user registry ($XDG_CONFIG_HOME/openshell, default ~/.config/openshell) and the system registry ($OPENSHELL_SYSTEM_GATEWAY_DIR, else /etc/openshell), a user entry hiding a system entry of the same name. For each: whether it is the active gateway (*), its name, endpoint, auth mode (mtls, plaintext, oidc, cloudflare_jwt) and registry (user or system). An entry that cannot be read is skipped with a warning on stderr; an empty registry prints nothing on stdout.",
    usage: "[options]",
    options: [],
  },
  {
    name: "gateway current",
    summary: "the gateway a command would use, where that came from, and the files it reads",
    description:
      "Shows the gateway the other commands would use with these flags and this environment: its name, endpoint, auth mode and TLS, the token's source, each with where it came from (a flag, the environment, the config file, the registry), and every file a command would read (metadata.json, the mTLS bundle, oidc_token.json) with whether it exists. It reads no key or token and prints no secret.",
    usage: "[options]",
    options: [],
  },
  {
    name: "completion",
    summary: "print a completion script for bash or zsh",
    description:
      "Prints a shell completion script. bash: source <(openshell-config completion bash), or save it in ~/.local/share/bash-completion/completions/openshell-config. zsh: source <(openshell-config completion zsh) in ~/.zshrc, after compinit. Sandbox names, operation ids and rollout ids are completed too: from the gateway, with the connection flags typed on the line, within 1.5 s (nothing when it does not answer in time).",
    usage: "bash|zsh",
    args: ["<SHELL>"],
    options: [],
  },
];

export const GLOBAL_OPTIONS: readonly OptionSpec[] = [
  { flags: "-g, --gateway <NAME>", help: "a gateway registered with the openshell CLI (env OPENSHELL_GATEWAY; default: its active gateway)", complete: "gateway" },
  { flags: "--gateway-endpoint <URL>", help: "connect to this URL directly, without registry metadata (env OPENSHELL_GATEWAY_ENDPOINT)" },
  { flags: "--gateway-insecure", help: "do not verify the gateway's TLS certificate (env OPENSHELL_GATEWAY_INSECURE); warns" },
  { flags: "--url <URL>", help: 'the same as --gateway-endpoint (env OPENSHELL_GATEWAY_URL, or "url" in the config file)' },
  { flags: "--token <TOKEN>", help: 'bearer token (env OPENSHELL_TOKEN, or "token" in the config file); prefer those: a flag is visible to other users' },
  { flags: "--config <FILE>", help: "config file (default ~/.config/openshell-config/config.json)", complete: "file" },
  { flags: "--protocol <P>", help: "grpc (default), connect or grpc-web", choices: PROTOCOLS },
  { flags: "-o, --output <FORMAT>", help: "table (default), wide (every column, full ids and times), json or yaml", choices: OUTPUT_FORMATS },
  { flags: "--no-headers", help: "tables without their header row" },
  { flags: "--allow-insecure-token", help: "allow a token over plain http to a non-loopback host" },
  { flags: "--version", help: "print the version" },
];

/** The argument values completion offers for positional arguments. */
export const ARGUMENT_CHOICES: Readonly<Partial<Record<CommandName, readonly string[]>>> = { completion: SHELLS };

const collect = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

const GROUP_SUMMARIES: Readonly<Record<string, string>> = {
  policy: "a sandbox's policy: get, set, diff, history, merge, rollout",
  settings: "a sandbox's settings: get, list, set, delete",
  operation: "update operations: get, wait, list",
  sandbox: "sandboxes: list",
  gateway: "the openshell CLI's gateways: list, current",
};

/** Which gateway and token a command uses (the program's --help; config.ts has the details). */
export const GATEWAY_HELP = `Which gateway: the flags (--gateway-endpoint or --url, and/or -g), else the
environment (OPENSHELL_GATEWAY_ENDPOINT or OPENSHELL_GATEWAY_URL, and/or
OPENSHELL_GATEWAY), else "url" in the config file, else the openshell CLI's
active gateway (~/.config/openshell, else $OPENSHELL_SYSTEM_GATEWAY_DIR or
/etc/openshell). An endpoint with a name: that endpoint, with the name's
credentials. The token: --token, else OPENSHELL_TOKEN, else "token" in the
config file (not for a gateway chosen by name), else the gateway's OIDC token.
"openshell-config gateway current" shows what a command would use. A gateway
that cannot be used as configured (a file of its mTLS bundle or its OIDC token
missing, a broken registry entry) is exit status 2, as a usage error.`;

/** The depth-2 name of a command: `policy set`, `completion`. */
export function commandPath(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(" ");
}

/**
 * The program, fresh for each parse (commander keeps parsed values on its objects). `onRun`
 * receives the leaf command that was given, its positional arguments and every option value.
 */
export function buildProgram(version: string, onRun: (spec: CommandSpec, args: string[], options: Record<string, unknown>, foreign: readonly string[]) => void): Command {
  const program = new Command("openshell-config")
    .description("Change an OpenShell sandbox's configuration and know what became of the change.")
    .usage("<command> [options]")
    .helpCommand(false)
    .showSuggestionAfterError(true)
    .configureHelp({
      showGlobalOptions: true,
      // The program's help lists every command (`policy set`), not the groups.
      visibleCommands(cmd) {
        if (cmd.parent !== null) return Help.prototype.visibleCommands.call(this, cmd);
        // A command with subcommands of its own (`policy rollout`) is listed, then its subcommands.
        const leaves = (c: Command): Command[] => (c.commands.length === 0 ? [c] : [...(c.parent === cmd ? [] : [c]), ...c.commands.flatMap(leaves)]);
        return cmd.commands.flatMap(leaves);
      },
      // The program's options only: a subcommand's parent (`policy rollout`) has options of its own, not global ones.
      visibleGlobalOptions(cmd) {
        let root = cmd;
        while (root.parent) root = root.parent;
        return root === cmd ? [] : Help.prototype.visibleOptions.call(this, root);
      },
      subcommandTerm(cmd) {
        return cmd.parent?.parent === null ? Help.prototype.subcommandTerm.call(this, cmd).replace(/ \[options\]/, "") : commandPath(cmd);
      },
    });
  for (const o of GLOBAL_OPTIONS) {
    if (o.flags === "--version") program.version(`openshell-config ${version}`, o.flags, o.help);
    else program.option(o.flags, o.help);
  }
  program.addHelpText("after", `\n${GATEWAY_HELP}\n\nRun "openshell-config <command> --help" for its options and exit statuses.`);
  // Each command under its parent: `policy` for `policy set`, `policy rollout` for `policy rollout undo`.
  const byPath = new Map<string, Command>([["", program]]);
  for (const spec of COMMANDS) {
    const words = spec.name.split(" ");
    const verb = words.at(-1)!;
    const parentPath = words.slice(0, -1).join(" ");
    let parent = byPath.get(parentPath);
    if (parent === undefined) {
      const group = words[0]!;
      parent = program.command(group).summary(GROUP_SUMMARIES[group] ?? "").description(GROUP_SUMMARIES[group] ?? "");
      byPath.set(parentPath, parent);
    }
    const cmd = parent
      .command(verb)
      .summary(spec.summary)
      .description(spec.description ?? spec.summary)
      .usage(spec.usage);
    for (const a of spec.args ?? []) cmd.argument(a);
    for (const o of spec.options) {
      if (o.repeatable) cmd.option(o.flags, o.help, collect);
      else cmd.option(o.flags, o.help);
    }
    if (spec.after) cmd.addHelpText("after", `\n${spec.after}`);
    cmd.addHelpText("after", `\n${examplesHelp(spec.name)}`);
    byPath.set(spec.name, cmd);
    cmd.action((...received: unknown[]) => {
      // commander passes the positional arguments, then the options, then the command.
      const args = received.slice(0, -2).filter((a): a is string => typeof a === "string");
      const self = received.at(-1) as Command;
      // Options of a parent command (`policy rollout --selector`) given to its subcommand: commander
      // accepts them anywhere on the line, the subcommand does not take them.
      const own = new Set(self.options.map((o) => o.attributeName()));
      const parent = self.parent && self.parent.parent?.parent ? self.parent : undefined;
      const foreign = (parent?.options ?? []).filter((o) => !own.has(o.attributeName()) && parent!.getOptionValueSource(o.attributeName()) === "cli").map((o) => o.long ?? o.flags);
      onRun(spec, args, self.optsWithGlobals(), foreign);
    });
  }
  // No implicit `help` subcommand anywhere: commander adds one to every command with subcommands
  // (`policy`, `policy rollout`), which the help listed as a stray "display help for command" line.
  const noHelpCommand = (c: Command): void => {
    c.helpCommand(false);
    c.commands.forEach(noHelpCommand);
  };
  noHelpCommand(program);
  return program;
}
