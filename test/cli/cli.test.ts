// The built `openshell-config` binary (node dist/cli/main.js, from `npm run build`) against real
// processes: one gateway on SQLite and reference supervisors, started by examples/local-stack.ts.
// Each test runs the binary as a user would, with the URL and token in the environment (or the
// config file, or flags) and a throwaway HOME, and checks its exit status and what it printed.
//
// beforeAll runs `npm run build` (about half a minute, mostly declarations) unless dist/ is newer
// than every source and build input, as after a previous run.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { freePort } from "../../examples/free-port.js";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, PolicyEnforcementState, workspaceScope } from "openshell-config/raw";
import { startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { build, policyYaml, runBinary, type Run, waitReady } from "./harness.js";

const web = "cli-web";
const rejected = "cli-rejected";
const slow = "cli-slow";
const tuned = "cli-settings";
const paused = "cli-paused";
const audited = "cli-audited";
/** Fails closed: a rejected update, then a supervisor restart that loses the last known good. */
const closed = "cli-closed";

/** An AGE cell: `45s`, `3m20s`, `25m`, … */
const AGE = /^\d+[smhdy](\d+[smhd])?$/;
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;
/** What the reference supervisor says about an endpoint with protocol "ftp". */
const FTP_REJECTED = 'protocol "ftp" is not supported';

let stack: LocalStack;
let dir: string;
let home: string;
let files: { readonly ok: string; readonly ftp: string; readonly json: string; readonly other: string; readonly degraded: string };
let closedSupervisor: { kill(signal?: NodeJS.Signals): Promise<void> };

/** Runs the built binary. `env` replaces the default URL and token variables (undefined: unset). */
function cli(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return runBinary(args, dir, { PATH: process.env.PATH, HOME: home, OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: stack.adminToken, ...env });
}

const base = { github: { host: "api.github.com" } };
const basePolicy = {
  version: 1,
  filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] },
  networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] } },
};

