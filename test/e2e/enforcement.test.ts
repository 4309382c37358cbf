// What each sandbox enforces, told truthfully across restarts. A policy the supervisor rejects
// leaves the last known good in force; then the gateway and the supervisor both restart on the
// same state, the supervisor re-bootstraps with the rejected desired policy, has no last known
// good any more and fails closed. Every surface must say so: GetSandboxPolicyStatus's
// active_version, GetSandbox's current_policy_version and enforcement record, and the SDK's
// getConfig with its drift, and the built command line (`policy get`, `sandbox list`, as text and
// JSON). A corrected policy then brings the sandbox back in sync.
//
// beforeAll runs `npm run build` (for the CLI) unless dist/ is newer than every source.

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PolicyEnforcementState, SandboxPhase, workspaceScope } from "openshell-config/raw";
import { build, runBinary, type Run } from "../cli/harness.js";
import { policy, startE2EStack, until, type E2EStack, type StackProcess } from "./stack.js";

const sandbox = "truth-dev";
const base = { github: { host: "api.github.com" } };
/** Valid for the gateway, rejected by the supervisor (it supports no "ftp" endpoints). */
const rejected = policy({ ...base, files: { host: "files.example.com", protocol: "ftp" } });

const scope = workspaceScope();
const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/;

let stack: E2EStack;
let supervisor: StackProcess;
let cliDir: string;

/** The built `openshell-config` binary against the stack, as a user runs it. */
function cli(...args: string[]): Promise<Run> {
  return runBinary(args, cliDir, { PATH: process.env.PATH, HOME: join(cliDir, "home"), OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: stack.adminToken });
}

/** The cells of the sandbox's `sandbox list` row. */
const listRow = (stdout: string) =>
  stdout
    .trimEnd()
    .split("\n")
    .map((l) => l.split(/\s+/))
    .find((cells) => cells[0] === sandbox);

interface ListedJson {
  readonly name: string;
  readonly phase: string;
  readonly policyVersion: number;
  readonly desiredPolicyVersion: number | null;
  readonly enforced: { readonly state: string; readonly policyVersion: number | null; readonly reason: string | null };
  readonly drift: string[] | null;
}

beforeAll(async () => {
  cliDir = mkdtempSync(join(tmpdir(), "openshell-e2e-cli-"));
  mkdirSync(join(cliDir, "home"));
  const [started] = await Promise.all([startE2EStack({ sandboxes: [sandbox] }), build()]);
  stack = started;
  await stack.createSandbox(sandbox, policy(base));
  supervisor = stack.startSupervisor({ sandbox });
  await stack.waitPhase(sandbox, SandboxPhase.READY, 30_000);
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  if (cliDir) rmSync(cliDir, { recursive: true, force: true });
});

