// The review's scenario (issue 29, finding 2) with real processes: the gateway executable on a
// SQLite file, reference supervisors as child processes. A user who is not an admin deletes
// sandbox `b` and creates a new `b` with the whole filesystem writable, root and an egress rule
// to an attacker's host. The old `b`'s running supervisor must not adopt it: its reconnects are
// refused with the reason, it keeps enforcing what it had, and only a supervisor with a
// credential of its own serves the new instance, also after the gateway restarts.
//
// OSC_MEASURE=1 prints how long after the re-creation the old supervisor got its answer (the
// review measured ~100 ms until it enforced the new policy).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxPhase, workspaceScope } from "openshell-config/raw";
import {
  attackerPolicy,
  benignPolicy,
  enforced,
  freePort,
  runsAsRoot,
  startGatewayProcess,
  startSupervisorProcess,
  until,
  type GatewayProcess,
  type SupervisorProcess,
} from "./instance-processes.js";

const token = (who: string) => `${who}-${randomBytes(16).toString("hex")}`;
const TOKENS = { user: token("user"), old: token("sup-b"), fresh: token("sup-b-new") };
const AUTH = [
  { token: TOKENS.user, principal: "mallory", role: "user", workspaces: ["default"] },
  { token: TOKENS.old, principal: "supervisor:b", role: "supervisor", workspace: "default", sandbox: "b" },
  // Provisioned for the new instance: it never connected while the old `b` existed.
  { token: TOKENS.fresh, principal: "supervisor:b-new", role: "supervisor", workspace: "default", sandbox: "b" },
];
const scope = workspaceScope();

let dir: string;
let db: string;
let port: number;
let gateway: GatewayProcess;
const supervisors: SupervisorProcess[] = [];
let old: SupervisorProcess;

/** The reasons of the supervisor's stream ends that report a refusal naming the deleted instance. */
const refusals = (s: SupervisorProcess): string[] =>
  s
    .lines()
    .filter((l) => l.startsWith("{") && l.includes("was deleted; a new instance needs its own credential"))
    .map((l) => String((JSON.parse(l) as { reason?: unknown }).reason));

const phase = async () => (await gateway.raw(TOKENS.user).getSandbox({ name: "b", workspaceScope: scope })).sandbox?.status?.phase;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "osc-instance-"));
  db = join(dir, "gateway.db");
  port = await freePort();
  gateway = await startGatewayProcess(dir, db, port, AUTH);
  await gateway.raw(TOKENS.user).createSandbox({ name: "b", spec: { policy: benignPolicy() }, workspaceScope: scope });
  old = startSupervisorProcess(gateway.url, "b", TOKENS.old, join(dir, "old"));
  supervisors.push(old);
  await until(async () => (await phase()) === SandboxPhase.READY, "the first b to be READY");
  expect(enforced(old.stateDir, "b")?.policy.filesystem?.readWrite).toEqual(["/tmp"]);
}, 60_000);

afterAll(async () => {
  await Promise.all(supervisors.map((s) => s.stop()));
  await gateway?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a deleted and re-created sandbox (real processes)", () => {
  it("the old sandbox's running supervisor is refused with the reason and never enforces the new instance's policy", async () => {
    const user = gateway.raw(TOKENS.user);
    const first = (await user.getSandbox({ name: "b", workspaceScope: scope })).sandbox!.metadata!.id;
    await user.deleteSandbox({ name: "b", workspaceScope: scope });
    await user.createSandbox({ name: "b", spec: { policy: attackerPolicy() }, workspaceScope: scope });
    const created = Date.now();
    // Whichever comes first: the refusal (fixed) or the new policy in force (the review's finding).
    const outcome = await until(() => (runsAsRoot(enforced(old.stateDir, "b")) ? "enforced the new policy" : refusals(old).length > 0 && "refused"), "the old supervisor's answer");
    if (process.env.OSC_MEASURE === "1") process.stderr.write(`old supervisor ${outcome} ${Date.now() - created} ms after the re-creation\n`);
    expect(outcome).toBe("refused");
    expect(refusals(old)[0]).toContain(`the sandbox "b" this supervisor served (id ${first}) was deleted`);
    expect(refusals(old)[0]).toMatch(/^stream failed: \[PermissionDenied\] /);
    // It keeps trying (it cannot know an admin will not pin it again) and keeps being refused.
    await until(() => refusals(old).length >= 2, "a second refusal", 20_000, 50);
    expect(runsAsRoot(enforced(old.stateDir, "b"))).toBe(false);
    expect(enforced(old.stateDir, "b")?.policy.filesystem?.readWrite).toEqual(["/tmp"]);
    expect(await phase()).toBe(SandboxPhase.PROVISIONING);
  }, 40_000);

  it("a supervisor with a credential of its own serves the new instance", async () => {
    const fresh = startSupervisorProcess(gateway.url, "b", TOKENS.fresh, join(dir, "fresh"));
    supervisors.push(fresh);
    await until(async () => (await phase()) === SandboxPhase.READY, "the new b to be READY");
    expect(runsAsRoot(enforced(fresh.stateDir, "b"))).toBe(true);
    expect(runsAsRoot(enforced(old.stateDir, "b"))).toBe(false);
  }, 30_000);

  it("after a gateway restart the old credential is still refused and the new one still served", async () => {
    const fresh = supervisors.at(-1)!;
    const accepted = () => fresh.lines().filter((l) => l.includes('"session accepted"')).length;
    await gateway.stop();
    const [refused, served] = [refusals(old).length, accepted()];
    gateway = await startGatewayProcess(dir, db, port, AUTH);
    await until(() => refusals(old).length > refused, "a refusal from the restarted gateway", 40_000, 50);
    await until(() => accepted() > served, "the new supervisor's session on the restarted gateway", 40_000, 50);
    expect(runsAsRoot(enforced(old.stateDir, "b"))).toBe(false);
  }, 60_000);
});
