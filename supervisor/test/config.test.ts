// The command line (config.ts): flags, OPENSHELL_SUPERVISOR_* variables, files, usage errors.

import { describe, expect, it } from "vitest";
import { envName, parseCommandLine, UsageError, type SupervisorConfig } from "../src/config.js";

const POLICY = JSON.stringify({ networkPolicies: { pypi: { name: "pypi", endpoints: [{ host: "pypi.org", port: 443, protocol: "rest" }] } } });
const files: Record<string, string> = {
  "/tokens.json": JSON.stringify({ "fleet-0000": "t0", "fleet-0001": "t1", "fleet-0002": "t2" }),
  "/partial-tokens.json": JSON.stringify({ "fleet-0000": "t0" }),
  "/policy.json": POLICY,
  "/bad-policy.json": JSON.stringify({ networkPolicies: { db: { endpoints: [{ host: "db", protocol: "tcp", rules: [{ allow: { method: "GET" } }] }] } } }),
  "/not-json": "{ nope",
};
const readFile = (p: string) => {
  const f = files[p];
  if (f === undefined) throw Object.assign(new Error(`ENOENT: ${p}`), { code: "ENOENT" });
  return f;
};

function run(argv: string[], env: NodeJS.ProcessEnv = {}): SupervisorConfig {
  const c = parseCommandLine(argv, env, readFile);
  if (c.kind !== "run") throw new Error(`expected run, got ${c.kind}`);
  return c.config;
}

function usage(argv: string[], env: NodeJS.ProcessEnv = {}): string {
  try {
    parseCommandLine(argv, env, readFile);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).exitCode).toBe(2);
    return (err as Error).message;
  }
  throw new Error("expected a usage error");
}