describe("what a sandbox enforces", () => {
  it("a fresh sandbox enforces its create-time policy on every surface once its bootstrap is applied", async () => {
    const cfg = await until(async () => {
      const c = await stack.client.getConfig({ sandbox });
      return c.enforced.state === "enforcing" && c;
    }, "the bootstrap to be recorded");
    expect(cfg.enforced).toMatchObject({ state: "enforcing", policyVersion: 1, source: "gateway-record", degraded: false });
    expect(cfg.enforced.observedAt).toBeInstanceOf(Date);
    expect(cfg.drift).toEqual([]);
    const sb = (await stack.raw.getSandbox({ name: sandbox, workspaceScope: scope })).sandbox!;
    expect(sb.status).toMatchObject({ currentPolicyVersion: 1, desiredPolicyVersion: 1 });
    expect((await stack.raw.getSandboxPolicyStatus({ sandbox, workspaceScope: scope })).activeVersion).toBe(1);
  });

  it("a rejected update keeps the last known good in force, and the drift names it", async () => {
    const res = await stack.client.updatePolicy({ sandbox, policy: rejected, wait: { timeoutMs: 15_000 } });
    expect(res.policyVersion).toBe(2);
    expect(res.completion).toMatchObject({ state: "failed", outcome: "failed-retained-last-known-good" });
    const cfg = await stack.client.getConfig({ sandbox });
    expect(cfg.desired.policyVersion).toBe(2);
    expect(cfg.latestRevision).toMatchObject({ version: 2, status: "failed" });
    expect(cfg.enforced).toMatchObject({ state: "enforcing", policyVersion: 1, reportedPolicyVersion: 2, outcome: "failed-retained-last-known-good" });
    expect(cfg.enforced.reason).toContain("ftp");
    expect(cfg.drift).toEqual(["behind", "last-update-failed"]);
    expect((await stack.raw.getSandboxPolicyStatus({ sandbox, workspaceScope: scope })).activeVersion).toBe(1);
    expect((await stack.raw.getSandbox({ name: sandbox, workspaceScope: scope })).sandbox!.status).toMatchObject({ currentPolicyVersion: 1, desiredPolicyVersion: 2 });
  });

  it("after the gateway and the supervisor restart, a sandbox that fails closed is reported failing closed, not running an old version", async () => {
    await supervisor.kill("SIGTERM");
    await stack.restartGateway("SIGTERM");
    supervisor = stack.startSupervisor({ sandbox });
    // The supervisor re-bootstraps with the rejected desired policy and has no last known good.
    const cfg = await until(async () => {
      const c = await stack.client.getConfig({ sandbox });
      return c.enforced.state === "failed-closed" && c;
    }, "the fail-closed bootstrap to be recorded", 30_000);
    expect(cfg.enforced).toMatchObject({ state: "failed-closed", reportedPolicyVersion: 2, outcome: "failed-closed", source: "gateway-record" });
    expect(cfg.enforced.reason).toContain("ftp");
    expect(cfg.drift).toEqual(["failed-closed", "last-update-failed"]);
    expect(stack.effective(sandbox)?.source).toBe("deny_all");

    const status = await stack.raw.getSandboxPolicyStatus({ sandbox, workspaceScope: scope });
    expect(status.activeVersion).toBe(0);
    expect(status.enforcement?.state).toBe(PolicyEnforcementState.FAILED_CLOSED);
    const sb = (await stack.raw.getSandbox({ name: sandbox, workspaceScope: scope })).sandbox!;
    expect(sb.status).toMatchObject({ currentPolicyVersion: 0, desiredPolicyVersion: 2 });
    expect(sb.status?.policyEnforcement?.state).toBe(PolicyEnforcementState.FAILED_CLOSED);
    const listed = (await stack.raw.listSandboxes({ workspaceScope: scope })).sandboxes.find((s) => s.metadata?.name === sandbox);
    expect(listed?.status?.policyEnforcement?.state).toBe(PolicyEnforcementState.FAILED_CLOSED);
  });

  it("at that point the command line says the sandbox fails closed and denies all, and claims it runs neither v1 nor v2", async () => {
    const get = await cli("policy", "get", "--sandbox", sandbox);
    expect(get.code, get.stderr).toBe(0);
    expect(get.stderr).toBe("");
    expect(get.stdout).toMatch(/^desired +v2 \(failed: .*ftp.*\)$/m);
    expect(get.stdout).toMatch(new RegExp(`^enforced +fails closed \\(deny all\\) since ${ISO.source}: .*ftp`, "m"));
    expect(get.stdout).toMatch(/^drift +failed-closed, last-update-failed$/m);
    expect(get.stdout).not.toMatch(/^enforced +v/m);
    expect(get.stdout).not.toMatch(/\bv1\b|still runs|active version/);

    const getJson = await cli("policy", "get", "--sandbox", sandbox, "-o", "json");
    expect(getJson.code, getJson.stderr).toBe(0);
    const doc = JSON.parse(getJson.stdout) as { enforced: { reason: string; observedAt: string } };
    expect(doc).toMatchObject({
      sandbox,
      version: 2,
      status: "failed",
      activeVersion: 0,
      enforced: { state: "failed-closed", policyVersion: null, reportedPolicyVersion: 2, outcome: "failed-closed", source: "gateway-record" },
      drift: ["failed-closed", "last-update-failed"],
    });
    expect(doc.enforced.reason).toContain("ftp");
    expect(doc.enforced.observedAt).toMatch(ISO);

    const list = await cli("sandbox", "list");
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout.split("\n")[0]).toMatch(/^NAME +PHASE +DESIRED +ENFORCED +DRIFT +AGE +LABELS$/);
    const row = listRow(list.stdout);
    expect(row?.slice(2, 5), list.stdout).toEqual(["v2", "deny-all", "failed-closed,last-update-failed"]);
    expect(row).not.toContain("v1");

    const listJson = await cli("sandbox", "list", "-o", "json");
    expect(listJson.code, listJson.stderr).toBe(0);
    const entry = (JSON.parse(listJson.stdout) as { sandboxes: ListedJson[] }).sandboxes.find((s) => s.name === sandbox);
    expect(entry).toMatchObject({
      desiredPolicyVersion: 2,
      policyVersion: 0,
      enforced: { state: "failed-closed", policyVersion: null },
      drift: ["failed-closed", "last-update-failed"],
    });
    expect(entry?.enforced.reason).toContain("ftp");
  }, 30_000);

  it("the record survives another gateway restart with the supervisor still failing closed", async () => {
    await stack.restartGateway("SIGKILL");
    const cfg = await stack.client.getConfig({ sandbox });
    expect(cfg.enforced.state).toBe("failed-closed");
  });

  it("a corrected policy brings the sandbox back to enforcing exactly the desired revision", async () => {
    const res = await stack.client.updatePolicy({ sandbox, policy: policy({ ...base, npm: { host: "registry.npmjs.org" } }), wait: { timeoutMs: 15_000 } });
    expect(res.completion).toMatchObject({ state: "applied" });
    const cfg = await stack.client.getConfig({ sandbox });
    expect(cfg.enforced).toMatchObject({ state: "enforcing", policyVersion: res.policyVersion, reason: undefined });
    expect(cfg.enforced.state === "enforcing" && cfg.enforced.policyHash).toBe(cfg.desired.policyHash);
    expect(cfg.drift).toEqual([]);
    expect((await stack.raw.getSandboxPolicyStatus({ sandbox, workspaceScope: scope })).activeVersion).toBe(res.policyVersion);

    // The command line agrees: enforced is the desired version, no drift.
    const get = await cli("policy", "get", "--sandbox", sandbox);
    expect(get.code, get.stderr).toBe(0);
    expect(get.stdout).toMatch(new RegExp(`^desired +v${res.policyVersion}$`, "m"));
    expect(get.stdout).toMatch(new RegExp(`^enforced +v${res.policyVersion}$`, "m"));
    expect(get.stdout).not.toMatch(/^drift/m);
    const list = await cli("sandbox", "list");
    expect(listRow(list.stdout)?.slice(2, 5)).toEqual([`v${res.policyVersion}`, `v${res.policyVersion}`, "-"]);
  }, 30_000);

  it("a settings change that the invalid desired policy fails says so and names the policy version", async () => {
    const bad = await stack.client.updatePolicy({ sandbox, policy: rejected, wait: { timeoutMs: 15_000 } });
    expect(bad.completion.state).toBe("failed");
    const res = await stack.client.updateSettings({ sandbox, key: "log_level", value: "debug", wait: { timeoutMs: 15_000 } });
    expect(res.completion.state).toBe("failed");
    expect(res.completion.state === "failed" && res.completion.error).toMatch(new RegExp(`policy v${bad.policyVersion} is invalid`));
  });
});
