// Command-line parsing of `openshell-config` (cli/args.ts over the commander program of
// cli/program.ts): what each command accepts and requires, how values are converted, that
// everything wrong is one-line UsageError with a hint pointing to that command's --help (and a
// "did you mean" for typos), and that every --help is complete and fits 80 columns.

import { describe, expect, it } from "vitest";
import { DEFAULT_TIMEOUT_MS, parseCommandLine, parseDuration, parseSettingValue, UsageError } from "../../cli/args.js";
import { COMMANDS, GLOBAL_OPTIONS } from "../../cli/program.js";
import { closest } from "../../cli/suggest.js";
import { parseCount, parseOperationId } from "../../cli/values.js";

const OP = "3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f";

function usageError(argv: string[]): UsageError {
  try {
    parseCommandLine(argv);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return err as UsageError;
  }
  throw new Error(`expected a usage error for: ${argv.join(" ")}`);
}

const helpOf = (argv: string[]) => {
  const { command } = parseCommandLine(argv);
  if (command.name !== "help") throw new Error(`not help: ${command.name}`);
  return command.text;
};

describe("command-line parsing", () => {
  it("reads policy set with every option, and global options in any position", () => {
    const { global, command } = parseCommandLine([
      "--url", "http://127.0.0.1:8080",
      "policy", "set",
      "--sandbox", "web",
      "-f", "policy.yaml",
      "--wait",
      "--timeout", "90s",
      "--idempotency-key", "deploy-7",
      "--workspace", "team-a",
      "--protocol", "connect",
      "-o", "json",
    ]);
    expect(command).toEqual({
      name: "policy set",
      sandbox: "web",
      file: "policy.yaml",
      dryRun: false,
      wait: true,
      timeoutMs: 90_000,
      idempotencyKey: "deploy-7",
      workspace: "team-a",
    });
    expect(global).toMatchObject({ url: "http://127.0.0.1:8080", protocol: "connect", protocolGiven: true, output: "json", token: undefined });
  });

  it("reads the gateway flags (-g, --gateway-endpoint, --gateway-insecure) before or after the command, and the gateway commands", () => {
    expect(parseCommandLine(["-g", "lab", "sandbox", "list"]).global).toMatchObject({ gateway: "lab", gatewayEndpoint: undefined, gatewayInsecure: false });
    expect(parseCommandLine(["sandbox", "list", "--gateway", "lab", "--gateway-endpoint", "https://10.0.0.1:17670", "--gateway-insecure"]).global).toMatchObject({
      gateway: "lab",
      gatewayEndpoint: "https://10.0.0.1:17670",
      gatewayInsecure: true,
    });
    expect(parseCommandLine(["gateway", "list"]).command).toEqual({ name: "gateway list" });
    expect(parseCommandLine(["-g", "lab", "gateway", "current", "-o", "json"])).toMatchObject({ command: { name: "gateway current" }, global: { gateway: "lab", output: "json" } });
    expect(usageError(["-g", "", "sandbox", "list"]).message).toBe("--gateway must not be empty");
    expect(usageError(["gateway", "lst"]).message).toBe('unknown command "gateway lst"; did you mean "gateway list"?');
    expect(usageError(["gateway"]).message).toBe('"gateway" needs a subcommand: list, current');
  });

  it("does not wait by default, and defaults to gRPC, tables and a 60 s timeout", () => {
    const { global, command } = parseCommandLine(["policy", "set", "-s", "web", "-f", "p.yaml"]);
    expect(command).toMatchObject({ wait: false, dryRun: false, timeoutMs: DEFAULT_TIMEOUT_MS, idempotencyKey: undefined, workspace: undefined });
    expect(global).toMatchObject({ protocol: "grpc", protocolGiven: false, output: "table", allowInsecureToken: false });
  });

  it("takes -o yaml like -o json", () => {
    expect(parseCommandLine(["sandbox", "list", "-o", "yaml"]).global.output).toBe("yaml");
  });

  it("treats --timeout alone as a request to wait that long", () => {
    const { command } = parseCommandLine(["settings", "delete", "--sandbox", "web", "--key", "k", "--timeout", "500ms"]);
    expect(command).toMatchObject({ wait: true, timeoutMs: 500 });
  });

  it("reads operation get, wait and list; the id is a positional UUID", () => {
    expect(parseCommandLine(["operation", "get", OP]).command).toEqual({ name: "operation get", id: OP, workspace: undefined, watch: false });
    expect(parseCommandLine(["operation", "get", OP, "-w"]).command).toMatchObject({ watch: true });
    expect(parseCommandLine(["operation", "wait", OP, "--timeout", "0"]).command).toEqual({ name: "operation wait", id: OP, workspace: undefined, timeoutMs: Infinity });
    expect(parseCommandLine(["operation", "list", "-s", "web"]).command).toEqual({ name: "operation list", sandbox: "web", workspace: undefined, limit: 20 });
    expect(parseCommandLine(["operation", "list", "-s", "web", "--limit", "0"]).command).toMatchObject({ limit: 0 });
  });

  it("reports a malformed operation id as malformed, naming the expected form", () => {
    const e = usageError(["operation", "get", "op-1"]);
    expect(e.message).toBe(`malformed operation ID "op-1": expected a UUID such as ${OP}`);
    expect(e.hint).toBe("run 'openshell-config operation get --help' for usage");
    expect(usageError(["operation", "wait", `${OP}x`]).message).toMatch(/^malformed operation ID/);
  });

  it("reads the new commands: settings get and list, policy diff, history and set --dry-run, completion", () => {
    expect(parseCommandLine(["settings", "get", "-s", "web", "log_level"]).command).toEqual({ name: "settings get", sandbox: "web", workspace: undefined, key: "log_level" });
    expect(parseCommandLine(["settings", "get", "-s", "web", "--key", "log_level"]).command).toMatchObject({ key: "log_level" });
    expect(parseCommandLine(["settings", "list", "-s", "web"]).command).toEqual({ name: "settings list", sandbox: "web", workspace: undefined });
    expect(parseCommandLine(["policy", "diff", "-s", "web", "-f", "p.yaml"]).command).toEqual({ name: "policy diff", sandbox: "web", workspace: undefined, file: "p.yaml" });
    expect(parseCommandLine(["policy", "history", "-s", "web", "--limit", "5"]).command).toEqual({ name: "policy history", sandbox: "web", workspace: undefined, limit: 5 });
    expect(parseCommandLine(["policy", "set", "-s", "web", "-f", "p.yaml", "--dry-run"]).command).toMatchObject({ dryRun: true });
    expect(parseCommandLine(["completion", "zsh"]).command).toEqual({ name: "completion", shell: "zsh" });
    expect(parseCommandLine(["sandbox", "list", "-w", "-A"]).command).toMatchObject({ watch: true, allWorkspaces: true });
  });

  it("builds policy merge operations from flags, removals before the added rule", () => {
    const { command } = parseCommandLine([
      "policy", "merge", "-s", "web",
      "--add-rule", "npm", "--host", "registry.npmjs.org", "--port", "443", "--port", "8443", "--binary", "/usr/bin/npm",
      "--remove-rule", "legacy", "--remove-rule", "old",
    ]);
    expect(command).toMatchObject({ name: "policy merge", sandbox: "web", file: undefined, wait: false });
    expect((command as { operations: unknown }).operations).toEqual([
      { operation: { case: "removeRule", value: { ruleName: "legacy" } } },
      { operation: { case: "removeRule", value: { ruleName: "old" } } },
      {
        operation: {
          case: "addRule",
          value: { ruleName: "npm", rule: { name: "npm", endpoints: [{ host: "registry.npmjs.org", ports: [443, 8443] }], binaries: [{ path: "/usr/bin/npm" }] } },
        },
      },
    ]);
    expect((parseCommandLine(["policy", "merge", "-s", "w", "--remove-endpoint", "npm", "--host", "h", "--port", "443"]).command as { operations: unknown }).operations).toEqual([
      { operation: { case: "removeEndpoint", value: { ruleName: "npm", host: "h", port: 443 } } },
    ]);
    expect(parseCommandLine(["policy", "merge", "-s", "w", "-f", "ops.yaml"]).command).toMatchObject({ file: "ops.yaml", operations: [] });
  });

  it.each([
    [["policy", "merge", "-s", "w"], /needs --file or an operation/],
    [["policy", "merge", "-s", "w", "--add-rule", "x", "--host", "h"], /--add-rule needs --host and --port/],
    [["policy", "merge", "-s", "w", "--host", "h"], /--host needs --add-rule or --remove-endpoint/],
    [["policy", "merge", "-s", "w", "--add-rule", "x", "--remove-binary", "y", "--host", "h", "--port", "1"], /give one of --add-rule and --remove-binary/],
    [["policy", "merge", "-s", "w", "--add-rule", "x", "--host", "h", "--port", "99999"], /--port must be a port number/],
    [["policy", "merge", "-s", "w", "--remove-binary", "x"], /--remove-binary needs one --binary/],
  ])("rejects the merge flags %j", (argv, message) => {
    expect(usageError(argv).message).toMatch(message);
  });

  it("answers --help, help <command> and --version without needing a gateway", () => {
    expect(parseCommandLine(["--help"]).command).toMatchObject({ name: "help", topic: undefined });
    expect(parseCommandLine(["policy", "set", "--help"]).command).toMatchObject({ name: "help", topic: "policy set" });
    expect(parseCommandLine(["help", "operation", "wait"]).command).toMatchObject({ name: "help", topic: "operation wait" });
    expect(parseCommandLine(["--version"]).command).toEqual({ name: "version" });
    expect(helpOf(["help", "operation", "wait"])).toMatch(/^Usage: openshell-config operation wait ID \[options\]/);
  });

  it("lists every command in the program's --help, and each command's --help has its options, the global ones and fits 80 columns", () => {
    const main = helpOf(["--help"]);
    for (const c of COMMANDS) expect(main).toMatch(new RegExp(`^  ${c.name}\\b`, "m"));
    for (const line of main.split("\n")) expect(line.length, `--help: ${line}`).toBeLessThanOrEqual(80);
    for (const c of COMMANDS) {
      const text = helpOf([...c.name.split(" "), "--help"]);
      expect(text).toMatch(new RegExp(`^Usage: openshell-config ${c.name} `));
      for (const o of [...c.options, ...GLOBAL_OPTIONS]) expect(text, `${c.name} --help lists ${o.flags}`).toContain(o.flags.split(" <")[0]);
      for (const line of text.split("\n")) expect(line.length, `${c.name} --help: ${line}`).toBeLessThanOrEqual(80);
    }
    expect(helpOf(["policy", "set", "--help"])).toContain("124 the wait timed out");
  });

  it("lists in a group's --help its commands only, each with a name (no implicit help command)", () => {
    const groups = [...new Set(COMMANDS.map((c) => c.name.split(" ").slice(0, -1).join(" ")).filter((g) => g !== ""))];
    expect(groups).toContain("policy rollout");
    for (const group of groups) {
      const commands = helpOf([...group.split(" "), "--help"]).split("\nCommands:\n")[1] ?? "";
      for (const line of commands.split("\n")) {
        if (line.trim() === "" || /^\S/.test(line)) break;
        // Every entry starts with its command's path; a continuation line is indented further.
        expect(line, `${group} --help`).toMatch(new RegExp(`^  (${group} \\S|\\s{20,}\\S)`));
      }
      expect(commands, `${group} --help`).not.toMatch(/^\s+display help for command$/m);
    }
  });
});

