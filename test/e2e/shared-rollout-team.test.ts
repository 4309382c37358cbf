// Two operators and a dashboard share one rollout through the gateway's record (issue 31's test):
// two CLI processes and one dashboard on one gateway. Alice's CLI starts a three-wave rollout
// paused for approval; Bob's CLI, on a machine of its own (its own HOME, config and state
// directories: no state file of Alice's), lists it, approves it wave by wave and sees it finish;
// a dashboard page signed in as Carol (a third admin) shows each step within 2 s of the CLI that
// made it, and each step is saved as test-results/shared-rollout-team-<step>.png. The gateway's
// desired policy versions show exactly one revision per sandbox.
//
// Real processes throughout: a gateway on SQLite and one supervisor process for four sandboxes
// (examples/local-stack.ts), the built CLI (dist/, built when stale), Vite and Chromium. afterAll
// stops all of them and checks that none is left.

import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { fleetNames, startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { build, policyYaml, waitFleetReady, type Run } from "../cli/harness.js";
import { killMachines, machine, panelRow, rowTexts, shot, startDashboard, type Dashboard, type Machine } from "./shared-rollout-team-support.js";

/** Four sandboxes: waves 1,2,100% are three waves of 1, 1 and 2. */
const FLEET = fleetNames("team-", 4);
const TOKENS = { alice: `alice-${"a".repeat(24)}`, bob: `bob-${"b".repeat(24)}`, carol: `carol-${"c".repeat(24)}` };
/** How soon after a CLI's exit the dashboard must show what it did. */
const STEP_MS = 2_000;
/** Generous for everything else: a loaded 2-core machine runs the gateway, a fleet, Vite, Chromium and the CLIs. */
const WAIT = 20_000;
const BASE_POLICY = {
  version: 1,
  filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] },
  networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] } },
};

let dir: string | undefined;
let stack: LocalStack | undefined;
let dashboard: Dashboard | undefined;
let page: Page;
let alice: Machine;
let bob: Machine;
const pageErrors: string[] = [];

async function versions(): Promise<number[]> {
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack!.url }), token: stack!.adminToken }).raw(OpenShell);
  const res = await raw.listSandboxes({ labelSelector: "team=ops", pageSize: 100, workspaceScope: workspaceScope() });
  const byName = new Map(res.sandboxes.map((sb) => [sb.metadata!.name, sb.status!.desiredPolicyVersion]));
  return FLEET.map((n) => byName.get(n)!);
}

/** Revisions per sandbox since `before`. */
const revisionsSince = async (before: readonly number[]) => (await versions()).map((v, i) => v - before[i]!);
const total = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

/** Waits (at most STEP_MS) until the panel's row of `id` matches `attrs`; how long that took after `since`. */
async function panelShows(id: string, attrs: string, since: number): Promise<number> {
  await panelRow(page, id, attrs).waitFor({ timeout: STEP_MS });
  return Date.now() - since;
}

const said = (r: Run) => `exit ${r.code}\n${r.stdout}${r.stderr}`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "shared-rollout-team-"));
  const stackDir = join(dir, "stack");
  mkdirSync(stackDir);
  // Three admins of the workspace beside the stack's own (stack-tokens.ts keeps entries it did not write).
  const tokens = (["alice", "bob", "carol"] as const).map((p) => ({ token: TOKENS[p], principal: p, role: "admin", workspaces: ["default"] }));
  writeFileSync(join(stackDir, "auth.json"), JSON.stringify({ tokens }), { mode: 0o600 });
  // The dashboard first: the gateway must allow its origin (CORS).
  const [started] = await Promise.all([startDashboard(WAIT, pageErrors), build()]);
  dashboard = started;
  stack = await startLocalStack({ sandboxes: FLEET, dir: stackDir, corsOrigins: [dashboard.origin] });
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
  for (const name of FLEET) await raw.createSandbox({ name, labels: { team: "ops" }, spec: { policy: BASE_POLICY }, workspaceScope: workspaceScope() });
  // Each apply takes 1.5 s, so a wave runs long enough for the dashboard to be seen showing it running.
  stack.startSupervisor({ fleet: { prefix: "team-", count: FLEET.length }, args: ["--apply-delay-ms", "1500"] });
  await waitFleetReady((labelSelector) => raw.listSandboxes({ labelSelector, pageSize: 100, workspaceScope: workspaceScope() }), "team=ops", FLEET.length, stack.logFile);
  alice = machine(dir, "alice", stack.url, TOKENS.alice);
  bob = machine(dir, "bob", stack.url, TOKENS.bob);
  page = await dashboard.signIn(stack.url, TOKENS.carol, FLEET[0]!);
}, 240_000);

