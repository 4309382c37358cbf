// The built `openshell-config` binary's read and edit commands against real processes (a gateway
// on SQLite and reference supervisors, examples/local-stack.ts): settings get and list with their
// types in text, JSON and YAML; policy diff, set --dry-run, merge and history; operation list and
// get (with the sandbox named, and --watch); sandbox list with kubectl selectors and --watch;
// a rollout to what a set-based selector matches; the one retry rule; a gateway without our
// ListConfigUpdateOperations; shell completion. Each test runs the binary as a user would.

import { spawn } from "node:child_process";
import { createServer as createHttp2Server, type Http2Server } from "node:http2";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { freePort, startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { BIN, build, policyYaml, runBash, runBinary, type Run, waitReady } from "./harness.js";

const web = "cmd-web";
const api = "cmd-api";
const slow = "cmd-slow";
const rej = "cmd-rej";
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

let stack: LocalStack;
let dir: string;
let home: string;
const base = { github: { host: "api.github.com" } };
const basePolicy = {
  version: 1,
  filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] },
  networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] } },
};
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

function cli(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return runBinary(args, dir, { PATH: process.env.PATH, HOME: home, OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: stack.adminToken, ...env });
}

/** The binary left running (--watch): its output so far, a wait for a line, Ctrl-C. */
function watch(args: readonly string[]) {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: home, OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: stack.adminToken },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  const waiters: (() => void)[] = [];
  child.stdout.setEncoding("utf8").on("data", (c: string) => {
    stdout += c;
    for (const w of waiters.splice(0)) w();
  });
  child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
  const exited = new Promise<number | null>((res) => child.once("close", res));
  return {
    get stdout() {
      return stdout;
    },
    /** Resolves once stdout matches (the test's own timeout bounds it). */
    async until(pattern: RegExp): Promise<void> {
      while (!pattern.test(stdout)) {
        if (child.exitCode !== null) throw new Error(`exited ${child.exitCode} before ${pattern}: ${stdout}${stderr}`);
        await new Promise<void>((r) => waiters.push(r));
      }
    },
    async interrupt(): Promise<Run> {
      child.kill("SIGINT");
      return { code: await exited, stdout, stderr };
    },
    exited: async (): Promise<Run> => ({ code: await exited, stdout, stderr }),
  };
}