/** Polls `probe` until it returns something other than undefined/false. */
async function until<T>(probe: () => Promise<T | undefined | false>, what: string, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; see ${stack.logFile}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/;

interface ListedJson {
  readonly name: string;
  readonly phase: string;
  readonly policyVersion: number;
  readonly desiredPolicyVersion: number | null;
  readonly enforced: { readonly state: string; readonly policyVersion: number | null; readonly reason: string | null; readonly observedAt: string | null; readonly outcome: string };
  readonly drift: string[] | null;
  readonly labels: Record<string, string>;
}

/** The columns of a `sandbox list` row (cells hold no spaces here). */
function listRow(stdout: string, name: string): string[] | undefined {
  return stdout
    .trimEnd()
    .split("\n")
    .map((l) => l.split(/\s+/))
    .find((cells) => cells[0] === name);
}

/** A loopback port with nothing listening on it (see examples/free-port.ts for why not listen(0)). */
const closedPort = freePort;

/** The SDK in this process, for setting up sandboxes and checking what the binary did. */
function admin() {
  return createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openshell-cli-"));
  home = join(dir, "home");
  mkdirSync(home);
  files = {
    ok: join(dir, "ok.yaml"),
    ftp: join(dir, "ftp.yaml"),
    json: join(dir, "ok.json"),
    other: join(dir, "other.yaml"),
    degraded: join(dir, "degraded.yaml"),
  };
  // The middlewares of a sandbox are fixed at creation: every policy of `audited` names this one.
  const unreachable = `127.0.0.1:${await closedPort()}`;
  writeFileSync(files.degraded, policyYaml({ ...base, pypi: { host: "pypi.org" } }, unreachable));
  writeFileSync(files.other, policyYaml({ ...base, other: { host: "other.example.com" } }));
  writeFileSync(files.ok, policyYaml({ ...base, npm: { host: "registry.npmjs.org" } }));
  writeFileSync(files.ftp, policyYaml({ ...base, files: { host: "files.example.com", protocol: "ftp" } }));
  writeFileSync(files.json, JSON.stringify({ ...basePolicy, networkPolicies: { ...basePolicy.networkPolicies, pypi: { name: "pypi", endpoints: [{ host: "pypi.org", ports: [443] }] } } }));

  const [started] = await Promise.all([startLocalStack({ sandboxes: [web, rejected, slow, tuned, audited, closed] }), build()]);
  stack = started;
  const raw = admin();
  await raw.createSandbox({ name: web, spec: { policy: basePolicy }, labels: { team: "cli-a", tier: "web" }, workspaceScope: workspaceScope() });
  await raw.createSandbox({ name: rejected, spec: { policy: basePolicy }, labels: { team: "cli-a", tier: "batch" }, workspaceScope: workspaceScope() });
  await raw.createSandbox({ name: slow, spec: { policy: basePolicy }, labels: { team: "cli-b" }, workspaceScope: workspaceScope() });
  await raw.createSandbox({ name: tuned, spec: { policy: basePolicy }, workspaceScope: workspaceScope() });
  await raw.createSandbox({ name: paused, spec: { policy: basePolicy }, workspaceScope: workspaceScope() });
  await raw.createSandbox({
    name: audited,
    spec: { policy: { ...basePolicy, networkMiddlewares: { audit: { name: "audit", middleware: "audit-log", config: { grpc_endpoint: unreachable }, order: 1 } } } },
    workspaceScope: workspaceScope(),
  });
  await raw.createSandbox({ name: closed, spec: { policy: basePolicy }, labels: { team: "cli-c" }, workspaceScope: workspaceScope() });
  await raw.stopSandbox({ name: paused, workspaceScope: workspaceScope() });
  stack.startSupervisor({ sandbox: web });
  stack.startSupervisor({ sandbox: rejected });
  stack.startSupervisor({ sandbox: tuned });
  stack.startSupervisor({ sandbox: audited });
  closedSupervisor = stack.startSupervisor({ sandbox: closed });
  // Slower than the 500 ms timeout below, so that the wait ends first.
  stack.startSupervisor({ sandbox: slow, args: ["--apply-delay-ms", "3000"] });
  await waitReady(async (name) => (await raw.getSandbox({ name, workspaceScope: workspaceScope() })).sandbox?.status?.phase, [web, rejected, slow, tuned, audited, closed], stack.logFile, 400);
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("openshell-config policy", () => {
  it("policy set --wait exits 0 and reports the policy as applied, with no spinner when stderr is not a terminal", async () => {
    const r = await cli(["policy", "set", "--sandbox", web, "--file", files.ok, "--wait"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^policy v\\d+ of sandbox ${web}: applied\\n`));
    expect(r.stdout).toMatch(/^state +applied$/m);
    expect(r.stdout).toMatch(new RegExp(`^operation +${UUID.source}$`, "m"));
    // One style: versions as v2, hashes shortened, durations as 950ms or 1.2s, no config revision.
    expect(r.stdout).toMatch(/^policy version +v\d+$/m);
    expect(r.stdout).toMatch(/^policy hash +sha256:[0-9a-f]{12}…$/m);
    expect(r.stdout).toMatch(/^completed +\S+ \(after (\d+ms|\d+\.\ds)\)$/m);
    expect(r.stdout).toMatch(/^target +policy v\d+ \(sandbox\), settings revision \d+$/m);
    expect(r.stderr).toBe("");
  });

  it("policy set without --wait returns once committed and prints the command that waits for the outcome", async () => {
    const r = await cli(["policy", "set", "--sandbox", web, "--file", files.json]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^policy v\\d+ of sandbox ${web}: committed\\n`));
    const id = new RegExp(`^wait for the outcome: openshell-config operation wait (${UUID.source})$`, "m").exec(r.stderr)?.[1];
    expect(r.stdout).not.toContain("wait for the outcome");
    expect(id).toBeDefined();
    const waited = await cli(["operation", "wait", id!]);
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toMatch(new RegExp(`^operation ${id}: applied$`, "m"));
  });

  it("a rule the supervisor rejects (endpoint protocol ftp) exits 1 with the supervisor's message and the operation id", async () => {
    const r = await cli(["policy", "set", "--sandbox", rejected, "--file", files.ftp, "--wait"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`^policy v2 of sandbox ${rejected}: failed \\(failed-retained-last-known-good\\)`));
    expect(r.stderr).toContain(FTP_REJECTED);
    expect(r.stderr).toMatch(new RegExp(`^error: .*\\(operation ${UUID.source}\\)$`, "m"));
  });

  it("an update the sandbox runs degraded prints a warning with the reason and exits 0", async () => {
    const r = await cli(["policy", "set", "--sandbox", audited, "--file", files.degraded, "--wait"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^policy v2 of sandbox ${audited}: applied, degraded`));
    expect(r.stdout).toMatch(/^outcome +degraded$/m);
    expect(r.stderr).toMatch(new RegExp(`^warning: policy v2 of sandbox ${audited} runs degraded: .+ \\(operation ${UUID.source}\\)\\n$`));
  });

  it("an update of a stopped sandbox exits 0 as inactive", async () => {
    const r = await cli(["policy", "set", "--sandbox", paused, "--file", files.ok, "--wait"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^policy v\\d+ of sandbox ${paused}: inactive`));
    expect(r.stdout).toMatch(/^state +inactive$/m);
  });

  it("a wait that times out exits 124 with one message on stderr: the committed version, the operation and a resume command without a --timeout too short to be of use", async () => {
    const r = await cli(["policy", "set", "--sandbox", slow, "--file", files.ok, "--wait", "--timeout", "500ms"]);
    expect(r.code, r.stderr).toBe(124);
    expect(r.stdout).toBe("");
    const message = new RegExp(`^policy v2 of sandbox ${slow} committed; still pending after 500ms \\(operation (${UUID.source})\\)\nresume with: openshell-config operation wait (\\S+)\n$`).exec(r.stderr);
    expect(message, r.stderr).not.toBeNull();
    const id = message![1];
    expect(message![2]).toBe(id);

    const pending = await cli(["operation", "get", id!]);
    expect(pending.code).toBe(0);
    expect(pending.stdout).toMatch(new RegExp(`^operation ${id}: (pending|applied)`));

    const resumed = await cli(["operation", "wait", id!]);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`^operation ${id}: applied$`, "m"));
    expect(resumed.stdout).toMatch(/^target +policy v2 \(sandbox\)/m);
  });

  it("--output json prints one parseable JSON document with the completion", async () => {
    const r = await cli(["policy", "set", "--sandbox", web, "--file", files.other, "--wait", "--output", "json", "--idempotency-key", "cli-json-1"]);
    expect(r.code, r.stderr).toBe(0);
    const doc = JSON.parse(r.stdout) as { sandbox: string; idempotencyKey: string; operationId: string; policyVersion: number; completion: Record<string, unknown> };
    expect(doc).toMatchObject({ sandbox: web, idempotencyKey: "cli-json-1" });
    expect(doc.completion).toMatchObject({ state: "applied", outcome: "applied", operationId: doc.operationId, component: "sandbox-config" });
    expect(doc.completion.target).toMatchObject({ kind: "sandbox-config", policyVersion: doc.policyVersion });
    expect(typeof (doc.completion.target as { configRevision: unknown }).configRevision).toBe("string");
  });

  it("policy get of a sandbox whose update was rejected: desired failed, enforced the last known good, drift behind", async () => {
    const r = await cli(["policy", "get", "--sandbox", rejected]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^desired +v2 \\(failed: .*${FTP_REJECTED}.*\\)$`, "m"));
    expect(r.stdout).toMatch(/^enforced +v1 \(last known good; v2 was rejected\)$/m);
    expect(r.stdout).toMatch(/^drift +behind, last-update-failed$/m);
    expect(r.stdout).toContain(`# policy v2 of sandbox ${rejected} (desired)`);
    expect(r.stdout).toContain("host: files.example.com");
    expect(r.stderr).toBe("");

    const j = await cli(["policy", "get", "--sandbox", rejected, "-o", "json"]);
    expect(j.code, j.stderr).toBe(0);
    const doc = JSON.parse(j.stdout) as Record<string, unknown>;
    expect(doc).toMatchObject({
      version: 2,
      status: "failed",
      activeVersion: 1,
      enforced: { state: "enforcing", policyVersion: 1, reportedPolicyVersion: 2, outcome: "failed-retained-last-known-good", source: "gateway-record" },
      drift: ["behind", "last-update-failed"],
      pending: false,
    });
    expect(doc.loadError).toContain(FTP_REJECTED);
    expect((doc.enforced as { observedAt: string }).observedAt).toMatch(ISO);
  });

  it("policy get of a sandbox in sync: desired and enforced the same version, no drift", async () => {
    const r = await cli(["policy", "get", "--sandbox", web]);
    expect(r.code, r.stderr).toBe(0);
    const version = /^desired +v(\d+)$/m.exec(r.stdout)?.[1];
    expect(version, r.stdout).toBeDefined();
    expect(r.stdout).toMatch(new RegExp(`^enforced +v${version}$`, "m"));
    expect(r.stdout).not.toMatch(/^drift/m);

    const j = await cli(["policy", "get", "--sandbox", web, "-o", "json"]);
    expect(j.code, j.stderr).toBe(0);
    const doc = JSON.parse(j.stdout) as { version: number; status: string; activeVersion: number; enforced: Record<string, unknown>; drift: string[]; policy: { networkPolicies: Record<string, unknown> } };
    expect(doc.status).toBe("loaded");
    expect(doc.activeVersion).toBe(doc.version);
    expect(doc.enforced).toMatchObject({ state: "enforcing", policyVersion: doc.version, degraded: false, reason: null });
    expect(doc.drift).toEqual([]);
    expect(doc.policy.networkPolicies).toHaveProperty("github");
  });

  it("a policy file that is not a valid SandboxPolicy exits 1 naming the file and field, before contacting the gateway", async () => {
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, policyYaml(base).replace("ports: [443]", "ports: [443, https]"));
    const r = await cli(["policy", "set", "--sandbox", web, "--file", bad], { OPENSHELL_GATEWAY_URL: `http://127.0.0.1:${await closedPort()}` });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`error: ${bad}:11:22: networkPolicies.github.endpoints[0].ports[1]: expected number (uint32), got "https"\n`);
  });
});