afterAll(async () => {
  // A CLI still running here was left by a failed test: killed, not waited for.
  await killMachines();
  await Promise.allSettled([dashboard?.close(), stack?.stop()]);
  // eslint-disable-next-line no-console
  if (pageErrors.length > 0) console.log(`page errors: ${pageErrors.join("\n")}`);
  if (dir) rmSync(dir, { recursive: true, force: true });
  expect(dashboard?.leftRunning() ?? [], "Chromium processes left running").toEqual([]);
  for (const p of stack?.processes ?? []) expect(p.running, `${p.name} still running`).toBe(false);
}, 60_000);

describe("two CLI processes and one dashboard share a rollout on one gateway", () => {
  let before: number[] = [];
  let id = "";

  it("Alice's CLI starts a three-wave rollout paused for approval (exit 3, its id printed); the dashboard shows it paused for approval within 2 s", async () => {
    before = await versions();
    const file = join(dir!, "policy.yaml");
    writeFileSync(file, policyYaml({ github: { host: "api.github.com" }, internal: { host: "git.internal.example.com" } }));
    const started = await alice.run(["policy", "rollout", "--selector", "team=ops", "--file", file, "--waves", "1,2,100%", "--pause-for-approval"]);
    const exited = Date.now();
    expect(started.code, said(started)).toBe(3);
    id = /^rollout ([0-9a-f-]{36})\b/m.exec(started.stdout)?.[1] ?? "";
    expect(id, said(started)).not.toBe("");
    expect(started.stdout).toMatch(new RegExp(`^rollout ${id}: paused, 4 sandboxes in `, "m"));
    // The command that approves the next wave (resume of a rollout paused for approval is its approval).
    expect(started.stderr).toMatch(new RegExp(`^approve the next wave with: openshell-config policy rollout (approve|resume) ${id}$`, "m"));
    // Alice's machine keeps the state file; Bob's has none.
    expect(existsSync(join(alice.rollouts, `${id}.json`))).toBe(true);
    expect(existsSync(join(bob.rollouts, `${id}.json`))).toBe(false);
    expect(total(await revisionsSince(before))).toBe(1);

    expect(await panelShows(id, '[data-standing="awaiting-approval"]', exited)).toBeLessThanOrEqual(STEP_MS);
    await shot(page, "1-paused-by-alice");
    expect(await rowTexts(panelRow(page, id))).toEqual({
      standing: "paused for approval",
      waves: "waves 1/3",
      counts: "1 applied, 0 failed of 4 · 1 sent",
      creator: "by alice",
      driver: "no driver",
      approvals: "",
    });
  }, 60_000);

  it("Bob's CLI, without a state file of it, lists it: its short id, paused for approval, waves 1/3, by alice", async () => {
    const list = await bob.run(["policy", "rollout", "list"]);
    expect(list.code, said(list)).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+AGE\s+PHASE\s+WAVES\s+COUNTS\s+BY$/m);
    expect(list.stdout).toMatch(new RegExp(`^${id.slice(0, 8)}\\s+\\d+s\\s+paused \\(approval\\)\\s+1/3\\s+1/4 applied\\s+alice$`, "m"));
    expect(existsSync(join(bob.rollouts, `${id}.json`))).toBe(false);
  }, 30_000);

  it("Bob approves wave 2 by the short id: his CLI sends it and pauses again (exit 3); the dashboard shows waves 2/3 approved by bob within 2 s", async () => {
    const approved = await bob.run(["policy", "rollout", "approve", id.slice(0, 8)]);
    const exited = Date.now();
    expect(approved.code, said(approved)).toBe(3);
    expect(approved.stdout).toMatch(new RegExp(`^rollout ${id}: paused, 4 sandboxes in `, "m"));
    expect(total(await revisionsSince(before))).toBe(2);

    const waitingForWave3 = `[data-standing="awaiting-approval"]:has([data-testid="shared-waves"]:text-is("waves 2/3"))`;
    expect(await panelShows(id, waitingForWave3, exited)).toBeLessThanOrEqual(STEP_MS);
    await shot(page, "2-approved-wave-2-by-bob");
    const row = await rowTexts(panelRow(page, id));
    expect(row).toMatchObject({ standing: "paused for approval", waves: "waves 2/3", counts: "2 applied, 0 failed of 4 · 2 sent", creator: "by alice", driver: "no driver" });
    expect(row.approvals).toMatch(/^approved: wave 2 by bob at [^;]+$/);
  }, 60_000);

  it("Bob approves wave 3: the dashboard shows his CLI driving it, then done (3/3, waves 2 and 3 approved by bob) within 2 s of its exit 0", async () => {
    const approving = bob.run(["policy", "rollout", "approve", id]);
    // While the last wave's two sandboxes apply (1.5 s), Bob's CLI holds the record's lease.
    await panelRow(page, id, '[data-standing="running"]').waitFor({ timeout: WAIT });
    await shot(page, "3-wave-3-driven-by-bob");
    const running = await rowTexts(panelRow(page, id));
    expect(running.driver).toMatch(/^driven by cli \S+ pid \d+ \(bob\)$/);
    expect(running.approvals).toMatch(/; wave 3 by bob at [^;]+$/);

    const approved = await approving;
    const exited = Date.now();
    expect(approved.code, said(approved)).toBe(0);
    expect(approved.stdout).toMatch(new RegExp(`^rollout ${id}: done, 4 sandboxes in `, "m"));
    expect(await panelShows(id, '[data-standing="complete"]', exited)).toBeLessThanOrEqual(STEP_MS);
    await shot(page, "4-done");
    const row = await rowTexts(panelRow(page, id));
    expect(row).toMatchObject({ standing: "done", waves: "waves 3/3", counts: "4 applied, 0 failed of 4 · 4 sent", creator: "by alice", driver: "no driver" });
    expect(row.approvals).toMatch(/^approved: wave 2 by bob at [^;]+; wave 3 by bob at [^;]+$/);
  }, 60_000);

  it("Bob sees it finished: nothing left in progress, history lists it complete with two approvals, both bob's; the gateway gave each sandbox exactly one revision", async () => {
    const list = await bob.run(["policy", "rollout", "list"]);
    expect(list.code, said(list)).toBe(0);
    expect(list.stdout).not.toContain(id.slice(0, 8));
    const history = await bob.run(["policy", "rollout", "history"]);
    expect(history.code, said(history)).toBe(0);
    expect(history.stdout).toMatch(/^ID\s+AGE\s+RESULT\s+WAVES\s+COUNTS\s+APPROVALS\s+BY$/m);
    expect(history.stdout).toMatch(new RegExp(`^${id.slice(0, 8)}\\s+\\d+s\\s+complete\\s+3/3\\s+4/4 applied\\s+2\\s+alice$`, "m"));
    const json = JSON.parse((await bob.run(["policy", "rollout", "history", "-o", "json"])).stdout) as { rollouts: { id: string; result: string; createdBy: string; approvals: { wave: number; by: string }[] }[] };
    const record = json.rollouts.find((r) => r.id === id);
    expect(record).toMatchObject({ result: "complete", createdBy: "alice" });
    expect(record!.approvals.map((a) => a.by)).toEqual(["bob", "bob"]);
    const status = await bob.run(["policy", "rollout", "status", id]);
    expect(status.stdout).toMatch(/^wave 2 approved by bob /m);
    expect(status.stdout).toMatch(/^wave 3 approved by bob /m);

    expect(await revisionsSince(before)).toEqual([1, 1, 1, 1]);
  }, 60_000);
});