const admin = () => createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
const json = <T>(r: Run): T => {
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openshell-cmd-"));
  home = join(dir, "home");
  mkdirSync(home);
  const [started] = await Promise.all([startLocalStack({ sandboxes: [web, api, slow, rej] }), build()]);
  stack = started;
  const raw = admin();
  const labels: Record<string, Record<string, string>> = {
    [web]: { team: "cmd", tier: "web", ring: "1" },
    [api]: { team: "cmd", tier: "api", ring: "2" },
    [slow]: { team: "cmd-slow" },
    [rej]: { team: "cmd-rej" },
  };
  for (const name of [web, api, slow, rej]) {
    await raw.createSandbox({ name, spec: { policy: basePolicy }, labels: labels[name]!, workspaceScope: workspaceScope() });
    // slow: long enough that a command started after a commit (over a second on a loaded machine) still sees it pending.
    stack.startSupervisor({ sandbox: name, ...(name === slow ? { args: ["--apply-delay-ms", "4000"] } : {}) });
  }
  await waitReady(async (name) => (await raw.getSandbox({ name, workspaceScope: workspaceScope() })).sandbox?.status?.phase, [web, api, slow, rej], stack.logFile, 400);
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("settings get and settings list", () => {
  it("keep every value's type: int 64, string \"64\", bool and bytes differ in text, JSON and YAML", async () => {
    for (const [key, value, type] of [["count", "64", "int"], ["label", "64", "string"], ["verbose", "true", "bool"], ["blob", "AQID", "bytes-base64"]]) {
      const r = await cli(["settings", "set", "-s", web, "--key", key!, "--value", value!, "--type", type!, "--wait"]);
      expect(r.code, r.stderr).toBe(0);
    }
    const list = await cli(["settings", "list", "-s", web]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.trimEnd().split("\n").map((l) => l.split(/\s{2,}/))).toEqual([
      ["KEY", "TYPE", "VALUE", "SCOPE"],
      ["blob", "bytes-base64", "base64:AQID", "sandbox"],
      ["count", "int", "64", "sandbox"],
      ["label", "string", '"64"', "sandbox"],
      ["verbose", "bool", "true", "sandbox"],
    ]);
    const expected = [
      { key: "blob", type: "bytes-base64", value: "AQID", scope: "sandbox" },
      { key: "count", type: "int", value: "64", scope: "sandbox" },
      { key: "label", type: "string", value: "64", scope: "sandbox" },
      { key: "verbose", type: "bool", value: true, scope: "sandbox" },
    ];
    expect(json<{ settings: unknown }>(await cli(["settings", "list", "-s", web, "-o", "json"])).settings).toEqual(expected);
    const yaml = await cli(["settings", "list", "-s", web, "-o", "yaml"]);
    expect(yaml.code, yaml.stderr).toBe(0);
    expect((parseYaml(yaml.stdout) as { settings: unknown }).settings).toEqual(expected);

    const one = await cli(["settings", "get", "-s", web, "count", "-o", "json"]);
    expect(json(one)).toEqual({ sandbox: web, key: "count", type: "int", value: "64", scope: "sandbox" });
    const text = await cli(["settings", "get", "-s", web, "label"]);
    expect(text.stdout).toMatch(/^label +string +"64" +sandbox$/m);
    // policy get shows the same types.
    expect(json<{ settings: Record<string, unknown> }>(await cli(["policy", "get", "-s", web, "-o", "json"])).settings.count).toEqual({ type: "int", value: "64", scope: "sandbox" });
  });

  it("settings get of a key that is not set exits 1 with one line naming the keys there are", async () => {
    const r = await cli(["settings", "get", "-s", web, "nope"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`error: setting nope is not set on sandbox ${web} (it has blob, count, label, verbose)\n`);
  });
});

describe("policy diff, set --dry-run, merge and history", () => {
  it("policy diff exits 0 and prints nothing for the desired policy, 1 with a unified diff for another", async () => {
    const same = file("same.yaml", policyYaml(base));
    const other = file("other.yaml", policyYaml({ ...base, npm: { host: "registry.npmjs.org" } }));
    const equal = await cli(["policy", "diff", "-s", api, "-f", same]);
    expect(equal.code, equal.stderr).toBe(0);
    expect(equal.stdout).toBe("");
    const differ = await cli(["policy", "diff", "-s", api, "-f", other]);
    expect(differ.code, differ.stderr).toBe(1);
    expect(differ.stdout).toMatch(new RegExp(`^--- sandbox ${api}: desired policy v1\\n\\+\\+\\+ ${other}\\n@@ -\\d+,\\d+ \\+\\d+,\\d+ @@\\n`));
    expect(differ.stdout).toContain("+  npm:\n+    name: npm\n");
    expect(differ.stdout).toContain("+      - host: registry.npmjs.org\n");
    const added = differ.stdout.split("\n").filter((l) => /^\+(?!\+\+ )/.test(l)).length;
    const asJson = await cli(["policy", "diff", "-s", api, "-f", other, "-o", "json"]);
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stdout)).toMatchObject({ sandbox: api, desiredVersion: 1, equal: false, added, removed: 0, staticFieldsChanged: [], diff: differ.stdout });
  });

  it("policy set --dry-run checks the file, shows the diff, fails with the reason when the gateway would refuse a static field, and sends nothing", async () => {
    const staticChange = file("static.yaml", policyYaml({ ...base, npm: { host: "registry.npmjs.org" } }).replace("readWrite: [/tmp, /workspace]", "readWrite: [/tmp]"));
    const r = await cli(["policy", "set", "-s", api, "-f", staticChange, "--dry-run"]);
    // The gateway would refuse it: not "valid", exit 1 with the reason (issue 30, item 8).
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toContain("-    - /workspace\n");
    expect(r.stdout).not.toMatch(/is valid/);
    expect(r.stderr).toMatch(/^error: dry run: the gateway would refuse .*static\.yaml: it changes filesystem, fixed when sandbox cmd-api was created \(only networkPolicies may change\); nothing was sent$/m);
    // The same file for real: the gateway does refuse it, as the dry run said.
    const real = await cli(["policy", "set", "-s", api, "-f", staticChange]);
    expect(real.code).toBe(1);
    expect(real.stderr).toMatch(/policy\.filesystem differs from the policy the sandbox was created with/);
    // A file that changes only network rules is valid.
    const ok = await cli(["policy", "set", "-s", api, "-f", file("net-only.yaml", policyYaml({ ...base, npm: { host: "registry.npmjs.org" } })), "--dry-run"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^dry run: .*net-only\.yaml is valid \(\d+ lines added, 0 removed against v1\); nothing was sent$/m);
    const history = json<{ revisions: unknown[] }>(await cli(["policy", "history", "-s", api, "-o", "json"]));
    expect(history.revisions).toHaveLength(1);
    const bad = file("bad.yaml", policyYaml(base).replace("ports: [443]", "ports: [https]"));
    const invalid = await cli(["policy", "set", "-s", api, "-f", bad, "--dry-run"]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/^error: .*bad\.yaml:\d+:\d+: networkPolicies\.github\.endpoints\[0\]\.ports\[0\]: expected number/);
  });

  it("policy merge adds and removes a rule from flags or a file, and the diff shows what it did", async () => {
    const added = await cli(["policy", "merge", "-s", api, "--add-rule", "pypi", "--host", "pypi.org", "--port", "443", "--wait"]);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(new RegExp(`^policy v2 of sandbox ${api}: applied\\n`));
    expect(added.stdout).toMatch(/^merged +add rule pypi \(pypi\.org:443\)$/m);
    expect(added.stdout).toMatch(/^policy version +v2$/m);
    expect(added.stdout).toMatch(/^policy hash +sha256:[0-9a-f]{12}…$/m);
    const withPypi = file("with-pypi.yaml", policyYaml({ ...base, pypi: { host: "pypi.org" } }).replace(/ {4}binaries:\n {6}- path: \/usr\/bin\/git\n$/, ""));
    expect((await cli(["policy", "diff", "-s", api, "-f", withPypi])).code).toBe(0);

    const ops = file("ops.yaml", "- removeRule: { ruleName: pypi }\n");
    const removed = await cli(["policy", "merge", "-s", api, "-f", ops, "--wait", "-o", "json"]);
    expect(json(removed)).toMatchObject({ sandbox: api, merged: ["remove rule pypi"], policyVersion: 3, completion: { state: "applied" } });
    expect((await cli(["policy", "diff", "-s", api, "-f", file("base.yaml", policyYaml(base))])).code).toBe(0);

    const broken = await cli(["policy", "merge", "-s", api, "-f", file("broken-ops.yaml", "- dropEverything: {}\n")]);
    expect(broken.code).toBe(1);
    expect(broken.stderr).toMatch(/^error: .*broken-ops\.yaml: operation 1: /);
  });

  it("policy history lists each revision with its status, the enforced one marked, the load error of a failed one", async () => {
    const ftp = file("ftp.yaml", policyYaml({ ...base, files: { host: "files.example.com", protocol: "ftp" } }));
    expect((await cli(["policy", "set", "-s", rej, "-f", ftp, "--wait"])).code).toBe(1);
    const r = await cli(["policy", "history", "-s", rej]);
    expect(r.code, r.stderr).toBe(0);
    const rows = r.stdout.trimEnd().split("\n");
    expect(rows[0]).toMatch(/^VERSION +STATUS +HASH +AGE +ERROR$/);
    expect(rows[1]).toMatch(/^v2 +failed +sha256:[0-9a-f]{12}… +\d+[smh]\S* +.*protocol "ftp" is not supported/);
    expect(rows[2]).toMatch(/^v1 +loaded \(enforced\) +sha256:[0-9a-f]{12}… +\d+[smh]\S*$/);
    // -o wide: the creation and load times, and the whole hash.
    const wide = (await cli(["policy", "history", "-s", rej, "-o", "wide"])).stdout.trimEnd().split("\n");
    expect(wide[0]).toMatch(/^VERSION +STATUS +HASH +CREATED +LOADED +ERROR$/);
    expect(wide[2]).toMatch(/^v1 +loaded \(enforced\) +[0-9a-f]{64} +\d{4}-\S+ +\d{4}-\S+$/);
    const doc = json<{ enforcedVersion: number; revisions: { version: number; status: string; enforced: boolean; policyHash: string }[] }>(await cli(["policy", "history", "-s", rej, "-o", "json"]));
    expect(doc.enforcedVersion).toBe(1);
    expect(doc.revisions.map((v) => [v.version, v.status, v.enforced])).toEqual([
      [2, "failed", false],
      [1, "loaded", true],
    ]);
    expect(doc.revisions[0]!.policyHash).toMatch(/^[0-9a-f]{64}$/);
    const limited = await cli(["policy", "history", "-s", rej, "--limit", "1"]);
    expect(limited.stdout.trimEnd().split("\n")).toEqual([expect.stringMatching(/^VERSION/), expect.stringMatching(/^v2 /)]);
    // Not the answer: on stderr.
    expect(limited.stderr).toBe("… older revisions not shown (--limit 1; --limit 0 lists all)\n");
  });
});

describe("operations", () => {
  it("operation list shows a sandbox's operations newest first with what each changed; operation get names the sandbox", async () => {
    const r = await cli(["operation", "list", "-s", web]);
    expect(r.code, r.stderr).toBe(0);
    const rows = r.stdout.trimEnd().split("\n");
    expect(rows[0]).toMatch(/^OPERATION +CHANGE +STATE +OUTCOME +AGE +ERROR$/);
    // Short ids in the table (whole with -o wide and in JSON).
    expect(rows.slice(1).every((l) => /^[0-9a-f]{8} /.test(l))).toBe(true);
    // The four settings of the first test, newest first.
    // The four settings of the first test, newest first; the oldest has nothing older to tell what it changed.
    expect(rows.slice(1).map((l) => l.split(/\s{2,}/).slice(1, 4))).toEqual([
      ["settings rev 4", "applied", "-"],
      ["settings rev 3", "applied", "-"],
      ["settings rev 2", "applied", "-"],
      ["policy v1, settings rev 1", "applied", "-"],
    ]);
    const doc = json<{ operations: { operationId: string; state: string }[] }>(await cli(["operation", "list", "-s", web, "--limit", "2", "-o", "json"]));
    expect(doc.operations).toHaveLength(2);
    const id = doc.operations[0]!.operationId;
    expect(id).toMatch(UUID);

    const got = await cli(["operation", "get", id]);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stdout).toMatch(new RegExp(`^operation ${id}: applied\\nsandbox +${web}\\n`));
    expect(got.stdout).not.toContain("config revision");
    expect(got.stdout).toMatch(/^completed +\S+ \(after (\d+ms|\d+\.\ds)\)$/m);
    const yaml = parseYaml((await cli(["operation", "get", id, "-o", "yaml"])).stdout) as Record<string, unknown>;
    expect(yaml).toMatchObject({ sandbox: web, state: "applied", operationId: id });
  });

  it("a malformed operation id is a usage error naming the form, not 'not found'", async () => {
    const r = await cli(["operation", "get", "not-an-id"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`error: malformed operation ID "not-an-id": expected a UUID such as 3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f\nrun 'openshell-config operation get --help' for usage\n`);
    expect(r.stdout).toBe("");
  });

  it("operation get --watch prints each state until the outcome, then the outcome, and exits 0", async () => {
    const committed = json<{ operationId: string }>(await cli(["settings", "set", "-s", slow, "--key", "k", "--value", "v", "-o", "json"]));
    const w = watch(["operation", "get", committed.operationId, "--watch"]);
    const r = await w.exited();
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(new RegExp(`^\\S+  operation ${committed.operationId}: pending`));
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^\\S+  operation ${committed.operationId}: applied$`)));
    expect(r.stdout).toMatch(new RegExp(`\\n\\noperation ${committed.operationId}: applied\\nsandbox +${slow}\\n`));
  });
});

describe("sandbox list: kubectl selectors and --watch", () => {
  const names = (r: Run) => r.stdout.trimEnd().split("\n").slice(1).map((l) => l.split(/\s+/)[0]).sort();

  it("ANDs requirements, evaluates set forms, and matches nothing for one key with two values", async () => {
    expect(names(await cli(["sandbox", "list", "-l", "team=cmd"]))).toEqual([api, web]);
    expect(names(await cli(["sandbox", "list", "-l", "team=cmd,tier in (web, db)"]))).toEqual([web]);
    expect(names(await cli(["sandbox", "list", "-l", "team in (cmd, cmd-slow)", "-l", "ring notin (1)"]))).toEqual([api, slow]);
    expect(names(await cli(["sandbox", "list", "-l", "team=cmd,!ring"]))).toEqual([]);
    expect(names(await cli(["sandbox", "list", "-l", "team==cmd-rej"]))).toEqual([rej]);
    const none = await cli(["sandbox", "list", "--selector", "tier=web,tier=api"]);
    expect(none.code, none.stderr).toBe(0);
    // Not an answer: on stderr, as kubectl's "No resources found".
    expect(none.stdout).toBe("");
    expect(none.stderr).toBe("no sandboxes match tier=web,tier=api\n");
    const bad = await cli(["sandbox", "list", "--selector", "tier in web"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.split("\n")[0]).toBe('error: --selector "tier in web": unexpected "in" after "tier"; expected =, ==, !=, in (…) or notin (…)');
  });

  it("--watch appends the rows that change when not a terminal, and Ctrl-C exits 130", async () => {
    const w = watch(["sandbox", "list", "-l", "team=cmd", "--watch"]);
    await w.until(new RegExp(`^${web} .* v1 `, "m"));
    const ok = file("watched.yaml", policyYaml({ ...base, watched: { host: "watched.example.com" } }));
    expect((await cli(["policy", "set", "-s", web, "-f", ok, "--wait"])).code).toBe(0);
    await w.until(new RegExp(`^${web} +ready +v2 +v2 `, "m"));
    const r = await w.interrupt();
    expect(r.code).toBe(130);
    expect(r.stderr).toBe("");
    const lines = r.stdout.trimEnd().split("\n");
    // The table once, then only the changed row.
    expect(lines.filter((l) => l.startsWith("NAME"))).toHaveLength(1);
    expect(lines.filter((l) => l.startsWith(api))).toHaveLength(1);
  });
});

describe("policy rollout with a set-based selector", () => {
  it("rolls out to exactly the sandboxes it matches, resolved by the command line", async () => {
    const p = file("ring2.yaml", policyYaml({ ...base, ring: { host: "ring.example.com" } }));
    const r = await cli(["policy", "rollout", "-l", "team=cmd,ring notin (1)", "-f", p, "-o", "json"]);
    const doc = json<{ total: number; selector: string; counts: { byState: Record<string, number> } }>(r);
    expect(doc).toMatchObject({ total: 1, selector: "team=cmd,ring notin (1)" });
    expect((await cli(["policy", "diff", "-s", api, "-f", p])).code).toBe(0);
    expect((await cli(["policy", "diff", "-s", web, "-f", p])).code).toBe(1);
    const none = await cli(["policy", "rollout", "-l", "team in (nobody)", "-f", p]);
    expect(none.code).toBe(1);
    expect(none.stderr).toBe("error: no sandboxes match team in (nobody): nothing was sent\n");
  });
});

describe("one retry rule, and a gateway without the extension", () => {
  it("reads and writes alike retry an unreachable gateway with one line on stderr, then fail with one line", async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    for (const args of [["sandbox", "list"], ["settings", "set", "-s", web, "--key", "k", "--value", "v"]]) {
      const r = await cli(args, { OPENSHELL_GATEWAY_URL: url });
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr.trimEnd().split("\n")).toEqual([
        expect.stringMatching(/^gateway unreachable \(connect ECONNREFUSED 127\.0\.0\.1:\d+\); retrying 3 times within 3\.5s…$/),
        expect.stringMatching(new RegExp(`^error: cannot reach the gateway at ${url} \\(4 attempts\\): connect ECONNREFUSED`)),
      ]);
    }
  });

  it("operation list against a gateway without ListConfigUpdateOperations says so in one line", async () => {
    // A gateway that implements none of OpenShell (every RPC answers UNIMPLEMENTED).
    const server: Http2Server = createHttp2Server(connectNodeAdapter({ routes: (router) => router.service(OpenShell, {}) }));
    const port = await new Promise<number>((res) => server.listen(0, "127.0.0.1", () => res((server.address() as { port: number }).port)));
    try {
      const r = await cli(["operation", "list", "-s", web], { OPENSHELL_GATEWAY_URL: `http://127.0.0.1:${port}` });
      expect(r.code).toBe(1);
      expect(r.stderr).toBe(
        "error: this gateway cannot list operations (it lacks the ListConfigUpdateOperations extension, which upstream gateways do not have); look one up by id with 'openshell-config operation get ID'\n",
      );
    } finally {
      server.close();
    }
  });
});

