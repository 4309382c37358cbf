// `openshell-config policy rollout` as a built binary against real processes: a gateway on
// SQLite and two supervisor processes (a fast fleet of 30 sandboxes, a slow one of 12 taking 600 ms per apply). Checks
// exit statuses, the summary, the saved state and that an interrupted rollout resumed in a new
// process gives no sandbox a second revision.

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { fleetNames, startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { build, policyYaml, runBinary, waitFleetReady, type InterruptOptions, type Run } from "./harness.js";

const fast = fleetNames("cr-", 30);
const slow = fleetNames("cs-", 12);
const solo = fast[fast.length - 1]!;
const base = { github: { host: "api.github.com" } };

let stack: LocalStack;
let dir: string;
let stateHome: string;

function cli(args: readonly string[], options: InterruptOptions = {}): Promise<Run> {
  const env = { PATH: process.env.PATH, HOME: join(dir, "home"), XDG_STATE_HOME: stateHome, OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: stack.adminToken };
  return runBinary(args, dir, env, options);
}

/** The saved rollout states' file names. */
function savedRollouts(): string[] {
  try {
    return readdirSync(join(stateHome, "openshell-config", "rollouts")).filter((n) => n.endsWith(".json"));
  } catch {
    return [];
  }
}

/** How many sandboxes a rollout saved since `earlier` says were sent with their operation; 0 before it is saved. */
function sentSince(earlier: readonly string[]): number {
  const fresh = savedRollouts().filter((n) => !earlier.includes(n));
  const sent = fresh.map((n) => {
    // The store replaces a state file by rename, so a read sees a whole state or none; a file
    // gone between the listing and the read (or not JSON) counts as nothing sent yet.
    try {
      const state = JSON.parse(readFileSync(join(stateHome, "openshell-config", "rollouts", n), "utf8")) as { refs?: Record<string, { operationId?: string }> };
      return Object.values(state.refs ?? {}).filter((ref) => typeof ref?.operationId === "string").length;
    } catch {
      return 0;
    }
  });
  return Math.max(0, ...sent);
}

function admin() {
  return createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
}

async function versions(selector: string): Promise<Map<string, number>> {
  const res = await admin().listSandboxes({ labelSelector: selector, pageSize: 1000, workspaceScope: workspaceScope() });
  return new Map(res.sandboxes.map((sb) => [sb.metadata!.name, sb.status!.desiredPolicyVersion]));
}

function file(name: string, rules: Record<string, { host: string; protocol?: string }>): string {
  const path = join(dir, name);
  writeFileSync(path, policyYaml({ ...base, ...rules }));
  return path;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openshell-cli-rollout-"));
  stateHome = join(dir, "state");
  mkdirSync(join(dir, "home"));
  const [started] = await Promise.all([startLocalStack({ sandboxes: [...fast, ...slow] }), build()]);
  stack = started;
  const raw = admin();
  // The filesystem part of a policy is fixed at creation: the same as policyYaml's.
  const policy = { version: 1, filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] }, networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] } } };
  // The last fast sandbox is also the only one labelled solo=yes: a rollout to one sandbox.
  for (const name of fast) await raw.createSandbox({ name, labels: { env: "prod", speed: "fast", ...(name === solo ? { solo: "yes" } : {}) }, spec: { policy }, workspaceScope: workspaceScope() });
  for (const name of slow) await raw.createSandbox({ name, labels: { env: "prod", speed: "slow" }, spec: { policy }, workspaceScope: workspaceScope() });
  stack.startSupervisor({ fleet: { prefix: "cr-", count: fast.length } });
  stack.startSupervisor({ fleet: { prefix: "cs-", count: slow.length }, args: ["--apply-delay-ms", "600"] });
  await waitFleetReady((labelSelector) => raw.listSandboxes({ labelSelector, pageSize: 1000, workspaceScope: workspaceScope() }), "env=prod", fast.length + slow.length, stack.logFile);
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("openshell-config policy rollout", () => {
  it("applies a policy file to every sandbox the selector matches, exits 0 and prints a summary table", async () => {
    const before = await versions("speed=fast");
    const r = await cli(["policy", "rollout", "--selector", "speed=fast", "--file", file("npm.yaml", { npm: { host: "registry.npmjs.org" } }), "--concurrency", "8"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stderr).toMatch(/^rollout [0-9a-f-]{36}: 30 sandboxes \(speed=fast\)/m);
    // No progress bar: stderr is not a terminal.
    expect(r.stderr).not.toContain("\r");
    expect(r.stdout).toMatch(/^rollout [0-9a-f-]{36}: done, 30 sandboxes in (\d+ms|\d+\.\ds)$/m);
    expect(r.stdout).toMatch(/^STATE\s+OUTCOME\s+SANDBOXES$/m);
    expect(r.stdout).toMatch(/^applied\s+applied\s+30$/m);
    expect(r.stdout).toMatch(/^slowest: cr-\d{4} /m);
    expect(r.stdout + r.stderr).not.toContain("resume with");
    const after = await versions("speed=fast");
    for (const name of fast) expect(after.get(name), name).toBe(before.get(name)! + 1);
  }, 60_000);

  it("undoes a rollout without waves like any other: every sandbox back on the policy it had, exit 0, and status says rolled back (issue 30, item 7)", async () => {
    // What the sandboxes have before: a known policy, sent the same way.
    const known = file("known.yaml", { known: { host: "known.example.com" } });
    expect((await cli(["policy", "rollout", "--selector", "speed=fast", "--file", known])).code).toBe(0);
    const before = await versions("speed=fast");
    const r = await cli(["policy", "rollout", "--selector", "speed=fast", "--file", file("undo-me.yaml", { undone: { host: "undone.example.com" } })]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const id = /^rollout ([0-9a-f-]{36}): /m.exec(r.stderr)![1]!;
    const undo = await cli(["policy", "rollout", "undo", id]);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    expect(undo.stdout).toMatch(new RegExp(`^rollout ${id}: rolled back, 30 sandboxes in `, "m"));
    expect(undo.stdout).toMatch(/^rolled back 30 of 30 changed sandboxes$/m);
    expect(undo.stdout + undo.stderr).not.toMatch(/no before-state|failed/);
    // Back on what they had, as a new revision each (nothing is deleted from the history).
    const after = await versions("speed=fast");
    for (const name of fast) expect(after.get(name), name).toBe(before.get(name)! + 2);
    const policy = await admin().getSandboxPolicyStatus({ sandbox: fast[0]!, version: 0, workspaceScope: workspaceScope() });
    const was = await admin().getSandboxPolicyStatus({ sandbox: fast[0]!, version: before.get(fast[0]!)!, workspaceScope: workspaceScope() });
    expect(policy.revision?.policyHash).toBe(was.revision?.policyHash);
    const status = await cli(["policy", "rollout", "status", id]);
    expect(status.stdout).toMatch(new RegExp(`^rollout ${id}\nstatus: rolled back`, "m"));
    // The policy they had, sent again after the undo, is identical to what they run: no new
    // revision, whatever annotations the rollback's revision carries (issue 30, item 14).
    const again = await cli(["policy", "set", "--sandbox", fast[0]!, "--file", known, "--wait"]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/: applied \(the sandbox already ran an identical configuration\)$/m);
    expect((await versions("speed=fast")).get(fast[0]!)).toBe(after.get(fast[0]!));
  }, 90_000);

  it("undoes a rollout without waves to one sandbox: the first line and the rollback line agree, in the singular, exit 0, status rolled back (issue 30, items 7 and 9)", async () => {
    const before = (await versions("solo=yes")).get(solo)!;
    const r = await cli(["policy", "rollout", "--selector", "solo=yes", "--file", file("solo.yaml", { solo: { host: "solo.example.com" } })]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^rollout [0-9a-f-]{36}: done, 1 sandbox in (\d+ms|\d+\.\ds)$/m);
    expect(r.stdout).toMatch(new RegExp(`^slowest: ${solo} (\\d+ms|\\d+\\.\\ds)$`, "m"));
    const id = /^rollout ([0-9a-f-]{36}): /m.exec(r.stderr)![1]!;
    const undo = await cli(["policy", "rollout", "undo", id]);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    expect(undo.stdout).toMatch(new RegExp(`^rollout ${id}: rolled back, 1 sandbox in (\\d+ms|\\d+\\.\\ds)$`, "m"));
    expect(undo.stdout).toMatch(/^rolled back 1 of 1 changed sandbox$/m);
    expect(undo.stdout + undo.stderr).not.toMatch(/no before-state|failed|0\.0s|1 sandboxes/);
    // Back on the policy it had, as a new revision.
    expect((await versions("solo=yes")).get(solo)).toBe(before + 2);
    const now = await admin().getSandboxPolicyStatus({ sandbox: solo, version: 0, workspaceScope: workspaceScope() });
    const was = await admin().getSandboxPolicyStatus({ sandbox: solo, version: before, workspaceScope: workspaceScope() });
    expect(now.revision?.policyHash).toBe(was.revision?.policyHash);
    const status = await cli(["policy", "rollout", "status", id]);
    expect(status.stdout).toMatch(new RegExp(`^rollout ${id}\nstatus: rolled back\n1 sandbox \\(solo=yes\\), 1 sent$`, "m"));
  }, 60_000);

  it("halts after --max-failures rejected sandboxes, lists them and exits 1", async () => {
    const before = await versions("speed=fast");
    const r = await cli(["policy", "rollout", "-l", "speed=fast", "-f", file("ftp.yaml", { files: { host: "files.example.com", protocol: "ftp" } }), "--max-failures", "2", "--concurrency", "1", "-o", "json"]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/warning: 2 sandboxes failed \(--max-failures 2\): no further sandbox is sent/);
    const doc = JSON.parse(r.stdout) as { halted: boolean; failures: number; counts: { byStatus: Record<string, number> }; sandboxes: { sandbox: string; state: string; error: string | null }[]; resume: string };
    expect(doc).toMatchObject({ halted: true, failures: 2, counts: { byStatus: { completed: 2, skipped: 28 } } });
    expect(doc.sandboxes.filter((s) => s.state === "failed").map((s) => s.error)).toEqual([
      expect.stringContaining('protocol "ftp" is not supported'),
      expect.stringContaining('protocol "ftp" is not supported'),
    ]);
    // It repeats the output format asked for.
    expect(doc.resume).toMatch(/^openshell-config policy rollout resume [0-9a-f-]{36} -o json$/);
    const after = await versions("speed=fast");
    const changed = fast.filter((n) => after.get(n) !== before.get(n));
    expect(changed).toHaveLength(2);
  }, 60_000);

  it("resumes an interrupted rollout in a new process with --resume, without a second revision for any sandbox", async () => {
    const before = await versions("speed=slow");
    const policyFile = file("pypi.yaml", { pypi: { host: "pypi.org" } });
    // Interrupted once its saved state holds a sent sandbox: with two in flight and 600 ms per apply,
    // the others are not sent yet, however fast the machine (a fixed delay was not: some runs sent all 12).
    const earlier = savedRollouts();
    const first = await cli(["policy", "rollout", "--selector", "speed=slow", "--file", policyFile, "--concurrency", "2"], { interruptWhen: () => sentSince(earlier) > 0 });
    expect(first.code, first.stderr).toBe(130);
    const id = /rollout ([0-9a-f-]{36}): interrupted/.exec(first.stdout)?.[1];
    expect(id, first.stdout).toBeDefined();
    // The resume command once, on stderr; stdout holds the summary.
    expect(first.stderr).toMatch(new RegExp(`^resume with: openshell-config policy rollout resume ${id}$`, "m"));
    expect(first.stdout).not.toContain("resume with");
    // Every sandbox left pending keeps its operation id, and OUTCOME is not a wait reason.
    const pendingRows = first.stdout.split("\n").filter((l) => /^cs-\d{4}\s+pending\s/.test(l));
    expect(pendingRows.length, first.stdout).toBeGreaterThan(0);
    for (const row of pendingRows) expect(row).toMatch(/^cs-\d{4}\s+pending\s+-\s+interrupted; operation [0-9a-f-]{36}$/);
    expect(first.stdout).not.toMatch(/^slowest: .*cs-\d{4} 0\.0s/m);
    const state = JSON.parse(readFileSync(join(stateHome, "openshell-config", "rollouts", `${id}.json`), "utf8")) as { sandboxes: string[]; refs: Record<string, unknown> };
    expect(state.sandboxes).toEqual(slow);
    expect(Object.keys(state.refs).length).toBeGreaterThan(0);
    expect(Object.keys(state.refs).length).toBeLessThan(slow.length);
    for (const row of pendingRows) {
      const [sandbox, , , , , operationId] = row.split(/\s+/);
      expect((state.refs[sandbox!] as { operationId?: string }).operationId, sandbox).toBe(operationId);
    }

    const second = await cli(["policy", "rollout", "--resume", id!]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr).toMatch(new RegExp(`rollout ${id}: 12 sandboxes \\(speed=slow\\), \\d+ sent before`));
    expect(second.stdout).toMatch(/^applied\s+applied\s+12$/m);
    const after = await versions("speed=slow");
    for (const name of slow) expect(after.get(name), name).toBe(before.get(name)! + 1);
  }, 60_000);

  it("a rollout whose waits time out exits 124: pending rows with their operation ids, no slowest of unfinished sandboxes, a resume command without a --timeout as short as 100ms", async () => {
    // The slow fleet takes 600 ms per apply: a 100 ms wait ends first.
    const r = await cli(["policy", "rollout", "-l", "speed=slow", "-f", file("conda.yaml", { conda: { host: "conda.anaconda.org" } }), "--timeout", "100ms", "-o", "json"]);
    expect(r.code, r.stderr).toBe(124);
    const doc = JSON.parse(r.stdout) as { id: string; resume: string; slowest: unknown[]; sandboxes: { sandbox: string; state: string; outcome: string | null; reason: string | null; operationId: string | null }[] };
    expect(doc.sandboxes).toHaveLength(slow.length);
    for (const s of doc.sandboxes) expect(s, s.sandbox).toMatchObject({ state: "pending", outcome: null, reason: "deadline", operationId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(doc.slowest).toEqual([]);
    expect(doc.resume).toBe(`openshell-config policy rollout resume ${doc.id} -o json`);
    expect(r.stderr).toContain(`resume with: ${doc.resume}\n`);
  }, 60_000);

  it("exits 1 when the selector matches no sandbox, sending nothing", async () => {
    const r = await cli(["policy", "rollout", "--selector", "team=nobody", "--file", file("none.yaml", {})]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("error: no sandboxes match team=nobody: nothing was sent");
  }, 30_000);

  it("refuses --resume of an unknown rollout without a policy file, and a rollout without --selector, as usage errors (exit 2)", async () => {
    const unknown = await cli(["policy", "rollout", "--resume", "no-such-rollout"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/error: no saved state for rollout no-such-rollout/);
    const missing = await cli(["policy", "rollout", "--file", "x.yaml"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/error: policy rollout needs --selector/);
  }, 30_000);
});