describe("command line", () => {
  it("configures one sandbox against a list of gateways with a token", () => {
    const c = run(["--gateway", "http://a:1, http://b:2", "--sandbox", "dev", "--token", "tok"]);
    expect(c.gateways).toEqual(["http://a:1", "http://b:2"]);
    expect(c.members).toEqual([{ name: "dev", token: "tok" }]);
    expect(c.faults).toEqual({ applyDelayMs: 0, dropAcks: false, disconnectAfter: 0, failBootstrap: false });
    expect(c.probeTimeoutMs).toBe(300);
  });

  it("names a fleet from prefix and count and takes tokens from the token file", () => {
    const c = run(["--gateway", "http://g:1", "--sandboxes", "3", "--sandbox-prefix", "fleet-", "--token-file", "/tokens.json"]);
    expect(c.members).toEqual([
      { name: "fleet-0000", token: "t0" },
      { name: "fleet-0001", token: "t1" },
      { name: "fleet-0002", token: "t2" },
    ]);
    expect(run(["--gateway", "http://g:1", "--sandboxes", "12000"]).members.at(-1)?.name).toBe("sandbox-11999");
  });

  it("falls back to --token for sandboxes missing from the token file, and otherwise refuses", () => {
    const c = run(["--gateway", "http://g:1", "--sandboxes", "2", "--sandbox-prefix", "fleet-", "--token-file", "/partial-tokens.json", "--token", "fallback"]);
    expect(c.members.map((m) => m.token)).toEqual(["t0", "fallback"]);
    expect(usage(["--gateway", "http://g:1", "--sandboxes", "2", "--sandbox-prefix", "fleet-", "--token-file", "/partial-tokens.json"])).toContain("no token for 1 sandbox(es): fleet-0001");
  });

  it("reads every option from OPENSHELL_SUPERVISOR_* variables, with flags taking precedence", () => {
    const env = {
      OPENSHELL_SUPERVISOR_GATEWAY: "http://env:1",
      OPENSHELL_SUPERVISOR_SANDBOX: "from-env",
      OPENSHELL_SUPERVISOR_TOKEN: "env-token",
      OPENSHELL_SUPERVISOR_DROP_ACKS: "1",
      OPENSHELL_SUPERVISOR_APPLY_DELAY_MS: "50",
      OPENSHELL_SUPERVISOR_DISCONNECT_AFTER: "3",
      OPENSHELL_SUPERVISOR_FAIL_BOOTSTRAP: "true",
      OPENSHELL_SUPERVISOR_STATE_DIR: "/var/lib/x",
      OPENSHELL_SUPERVISOR_LOG_LEVEL: "debug",
    };
    const c = run([], env);
    expect(c).toMatchObject({ gateways: ["http://env:1"], members: [{ name: "from-env", token: "env-token" }], stateDir: "/var/lib/x", logLevel: "debug" });
    expect(c.faults).toEqual({ applyDelayMs: 50, dropAcks: true, disconnectAfter: 3, failBootstrap: true });
    expect(run(["--sandbox", "flag", "--apply-delay-ms", "7"], env)).toMatchObject({ members: [{ name: "flag" }], faults: { applyDelayMs: 7 } });
    expect(envName("apply-delay-ms")).toBe("OPENSHELL_SUPERVISOR_APPLY_DELAY_MS");
  });

  it("loads a local policy; alone it means standalone mode", () => {
    const c = run(["--sandbox", "solo", "--local-policy", "/policy.json"]);
    expect(c.gateways).toEqual([]);
    expect(Object.keys(c.localPolicy?.networkPolicies ?? {})).toEqual(["pypi"]);
  });

  it("reports usage errors with exit status 2", () => {
    expect(usage(["--sandbox", "dev"])).toContain("--gateway is required");
    expect(usage(["--gateway", "http://g:1"])).toContain("--sandbox NAME or --sandboxes N is required");
    expect(usage(["--gateway", "http://g:1", "--sandbox", "a", "--sandboxes", "2"])).toContain("not both");
    expect(usage(["--gateway", "ftp://g", "--sandbox", "a"])).toContain("http:// or https://");
    expect(usage(["--gateway", "http://u:p@g:1", "--sandbox", "a"])).toContain("must not contain credentials");
    expect(usage(["--gateway", "http://g:1", "--sandbox", "../etc"])).toContain("not usable");
    expect(usage(["--gateway", "http://g:1", "--sandboxes", "0"])).toContain("at least 1");
    expect(usage(["--gateway", "http://g:1", "--sandbox", "a", "--apply-delay-ms", "soon"])).toContain("non-negative integer");
    expect(usage(["--gateway", "http://g:1", "--sandbox", "a", "--log-level", "loud"])).toContain("--log-level");
    expect(usage(["--sandbox", "a", "--frobnicate"])).toContain("Unknown option");
    expect(usage(["--sandbox", "a"], { OPENSHELL_SUPERVISOR_DROP_ACKS: "maybe", OPENSHELL_SUPERVISOR_GATEWAY: "http://g:1" })).toContain("must be a boolean");
  });

  it("rejects an unreadable, malformed or invalid local policy, and a malformed token file without echoing it", () => {
    expect(usage(["--sandbox", "a", "--local-policy", "/missing.json"])).toContain("ENOENT");
    expect(usage(["--sandbox", "a", "--local-policy", "/not-json"])).toContain("not a proto-JSON SandboxPolicy");
    expect(usage(["--sandbox", "a", "--local-policy", "/bad-policy.json"])).toContain('network_policies["db"]');
    const m = usage(["--gateway", "http://g:1", "--sandbox", "a", "--token-file", "/not-json"]);
    expect(m).toContain("not valid JSON");
    expect(m).not.toContain("nope");
  });

  it("answers --help and --version", () => {
    expect(parseCommandLine(["--help"], {}, readFile)).toMatchObject({ kind: "help", text: expect.stringContaining("--sandbox-prefix") });
    expect(parseCommandLine(["--version"], {}, readFile)).toEqual({ kind: "version" });
  });

  it("fits its usage text in an 80-column terminal", () => {
    const parsed = parseCommandLine(["--help"], {}, readFile);
    const text = parsed.kind === "help" ? parsed.text : "";
    expect(text).toContain("--print-effective");
    expect(text.split("\n").filter((line) => line.length > 80)).toEqual([]);
  });
});