describe("openshell-config settings", () => {
  it("settings set and settings delete wait for the sandbox and change exactly that setting", async () => {
    const set = await cli(["settings", "set", "--sandbox", tuned, "--key", "max_connections", "--value", "64", "--type", "int", "--wait"]);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(new RegExp(`^setting max_connections of sandbox ${tuned}: applied$`, "m"));
    expect(set.stdout).toMatch(/^value +64 \(int\)$/m);
    let cfg = await admin().getSandboxConfig({ name: tuned, workspaceScope: workspaceScope() });
    expect(cfg.settings.max_connections?.value?.value).toEqual({ case: "intValue", value: 64n });

    const flag = await cli(["settings", "set", "--sandbox", tuned, "--key", "verbose", "--value", "true", "--type", "bool", "--wait", "-o", "json"]);
    expect(flag.code, flag.stderr).toBe(0);
    expect(JSON.parse(flag.stdout)).toMatchObject({ key: "verbose", value: true, completion: { state: "applied" } });

    const del = await cli(["settings", "delete", "--sandbox", tuned, "--key", "max_connections", "--wait"]);
    expect(del.code, del.stderr).toBe(0);
    expect(del.stdout).toMatch(new RegExp(`^deletion of setting max_connections of sandbox ${tuned}: applied$`, "m"));
    expect(del.stdout).toMatch(/^deleted +yes$/m);
    cfg = await admin().getSandboxConfig({ name: tuned, workspaceScope: workspaceScope() });
    expect(Object.keys(cfg.settings)).toEqual(["verbose"]);
  });
});

