// Command-line parsing of `openshell-config` (cli/args.ts): what each command accepts, what
// it requires, how values are converted, and that everything wrong is a UsageError with the
// right usage text.

import { describe, expect, it } from "vitest";
import { DEFAULT_TIMEOUT_MS, parseCommandLine, parseDuration, parseSelector, parseSettingValue, UsageError } from "../../cli/args.js";

function usageError(argv: string[]): UsageError {
  try {
    parseCommandLine(argv);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return err as UsageError;
  }
  throw new Error(`expected a usage error for: ${argv.join(" ")}`);
}

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
      wait: true,
      timeoutMs: 90_000,
      idempotencyKey: "deploy-7",
      workspace: "team-a",
    });
    expect(global).toMatchObject({ url: "http://127.0.0.1:8080", protocol: "connect", protocolGiven: true, output: "json", token: undefined });
  });

  it("does not wait by default, and defaults to gRPC, tables and a 60 s timeout", () => {
    const { global, command } = parseCommandLine(["policy", "set", "-s", "web", "-f", "p.yaml"]);
    expect(command).toMatchObject({ wait: false, timeoutMs: DEFAULT_TIMEOUT_MS, idempotencyKey: undefined, workspace: undefined });
    expect(global).toMatchObject({ protocol: "grpc", protocolGiven: false, output: "table", allowInsecureToken: false });
  });

  it("treats --timeout alone as a request to wait that long", () => {
    const { command } = parseCommandLine(["settings", "delete", "--sandbox", "web", "--key", "k", "--timeout", "500ms"]);
    expect(command).toMatchObject({ wait: true, timeoutMs: 500 });
  });

  it("reads operation get and wait with the operation id as a positional argument", () => {
    expect(parseCommandLine(["operation", "get", "op-1"]).command).toEqual({ name: "operation get", id: "op-1", workspace: undefined });
    expect(parseCommandLine(["operation", "wait", "op-1", "--timeout", "0"]).command).toEqual({
      name: "operation wait",
      id: "op-1",
      workspace: undefined,
      timeoutMs: Infinity,
    });
  });

  it("joins repeated selectors into one label selector", () => {
    const { command } = parseCommandLine(["sandbox", "list", "--selector", "team=a", "-l", "tier=web,env=prod"]);
    expect(command).toEqual({ name: "sandbox list", selector: "team=a,tier=web,env=prod", workspace: undefined, allWorkspaces: false });
  });

  it("answers --help, help <command> and --version without needing a gateway", () => {
    expect(parseCommandLine(["--help"]).command).toEqual({ name: "help", topic: undefined });
    expect(parseCommandLine(["policy", "set", "--help"]).command).toEqual({ name: "help", topic: "policy set" });
    expect(parseCommandLine(["help", "operation", "wait"]).command).toEqual({ name: "help", topic: "operation wait" });
    expect(parseCommandLine(["--version"]).command).toEqual({ name: "version" });
  });

  it("rejects a missing or unknown command with the general usage", () => {
    expect(usageError([]).message).toBe("no command given");
    expect(usageError(["deploy"]).message).toBe('unknown command "deploy"');
    expect(usageError(["policy"]).message).toBe('"policy" needs a subcommand');
    expect(usageError(["policy", "delete"]).message).toBe('unknown command "policy delete"');
    expect(usageError(["deploy"]).usage).toMatch(/^Usage: openshell-config <command>/);
  });

  it("rejects an unknown option, or one the command does not take, with that command's usage", () => {
    const unknown = usageError(["policy", "set", "--sandbox", "web", "--file", "p.yaml", "--frobnicate"]);
    expect(unknown.message).toBe("unknown option --frobnicate");
    expect(unknown.usage).toMatch(/^Usage: openshell-config policy set/);
    const foreign = usageError(["policy", "get", "--sandbox", "web", "--file", "p.yaml"]);
    expect(foreign.message).toBe("policy get does not take --file");
    expect(foreign.usage).toMatch(/^Usage: openshell-config policy get/);
  });

  it("rejects missing required options and values", () => {
    expect(usageError(["policy", "set", "--sandbox", "web"]).message).toBe("policy set needs --file");
    expect(usageError(["policy", "set", "--file", "p.yaml"]).message).toBe("policy set needs --sandbox");
    expect(usageError(["settings", "set", "--sandbox", "web", "--key", "k"]).message).toBe("settings set needs --value");
    expect(usageError(["policy", "get", "--sandbox"]).message).toBe("--sandbox needs a value");
    expect(usageError(["operation", "wait"]).message).toBe("operation wait needs ID");
    expect(usageError(["operation", "get", "a", "b"]).message).toBe('unexpected argument "b"');
    expect(usageError(["policy", "get", "--sandbox", ""]).message).toBe("--sandbox must not be empty");
  });

  it("rejects bad values of --timeout, --type, --protocol, --output and --selector", () => {
    expect(usageError(["operation", "wait", "x", "--timeout", "soon"]).message).toMatch(/--timeout must be a duration/);
    expect(usageError(["settings", "set", "-s", "w", "--key", "k", "--value", "v", "--type", "float"]).message).toMatch(/--type must be one of string, bool, int, bytes-base64/);
    expect(usageError(["--protocol", "http3", "sandbox", "list"]).message).toMatch(/--protocol must be grpc, connect or grpc-web/);
    expect(usageError(["sandbox", "list", "-o", "yaml"]).message).toMatch(/--output must be table or json/);
    expect(usageError(["sandbox", "list", "--selector", "team"]).message).toMatch(/--selector must be key=value/);
    expect(usageError(["sandbox", "list", "--workspace", "a", "--all-workspaces"]).message).toMatch(/mutually exclusive/);
  });

  it("explains how to pass a value that starts with a dash", () => {
    expect(usageError(["settings", "set", "-s", "w", "--key", "k", "--value", "-5", "--type", "int"]).message).toMatch(/--value=-/);
    expect(parseCommandLine(["settings", "set", "-s", "w", "--key", "k", "--value=-5", "--type", "int"]).command).toMatchObject({ value: -5n });
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

  it("normalizes label selectors and ignores none", () => {
    expect(parseSelector([])).toBeUndefined();
    expect(parseSelector([" team = a ", "b=c"])).toBe("team=a,b=c");
    expect(() => parseSelector(["a=b=c"])).toThrow(/key=value/);
  });
});
