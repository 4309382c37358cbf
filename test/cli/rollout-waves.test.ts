// `policy rollout --waves …` and `policy rollout resume|undo|status ID` as a built binary against
// real processes: a gateway on SQLite and one supervisor process hosting a fleet of 12 sandboxes.
// Each CLI call is its own process, so a paused rollout is approved by another process from the
// state file alone. Checks exit statuses, the summary, the JSON, and the revisions each sandbox
// got (one per rollout, one per rollback).

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { fleetNames, startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { build, policyYaml, runBinary, waitFleetReady, type Run } from "./harness.js";

const fleet = fleetNames("wv-", 12);
const base = { github: { host: "api.github.com" } };
const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

let stack: LocalStack;
let dir: string;
let files = 0;

function cli(args: readonly string[]): Promise<Run> {
  const env = { PATH: process.env.PATH, HOME: join(dir, "home"), XDG_STATE_HOME: join(dir, "state"), OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: stack.adminToken };
  return runBinary(args, dir, env);
}

function admin() {
  return createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
}

async function versions(): Promise<Map<string, number>> {
  const res = await admin().listSandboxes({ labelSelector: "fleet=waves", pageSize: 1000, workspaceScope: workspaceScope() });
  return new Map(res.sandboxes.map((sb) => [sb.metadata!.name, sb.status!.desiredPolicyVersion]));
}

/** A policy file with one more rule than any before (each rollout a new revision); `ftp` makes every sandbox reject it. */
function file(ftp = false): string {
  const path = join(dir, `p${++files}.yaml`);
  writeFileSync(path, policyYaml({ ...base, [`r${files}`]: { host: `r${files}.example.com`, ...(ftp ? { protocol: "ftp" } : {}) } }));
  return path;
}

interface Doc {
  id: string;
  phase: string;
  resume: string | null;
  undo: string | null;
  waves: { index: number; name: string; sandboxes: number; gate: string; failures: number }[];
  gateFailure: { wave: number; reason: string } | null;
  rollback: { rolledBack: number; leftAlone: unknown[]; failed: unknown[]; pending: unknown[] } | null;
  sandboxes: { sandbox: string; wave: number; status: string; state: string; rollback: { status: string; state?: string } | null }[];
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openshell-cli-waves-"));
  mkdirSync(join(dir, "home"));
  const [started] = await Promise.all([startLocalStack({ sandboxes: fleet }), build()]);
  stack = started;
  const raw = admin();
  const policy = { version: 1, filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] }, networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] } } };
  for (const name of fleet) await raw.createSandbox({ name, labels: { fleet: "waves" }, spec: { policy }, workspaceScope: workspaceScope() });
  stack.startSupervisor({ fleet: { prefix: "wv-", count: fleet.length } });
  await waitFleetReady((labelSelector) => raw.listSandboxes({ labelSelector, pageSize: 1000, workspaceScope: workspaceScope() }), "fleet=waves", fleet.length, stack.logFile);
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("policy rollout --waves", () => {
  it("sends three waves of the planned sizes, one line per wave on stderr, a per-wave summary on stdout, exit 0", async () => {
    const before = await versions();
    const r = await cli(["policy", "rollout", "-l", "fleet=waves", "-f", file(), "--waves", "1,50%,100%"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const id = new RegExp(`^rollout (${UUID}): 12 sandboxes \\(fleet=waves\\)$`, "m").exec(r.stderr)?.[1];
    expect(id, r.stderr).toBeDefined();
    // Plain lines as the waves go (stderr is a pipe): no redraws.
    expect(r.stderr).not.toContain("\r");
    expect(r.stderr).toMatch(/^wave 1\/3  canary: sending to 1 sandbox$/m);
    expect(r.stderr).toMatch(/^wave 1\/3  canary  1\/1 applied  gate passed$/m);
    expect(r.stderr).toMatch(/^wave 2\/3  50%     5\/5 applied  gate passed$/m);
    expect(r.stderr).toMatch(/^wave 3\/3  100%    6\/6 applied  gate passed$/m);
    expect(r.stdout).toMatch(new RegExp(`^rollout ${id}: done, 12 sandboxes in (\\d+ms|\\d+\\.\\ds)$`, "m"));
    expect(r.stdout).toMatch(/^WAVE\s+SANDBOXES\s+APPLIED\s+FAILED\s+NOT SENT\s+GATE$/m);
    expect(r.stdout).toMatch(/^1 canary\s+1\s+1\s+0\s+0\s+passed$/m);
    expect(r.stdout).toMatch(/^2 50%\s+5\s+5\s+0\s+0\s+passed$/m);
    expect(r.stdout).toMatch(/^3 100%\s+6\s+6\s+0\s+0\s+passed$/m);
    // Nothing to resume or undo.
    expect(r.stderr).not.toMatch(/resume with|undo with/);
    const after = await versions();
    for (const name of fleet) expect(after.get(name), name).toBe(before.get(name)! + 1);
  }, 90_000);

  it("a failing canary with --rollback-on-failure: gate failed, the canary rolled back, later waves never sent, exit 1", async () => {
    const before = await versions();
    const r = await cli(["policy", "rollout", "-l", "fleet=waves", "-f", file(true), "--waves", "1,50%,100%", "--rollback-on-failure", "-o", "json"]);
    expect(r.code, r.stderr).toBe(1);
    const doc = JSON.parse(r.stdout) as Doc;
    expect(doc.phase).toBe("rolled-back");
    expect(doc.gateFailure).toEqual({ wave: 0, reason: "wave 1 (canary): 1 of 1 failed, limit 1" });
    expect(doc.waves.map((w) => w.gate)).toEqual(["failed", "not-reached", "not-reached"]);
    expect(doc.rollback).toEqual({ rolledBack: 1, leftAlone: [], failed: [], pending: [] });
    expect(doc.resume).toBeNull();
    expect(doc.undo).toBeNull();
    expect(r.stderr).toMatch(/^wave 1\/3  canary  0\/1 applied  1 failed  gate failed \(1 of 1 failed, limit 1\)$/m);
    expect(r.stderr).toMatch(/^rolling back 1 sandbox: wave 1 \(canary\): 1 of 1 failed, limit 1$/m);
    const canary = doc.sandboxes.find((s) => s.wave === 0)!;
    expect(canary).toMatchObject({ state: "failed", rollback: { status: "completed", state: "applied" } });
    expect(doc.sandboxes.filter((s) => s.wave > 0).every((s) => s.status === "skipped")).toBe(true);
    // The canary got the rejected revision and its rollback; nobody else anything.
    const after = await versions();
    for (const name of fleet) expect(after.get(name), name).toBe(before.get(name)! + (name === canary.sandbox ? 2 : 0));

    // The same as a table: the gate failure and the rollback in words.
    const table = await cli(["policy", "rollout", "-l", "fleet=waves", "-f", file(true), "--waves", "1,100%", "--rollback-on-failure"]);
    expect(table.code).toBe(1);
    expect(table.stdout).toMatch(/^rollout \S+: rolled back, 12 sandboxes in /m);
    expect(table.stdout).toMatch(/^gate failed: wave 1 \(canary\): 1 of 1 failed, limit 1$/m);
    expect(table.stdout).toMatch(/^rolled back 1 of 1 changed sandbox$/m);
  }, 90_000);

  it("--pause-for-approval exits 3 after the canary; resume ID in another process approves it; status -o json and undo ID then roll everything back", async () => {
    const before = await versions();
    const first = await cli(["policy", "rollout", "-l", "fleet=waves", "-f", file(), "--waves", "1,100%", "--pause-for-approval"]);
    expect(first.code, first.stdout + first.stderr).toBe(3);
    const id = new RegExp(`^rollout (${UUID}): paused, 12 sandboxes in (\\d+ms|\\d+\\.\\ds)$`, "m").exec(first.stdout)?.[1];
    expect(id, first.stdout).toBeDefined();
    expect(first.stderr).toMatch(/^paused after wave 1\/2: waiting for approval$/m);
    expect(first.stderr).toContain(`approve the next wave with: openshell-config policy rollout resume ${id}\n`);
    expect(first.stderr).toContain(`undo with: openshell-config policy rollout undo ${id}\n`);
    const paused = await versions();
    expect(fleet.filter((n) => paused.get(n) !== before.get(n))).toHaveLength(1);

    const status = await cli(["policy", "rollout", "status", id!, "-o", "json"]);
    expect(status.code, status.stderr).toBe(0);
    const s = JSON.parse(status.stdout) as { phase: string; status: string; sent: number; waves: { gate: string; applied: number }[]; sandboxes: { sent: boolean; state: string }[]; resume: string; undo: string };
    expect(s).toMatchObject({ phase: "paused", status: "paused after wave 1/2, waiting for approval", sent: 1, resume: `openshell-config policy rollout resume ${id} -o json`, undo: `openshell-config policy rollout undo ${id} -o json` });
    expect(s.waves.map((w) => [w.gate, w.applied])).toEqual([["passed", 1], ["not reached", 0]]);
    expect(s.sandboxes.filter((x) => x.sent).map((x) => x.state)).toEqual(["applied"]);

    const approved = await cli(["policy", "rollout", "resume", id!]);
    expect(approved.code, approved.stdout + approved.stderr).toBe(0);
    expect(approved.stderr).toMatch(new RegExp(`^rollout ${id}: 12 sandboxes \\(fleet=waves\\), 1 sent before$`, "m"));
    expect(approved.stdout).toMatch(new RegExp(`^rollout ${id}: done, 12 sandboxes in `, "m"));
    const done = await versions();
    for (const name of fleet) expect(done.get(name), name).toBe(before.get(name)! + 1);

    const table = await cli(["policy", "rollout", "status", id!]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`^rollout ${id}\nstatus: done$`, "m"));
    expect(table.stdout).toMatch(/^1 canary\s+1\s+1\s+1\s+0\s+0\s+passed$/m);
    expect(table.stdout).toMatch(/^2 100%\s+11\s+11\s+11\s+0\s+0\s+passed$/m);
    expect(table.stdout).toContain(`undo with:\n  openshell-config policy rollout undo ${id}\n`);

    const undo = await cli(["policy", "rollout", "undo", id!]);
    expect(undo.code, undo.stdout + undo.stderr).toBe(0);
    expect(undo.stderr).toMatch(/^rolling back 12 sandboxes: undo requested$/m);
    expect(undo.stdout).toMatch(new RegExp(`^rollout ${id}: rolled back, 12 sandboxes in `, "m"));
    expect(undo.stdout).toMatch(/^rolled back 12 of 12 changed sandboxes$/m);
    const undone = await versions();
    for (const name of fleet) expect(undone.get(name), name).toBe(before.get(name)! + 2);
    // Again: it replays, no new revision.
    const again = await cli(["policy", "rollout", "undo", id!, "-o", "json"]);
    expect(again.code).toBe(0);
    expect((JSON.parse(again.stdout) as Doc).rollback).toMatchObject({ rolledBack: 12 });
    expect(await versions()).toEqual(undone);
    const after = JSON.parse((await cli(["policy", "rollout", "status", id!, "-o", "json"])).stdout) as { status: string; undo: string | null; sandboxes: { rollback: { state: string } | null }[] };
    expect(after.status).toBe("rolled back");
    expect(after.undo).toBeNull();
    expect(after.sandboxes.every((x) => x.rollback?.state === "applied")).toBe(true);
  }, 120_000);

  it("status -w of a finished rollout prints it once and exits 0; unknown ids and bad flags are one-line usage errors", async () => {
    const r = await cli(["policy", "rollout", "-l", "fleet=waves", "-f", file(), "--waves", "2,100%", "-o", "json"]);
    expect(r.code, r.stderr).toBe(0);
    const { id } = JSON.parse(r.stdout) as Doc;
    const watched = await cli(["policy", "rollout", "status", id, "-w"]);
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout.match(/^rollout /gm)).toHaveLength(1);
    for (const args of [["status", "nope"], ["resume", "nope"], ["undo", "nope"]]) {
      const u = await cli(["policy", "rollout", ...args]);
      expect(u.code).toBe(2);
      expect(u.stderr.split("\n")[0]).toMatch(/^error: no saved state for rollout nope in /);
    }
    const bad = await cli(["policy", "rollout", "-l", "fleet=waves", "-f", file(), "--waves", "1,100%", "--pause", "5m", "--pause-for-approval"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.split("\n")[0]).toBe("error: --pause and --pause-for-approval are mutually exclusive");
  }, 60_000);
});