describe("openshell-config sandbox list", () => {
  it("lists only the sandboxes that match a label selector", async () => {
    const r = await cli(["sandbox", "list", "--selector", "team=cli-a"]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME +PHASE +DESIRED +ENFORCED +DRIFT +AGE +LABELS$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0]).sort()).toEqual([rejected, web]);
    expect(r.stdout).not.toContain(slow);

    const j = await cli(["sandbox", "list", "-l", "team=cli-a", "-l", "tier=web", "-o", "json"]);
    expect(j.code, j.stderr).toBe(0);
    const doc = JSON.parse(j.stdout) as { sandboxes: { name: string; phase: string; labels: Record<string, string> }[] };
    expect(doc.sandboxes).toEqual([expect.objectContaining({ name: web, phase: "ready", labels: { team: "cli-a", tier: "web" } })]);
  });

  it("shows desired, enforced and drift per sandbox: in sync, behind after a rejected update, nothing reported yet", async () => {
    // `web` was updated by earlier tests: wait until its newest version is in force.
    const inSync = await until(async () => {
      const j = await cli(["sandbox", "list", "-l", "team=cli-a", "-o", "json"]);
      const doc = JSON.parse(j.stdout) as { sandboxes: ListedJson[] };
      const w = doc.sandboxes.find((s) => s.name === web);
      return w?.drift?.length === 0 && doc;
    }, `${web} to be in sync`);
    const w = inSync.sandboxes.find((s) => s.name === web)!;
    expect(w).toMatchObject({ phase: "ready", enforced: { state: "enforcing", policyVersion: w.desiredPolicyVersion }, policyVersion: w.desiredPolicyVersion, drift: [] });
    const b = inSync.sandboxes.find((s) => s.name === rejected)!;
    expect(b).toMatchObject({
      phase: "ready",
      desiredPolicyVersion: 2,
      policyVersion: 1,
      enforced: { state: "enforcing", policyVersion: 1, reportedPolicyVersion: 2, outcome: "failed-retained-last-known-good" },
      drift: ["behind", "last-update-failed"],
    });
    expect(b.enforced.reason).toContain(FTP_REJECTED);

    const r = await cli(["sandbox", "list"]);
    expect(r.code, r.stderr).toBe(0);
    expect(listRow(r.stdout, web)).toEqual([web, "ready", `v${w.desiredPolicyVersion}`, `v${w.desiredPolicyVersion}`, "-", expect.stringMatching(AGE), "team=cli-a,tier=web"]);
    expect(listRow(r.stdout, rejected)).toEqual([rejected, "ready", "v2", "v1", "behind,last-update-failed", expect.stringMatching(AGE), "team=cli-a,tier=batch"]);
    // Stopped before any supervisor reported: nothing is claimed.
    expect(listRow(r.stdout, paused)?.slice(2, 5)).toEqual([expect.stringMatching(/^v\d+$/), "-", "unreported"]);
  });
});