describe("usage errors: one line, a hint, and a suggestion for a typo", () => {
  it.each([
    [["polcy"], 'unknown command "polcy"; did you mean "policy"?', "run 'openshell-config --help' for usage"],
    [["policy", "sett"], 'unknown command "policy sett"; did you mean "policy set"?', "run 'openshell-config policy --help' for usage"],
    [["policy", "hist"], 'unknown command "policy hist"; did you mean "policy history"?', "run 'openshell-config policy --help' for usage"],
    [["setings", "list"], 'unknown command "setings"; did you mean "settings"?', "run 'openshell-config --help' for usage"],
    [["policy", "set", "-s", "w", "--fle", "p"], 'unknown option "--fle" for policy set; did you mean "--file"?', "run 'openshell-config policy set --help' for usage"],
    [["sandbox", "list", "--selectr", "a=b"], 'unknown option "--selectr" for sandbox list; did you mean "--selector"?', "run 'openshell-config sandbox list --help' for usage"],
    [["-o", "yml", "sandbox", "list"], '--output must be table, wide, json or yaml; got "yml"; did you mean "yaml"?', "run 'openshell-config --help' for usage"],
    [["settings", "set", "-s", "w", "--key", "k", "--value", "1", "--type", "integer"], '--type must be string, bool, int or bytes-base64; got "integer"', "run 'openshell-config settings set --help' for usage"],
    [["deploy"], 'unknown command "deploy"', "run 'openshell-config --help' for usage"],
  ])("%j", (argv, message, hint) => {
    const e = usageError(argv);
    expect(e.message).toBe(message);
    expect(e.message).not.toContain("\n");
    expect(e.hint).toBe(hint);
  });

  it("rejects a missing command or subcommand, naming what there is", () => {
    expect(usageError([]).message).toBe("no command given; commands: policy, settings, operation, sandbox, gateway, completion");
    expect(usageError(["policy"]).message).toBe('"policy" needs a subcommand: get, set, diff, history, merge, rollout');
    expect(usageError(["policy"]).hint).toBe("run 'openshell-config policy --help' for usage");
  });

  it("says which command does not take an option that another one does", () => {
    const foreign = usageError(["policy", "get", "--sandbox", "web", "--file", "p.yaml"]);
    expect(foreign.message).toBe("policy get does not take --file");
    expect(foreign.hint).toBe("run 'openshell-config policy get --help' for usage");
  });

  it("rejects missing required options, values and arguments", () => {
    expect(usageError(["policy", "set", "--sandbox", "web"]).message).toBe("policy set needs --file");
    expect(usageError(["policy", "set", "--file", "p.yaml"]).message).toBe("policy set needs --sandbox");
    expect(usageError(["settings", "set", "--sandbox", "web", "--key", "k"]).message).toBe("settings set needs --value");
    expect(usageError(["settings", "get", "--sandbox", "web"]).message).toBe("settings get needs KEY");
    expect(usageError(["policy", "get", "--sandbox"]).message).toBe("--sandbox needs a value");
    expect(usageError(["operation", "wait"]).message).toBe("operation wait needs ID");
    expect(usageError(["operation", "get", OP, "b"]).message).toBe('unexpected argument "b"');
    expect(usageError(["sandbox", "list", "extra"]).message).toBe('unexpected argument "extra" (sandbox list takes no arguments)');
    expect(usageError(["policy", "get", "--sandbox", ""]).message).toBe("--sandbox must not be empty");
  });

  it("rejects bad values of --timeout, --protocol, --limit, the shell and --workspace with --all-workspaces", () => {
    expect(usageError(["operation", "wait", OP, "--timeout", "soon"]).message).toMatch(/--timeout must be a duration/);
    expect(usageError(["--protocol", "http3", "sandbox", "list"]).message).toMatch(/--protocol must be grpc, connect or grpc-web/);
    expect(usageError(["policy", "history", "-s", "w", "--limit", "-1"]).message).toMatch(/--limit must be an integer of at least 0/);
    expect(usageError(["completion", "fish"]).message).toBe('the shell must be bash or zsh; got "fish"');
    expect(usageError(["sandbox", "list", "--workspace", "a", "--all-workspaces"]).message).toMatch(/mutually exclusive/);
  });

  it("takes a negative --value as a value, not an option", () => {
    expect(parseCommandLine(["settings", "set", "-s", "w", "--key", "k", "--value", "-5", "--type", "int"]).command).toMatchObject({ value: -5n });
    expect(parseCommandLine(["settings", "set", "-s", "w", "--key", "k", "--value=-5", "--type", "int"]).command).toMatchObject({ value: -5n });
  });
});