describe("shell completion", () => {
  it("bash can source the script, which registers openshell-config and completes commands, options and values", async () => {
    const bash = (script: string) => runBash(script, dir, { PATH: process.env.PATH, HOME: home });
    const registered = await bash(`source <("${process.execPath}" "${BIN}" completion bash) && complete -p openshell-config`);
    expect(registered.code, registered.stderr).toBe(0);
    expect(registered.stdout).toBe("complete -F _openshell_config openshell-config\n");
    const complete = async (...words: string[]) => {
      const r = await bash(
        `source <("${process.execPath}" "${BIN}" completion bash); COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _openshell_config; echo "\${COMPREPLY[*]}"`,
      );
      expect(r.code, r.stderr).toBe(0);
      return r.stdout.trim().split(" ");
    };
    expect(await complete("openshell-config", "")).toEqual(["policy", "settings", "operation", "sandbox", "gateway", "completion"]);
    expect(await complete("openshell-config", "policy", "h")).toEqual(["history"]);
    expect(await complete("openshell-config", "--url", "http://x", "policy", "set", "--d")).toEqual(["--dry-run"]);
    expect(await complete("openshell-config", "settings", "set", "--type", "")).toEqual(["string", "bool", "int", "bytes-base64"]);
    expect(await complete("openshell-config", "sandbox", "list", "-o", "y")).toEqual(["yaml"]);
    expect(await complete("openshell-config", "policy", "rollout", "u")).toEqual(["undo"]);
    expect(await complete("openshell-config", "policy", "rollout", "--wa")).toEqual(["--waves"]);
    expect(await complete("openshell-config", "policy", "rollout", "status", "--wat")).toEqual(["--watch"]);
  });

  it("zsh gets a script that defines and registers its completion function", async () => {
    const r = await cli(["completion", "zsh"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^#compdef openshell-config\n/);
    expect(r.stdout).toContain("compdef _openshell_config openshell-config");
    expect(r.stdout).toContain("'policy set') local -a items=('--sandbox:the sandbox name (required)'");
    expect(r.stdout).toMatch(/'policy rollout'\) local -a items=\('resume:[^']*' 'approve:[^']*' 'undo:[^']*' 'status:[^']*' 'list:[^']*' 'history:[^']*'/);
  });
});