describe("openshell-config: a sandbox that fails closed", () => {
  it("after a rejected update and a supervisor restart, policy get and sandbox list say it denies all and claim no version", async () => {
    const set = await cli(["policy", "set", "--sandbox", closed, "--file", files.ftp, "--wait"]);
    expect(set.code).toBe(1);
    expect(set.stdout).toMatch(new RegExp(`^policy v2 of sandbox ${closed}: failed \\(failed-retained-last-known-good\\)`));
    // The last known good lives in the supervisor's memory: a restart re-bootstraps with the
    // rejected v2 and fails closed.
    await closedSupervisor.kill("SIGTERM");
    closedSupervisor = stack.startSupervisor({ sandbox: closed });
    await until(async () => {
      const sb = (await admin().getSandbox({ name: closed, workspaceScope: workspaceScope() })).sandbox;
      return sb?.status?.policyEnforcement?.state === PolicyEnforcementState.FAILED_CLOSED;
    }, `${closed} to fail closed`);

    const r = await cli(["policy", "get", "--sandbox", closed]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^desired +v2 \\(failed: .*${FTP_REJECTED}.*\\)$`, "m"));
    expect(r.stdout).toMatch(new RegExp(`^enforced +fails closed \\(deny all\\) since ${ISO.source}: .*${FTP_REJECTED}`, "m"));
    expect(r.stdout).toMatch(/^drift +failed-closed, last-update-failed$/m);
    // No claim that it runs a version: neither the rejected v2 nor the lost v1.
    expect(r.stdout).not.toMatch(/\bv1\b|runs|still|active version/);
    expect(r.stdout).not.toMatch(/^enforced +v/m);

    const j = await cli(["policy", "get", "--sandbox", closed, "-o", "json"]);
    expect(j.code, j.stderr).toBe(0);
    const doc = JSON.parse(j.stdout) as { activeVersion: number; enforced: ListedJson["enforced"]; drift: string[] };
    expect(doc).toMatchObject({
      version: 2,
      status: "failed",
      activeVersion: 0,
      enforced: { state: "failed-closed", policyVersion: null, reportedPolicyVersion: 2, outcome: "failed-closed" },
      drift: ["failed-closed", "last-update-failed"],
    });
    expect(doc.enforced.reason).toContain(FTP_REJECTED);
    expect(doc.enforced.observedAt).toMatch(ISO);

    const list = await cli(["sandbox", "list", "--selector", "team=cli-c"]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.trimEnd().split("\n")).toHaveLength(2);
    expect(listRow(list.stdout, closed)).toEqual([closed, "ready", "v2", "deny-all", "failed-closed,last-update-failed", expect.stringMatching(AGE), "team=cli-c"]);

    const lj = await cli(["sandbox", "list", "--selector", "team=cli-c", "-o", "json"]);
    expect(lj.code, lj.stderr).toBe(0);
    const [listed] = (JSON.parse(lj.stdout) as { sandboxes: ListedJson[] }).sandboxes;
    expect(listed).toMatchObject({
      name: closed,
      phase: "ready",
      desiredPolicyVersion: 2,
      policyVersion: 0,
      enforced: { state: "failed-closed", policyVersion: null, reportedPolicyVersion: 2, outcome: "failed-closed" },
      drift: ["failed-closed", "last-update-failed"],
    });
    expect(listed!.enforced.reason).toContain(FTP_REJECTED);
  });
});

describe("openshell-config errors and configuration", () => {
  it("usage errors exit 2 with one line saying what is wrong and one pointing to --help, never the whole usage", async () => {
    const cases: [string[], string, string][] = [
      [[], "no command given; commands: policy, settings, operation, sandbox, gateway, completion", "openshell-config"],
      [["policy", "set", "--sandbox", web], "policy set needs --file", "openshell-config policy set"],
      [["policy", "set", "--sandbox", web, "--file", files.ok, "--frobnicate"], 'unknown option "--frobnicate" for policy set', "openshell-config policy set"],
      [["settings", "set", "-s", web, "--key", "k", "--value", "x", "--type", "int"], '--value must be an integer for --type int; got "x"', "openshell-config settings set"],
      [["polcy", "get", "-s", web], 'unknown command "polcy"; did you mean "policy"?', "openshell-config"],
      [["policy", "gte", "-s", web], 'unknown command "policy gte"; did you mean "policy get"?', "openshell-config policy"],
    ];
    for (const [args, message, command] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr).toBe(`error: ${message}\nrun '${command} --help' for usage\n`);
      expect(r.stdout).toBe("");
    }
  });

  it("--help prints the usage with the exit statuses and exits 0", async () => {
    const r = await cli(["policy", "set", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: openshell-config policy set/);
    expect(r.stdout).toContain("124 the wait timed out");
  });

  it("a missing token exits 1 with an authentication message", async () => {
    const r = await cli(["policy", "get", "--sandbox", web], { OPENSHELL_TOKEN: undefined });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: not authenticated: no token given; pass --token, set OPENSHELL_TOKEN, or put "token" in .*config\.json/);
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
  });

  it("a rejected token exits 1 without ever printing the token", async () => {
    const token = "wrong-token-0123456789";
    const r = await cli(["sandbox", "list", "--token", token, "-o", "json"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: authentication failed: the gateway rejected the token from --token/);
    expect(r.stdout + r.stderr).not.toContain(token);
  });

  it("an unreachable gateway is retried with one line on stderr, then a one-line connection error with exit status 1", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const r = await cli(["operation", "get", "00000000-0000-4000-8000-000000000000"], { OPENSHELL_GATEWAY_URL: url });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(new RegExp(`^gateway unreachable \\(connect ECONNREFUSED [^)]+\\); retrying 3 times within 3\\.5s…\\nerror: cannot reach the gateway at ${url} \\(4 attempts\\): .*ECONNREFUSED.*\\n$`));
  });

  it("takes the URL and token from the config file, and lets the environment and flags override it", async () => {
    const configDir = join(home, ".config", "openshell-config");
    mkdirSync(configDir, { recursive: true });
    const deadUrl = `http://127.0.0.1:${await closedPort()}`;
    try {
      writeFileSync(join(configDir, "config.json"), JSON.stringify({ url: stack.url, token: stack.adminToken }));
      const fromFile = await cli(["sandbox", "list", "-l", "team=cli-b"], { OPENSHELL_GATEWAY_URL: undefined, OPENSHELL_TOKEN: undefined });
      expect(fromFile.code, fromFile.stderr).toBe(0);
      expect(fromFile.stdout).toContain(slow);

      writeFileSync(join(configDir, "config.json"), JSON.stringify({ url: deadUrl, token: "stale-token-from-file" }));
      const overridden = await cli(["sandbox", "list", "-l", "team=cli-b"], { OPENSHELL_GATEWAY_URL: undefined, OPENSHELL_TOKEN: stack.adminToken });
      expect(overridden.code).toBe(1);
      expect(overridden.stderr).toContain(`cannot reach the gateway at ${deadUrl}`);
      const flagged = await cli(["sandbox", "list", "-l", "team=cli-b", "--url", stack.url], { OPENSHELL_GATEWAY_URL: deadUrl });
      expect(flagged.code, flagged.stderr).toBe(0);
      expect(flagged.stdout).toContain(slow);
    } finally {
      rmSync(configDir, { recursive: true, force: true });
    }
  });

  it("a sandbox name the gateway does not know gets one line naming the closest sandbox, and none when nothing is close", async () => {
    const typo = await cli(["policy", "get", "--sandbox", "cli-slwo"]);
    expect(typo.code).toBe(1);
    expect(typo.stdout).toBe("");
    expect(typo.stderr).toBe('error: sandbox "cli-slwo" not found; did you mean "cli-slow"?\n');
    const settings = await cli(["settings", "set", "--sandbox", "cli-setings", "--key", "log_level", "--value", "debug"]);
    expect(settings.code).toBe(1);
    expect(settings.stderr).toBe(`error: sandbox "cli-setings" not found; did you mean "${tuned}"?\n`);
    const far = await cli(["policy", "get", "--sandbox", "nothing-like-any"]);
    expect(far.code).toBe(1);
    expect(far.stderr).toBe('error: sandbox "nothing-like-any" not found\n');
    // Another workspace's sandboxes are not suggested.
    const elsewhere = await cli(["policy", "get", "--sandbox", "cli-slwo", "--workspace", "elsewhere"]);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toBe('error: sandbox "cli-slwo" not found\n');
  });

  it("speaks Connect and gRPC-Web as well as gRPC", async () => {
    for (const protocol of ["connect", "grpc-web"]) {
      const r = await cli(["--protocol", protocol, "operation", "get", "00000000-0000-4000-8000-000000000000"]);
      expect(r.code, protocol).toBe(1);
      // One line, saying "not found" once (the gateway's message already does).
      expect(r.stderr.trim()).toBe("error: update operation 00000000-0000-4000-8000-000000000000 not found in workspace default");
      expect(r.stderr.match(/not found/g)).toHaveLength(1);
      const list = await cli(["sandbox", "list", "--protocol", protocol, "-l", "tier=web"]);
      expect(list.code, list.stderr).toBe(0);
      expect(list.stdout).toContain(web);
    }
  });
});