describe("selectors on the command line", () => {
  const selectorOf = (...flags: string[]) => (parseCommandLine(["sandbox", "list", ...flags]).command as { selector: unknown }).selector;

  it("ANDs the requirements of one --selector and of repeated ones, keeping a key given twice", () => {
    expect(selectorOf("--selector", "env=dev,env=staging")).toEqual({
      requirements: [
        { key: "env", op: "=", value: "dev" },
        { key: "env", op: "=", value: "staging" },
      ],
    });
    expect(selectorOf("-l", "team=a", "-l", "tier in (web, api)", "-l", "!legacy")).toEqual({
      requirements: [
        { key: "team", op: "=", value: "a" },
        { key: "tier", op: "in", values: ["web", "api"] },
        { key: "legacy", op: "!exists" },
      ],
    });
    expect(selectorOf()).toBeUndefined();
  });

  it.each([
    ["env in dev", /unexpected "in" after "env"/],
    ["env in (dev", /is not closed by "\)"/],
    ["a=b=c", /requirements are joined by ","/],
    ["team=a,", /empty requirement at position 8/],
    [",team=a", /empty requirement at position 1/],
    ["env in ()", /expected a value in "env in \(…\)"/],
    ["", /empty selector/],
  ])("a malformed selector %j is a usage error naming the problem", (text, message) => {
    const e = usageError(["sandbox", "list", "--selector", text]);
    expect(e.message).toMatch(message);
    expect(e.message.startsWith(`--selector "${text}": `)).toBe(true);
  });

  it("gives policy rollout the SDK's k=v form when it says everything, and the whole selector otherwise", () => {
    expect(parseCommandLine(["policy", "rollout", "-l", "env = prod", "-f", "p.yaml"]).command).toMatchObject({ selector: "env=prod" });
    expect(parseCommandLine(["policy", "rollout", "-l", "env in (a,b)", "-f", "p.yaml"]).command).toMatchObject({ selector: "env in (a,b)" });
    expect(parseCommandLine(["policy", "rollout", "-l", "env=a,env=b", "-f", "p.yaml"]).command).toMatchObject({ selector: "env=a,env=b" });
  });
});

describe("option values", () => {
  it.each([
    ["500ms", 500],
    ["30s", 30_000],
    ["1.5s", 1_500],
    ["5m", 300_000],
    ["1h", 3_600_000],
    ["45", 45_000],
    ["0", Infinity],
  ])("reads the duration %s", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(["", "-1s", "1d", "s", "0.1ms"])("rejects the duration %j", (text) => {
    expect(() => parseDuration(text)).toThrow(/--timeout/);
  });

  it("converts setting values by type", () => {
    expect(parseSettingValue("debug", "string")).toBe("debug");
    expect(parseSettingValue("", "string")).toBe("");
    expect(parseSettingValue("true", "bool")).toBe(true);
    expect(parseSettingValue("false", "bool")).toBe(false);
    expect(parseSettingValue("-9223372036854775808", "int")).toBe(-(2n ** 63n));
    expect(parseSettingValue("AQID", "bytes-base64")).toEqual(new Uint8Array([1, 2, 3]));
  });

  it("rejects setting values that do not fit their type", () => {
    expect(() => parseSettingValue("yes", "bool")).toThrow(/true or false/);
    expect(() => parseSettingValue("1.5", "int")).toThrow(/integer/);
    expect(() => parseSettingValue("9223372036854775808", "int")).toThrow(/64-bit/);
    expect(() => parseSettingValue("not base64!", "bytes-base64")).toThrow(/base64/);
  });

  it("reads counts and operation ids", () => {
    expect(parseCount("0", "--limit", 0)).toBe(0);
    expect(() => parseCount("1.5", "--limit", 0)).toThrow(/--limit must be an integer/);
    expect(parseOperationId(OP.toUpperCase())).toBe(OP.toUpperCase());
    expect(() => parseOperationId("00000000-0000-4000-8000-00000000000")).toThrow(/malformed operation ID/);
  });

  it("suggests the closest candidate only when it is close, or the one it begins", () => {
    expect(closest("yml", ["table", "json", "yaml"])).toBe("yaml");
    expect(closest("jsno", ["table", "json", "yaml"])).toBe("json");
    expect(closest("hist", ["get", "history"])).toBe("history");
    expect(closest("xml", ["table", "json", "yaml"])).toBeUndefined();
  });
});

describe("Examples in --help (issue 30)", () => {
  /** A command line split as a POSIX shell does, for the quoting the examples use ('…'). */
  const words = (line: string) => [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);

  it.each(COMMANDS.map((c) => c.name))("%s --help ends with an Examples section whose every command parses as that command", (name) => {
    const help = helpOf([...name.split(" "), "--help"]);
    const at = help.lastIndexOf("\nExamples:\n");
    expect(at, help).toBeGreaterThan(0);
    // A command continued on the next line (a trailing backslash) is read as one line.
    const section = help.slice(at + 1).trimEnd().replace(/ \\\n {6}/g, " ").split("\n");
    for (const line of help.slice(at + 1).split("\n")) expect(line.length, line).toBeLessThanOrEqual(80);
    const commands = section.filter((l) => l.startsWith("  openshell-config "));
    expect(commands.length).toBeGreaterThan(0);
    // Each example has its comment just above it, and every line fits 80 columns.
    for (const [i, line] of section.entries()) {
      if (line.startsWith("  openshell-config ")) expect(section[i - 1]).toMatch(/^ {2}# \S/);
    }
    for (const line of commands) {
      const parsed = parseCommandLine(words(line.slice("  openshell-config ".length)));
      expect(parsed.command.name, line).toBe(name);
    }
  });
});
