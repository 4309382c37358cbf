// Progressive rollouts that outlive their process: a rollout run in a child process is SIGKILLed
// mid-wave or mid-rollback and resumed from the state its onState wrote, in this process; a
// rollout paused for approval is resumed from its JSON in another process. The gateway's policy
// versions show that no sandbox got a second revision (nor a second rollback revision).

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workspaceScope } from "openshell-config/raw";
import { restoreRolloutState, rollout } from "openshell-config/rollout";
import { fleetNames, policy, startE2EStack, untilFleetReady, type E2EStack, type RuleSpec } from "./stack.js";

const names = fleetNames("rr-", 160);
const groupA = names.slice(0, 100);
const groupB = names.slice(100);
// The last ten of group B have an L4 "api" endpoint: L7 rules added to them are invalid.
const l4 = new Set(groupB.slice(-10));

const base: Record<string, RuleSpec> = { github: { host: "github.com" } };
const withApi = (protocol: string) => policy({ ...base, api: { host: "api.example.com", protocol } });
const addL7 = [{ operation: { case: "addAllowRules", value: { target: { ruleName: "api", anyBinary: true }, rules: [{ allow: { method: "GET", path: "/v2/**" } }] } } }];
const CHILD = join(import.meta.dirname, "../support/rollout-child.ts");

let stack: E2EStack;
let dir: string;

async function policyVersions(): Promise<Map<string, number>> {
  const res = await stack.raw.listSandboxes({ pageSize: 1000, workspaceScope: workspaceScope() });
  return new Map(res.sandboxes.map((sb) => [sb.metadata!.name, sb.status!.desiredPolicyVersion]));
}

/** How many sandboxes the state file records as sent (0 while there is none). */
function recordedSends(stateFile: string): number {
  try {
    return Object.keys((JSON.parse(readFileSync(stateFile, "utf8")) as { refs: object }).refs).length;
  } catch {
    return 0;
  }
}

/** Runs the child; SIGKILLs it once `killWhen` holds for the events printed so far. Resolves with the events. */
function runChild(stateFile: string, options: unknown, killWhen?: (events: { type: string }[]) => boolean): Promise<{ events: { type: string; phase?: string }[]; killed: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", CHILD, stack.url, stack.adminToken, stateFile, JSON.stringify(options)], { stdio: ["ignore", "pipe", "pipe"] });
    const events: { type: string }[] = [];
    let killed = false;
    let buf = "";
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.stdout.on("data", (d: Buffer) => {
      buf += d.toString();
      for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
        events.push(JSON.parse(buf.slice(0, nl)) as { type: string });
        buf = buf.slice(nl + 1);
        if (!killed && killWhen?.(events)) {
          killed = true;
          child.kill("SIGKILL");
        }
      }
    });
    child.on("exit", (code) => (killed || code === 0 ? resolve({ events, killed }) : reject(new Error(`child exited ${code}: ${err}`))));
  });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "rollout-resume-"));
  // A gateway without the shared rollout record: these rollouts live in their state files only
  // (with the record, a SIGKILLed driver's lease would hold its rollout for 15 s: shared-rollout-replicas.test.ts).
  stack = await startE2EStack({ sandboxes: names, gatewayArgs: ["--without-shared-rollouts"] });
  for (const name of groupA) await stack.raw.createSandbox({ name, spec: { policy: policy(base) }, workspaceScope: workspaceScope() });
  for (const name of groupB) await stack.raw.createSandbox({ name, spec: { policy: withApi(l4.has(name) ? "" : "rest") }, workspaceScope: workspaceScope() });
  stack.startSupervisor({ fleet: { prefix: "rr-", count: names.length } });
  await untilFleetReady(stack.raw, names.length);
}, 150_000);

afterAll(async () => {
  await stack?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("progressive rollouts resumed in another process", () => {
  it("resumes a rollout killed mid-wave from the state its onState wrote, with no second revision for any sandbox", async () => {
    const before = await policyVersions();
    const stateFile = join(dir, "mid-wave.json");
    const { killed } = await runChild(
      stateFile,
      { id: "rr-mid-wave", sandboxes: groupA, policy: policy({ ...base, pypi: { host: "pypi.org" } }), waves: [2, "100%"], concurrency: 4 },
      // Killed mid-wave once the state on disk records sends of the second wave (its writes are
      // throttled to one per 250 ms while sending, so 30 sends alone may all come before one).
      (events) => events.filter((e) => e.type === "sent").length >= 30 && recordedSends(stateFile) > 2,
    );
    expect(killed).toBe(true);
    const saved = restoreRolloutState(readFileSync(stateFile, "utf8"));
    expect(saved.phase).toBe("running");
    expect(saved.wave).toBe(1);
    const sentBefore = Object.keys(saved.refs).length;
    expect(sentBefore).toBeGreaterThan(2);

    const result = await rollout(stack.client, { resume: saved, concurrency: 16 });
    expect(result.phase, `see ${stack.logFile}`).toBe("complete");
    expect(result.counts.byState).toEqual({ applied: 100 });
    const after = await policyVersions();
    for (const name of groupA) expect(after.get(name), name).toBe(before.get(name)! + 1);
  }, 60_000);

  it("resumes a rollback killed midway: every changed sandbox gets exactly one rollback revision", async () => {
    const before = await policyVersions();
    const stateFile = join(dir, "mid-rollback.json");
    // One wave in sending order: 50 good sandboxes, then the L4 ones; the first failure halts it.
    const order = [...groupB.filter((s) => !l4.has(s)), ...l4];
    const { killed, events } = await runChild(
      stateFile,
      { id: "rr-mid-rollback", sandboxes: order, mergeOperations: addL7, waves: [order], gate: { maxFailures: 1 }, rollback: "on-halt", concurrency: 4 },
      (evs) => evs.filter((e) => e.type === "rollback-result").length >= 8,
    );
    expect(killed, JSON.stringify(events.slice(-3))).toBe(true);
    const saved = restoreRolloutState(readFileSync(stateFile, "utf8"));
    expect(saved.phase).toBe("rolling-back");
    expect(saved.gateFailure?.wave).toBe(0);
    const changed = Object.keys(saved.refs);
    expect(Object.keys(saved.undoRefs).length).toBeGreaterThanOrEqual(8);

    const result = await rollout(stack.client, { resume: saved });
    expect(result.phase, `see ${stack.logFile}`).toBe("rolled-back");
    expect(result.rollback).toMatchObject({ rolledBack: changed.length, leftAlone: [], failed: [], pending: [] });
    expect(result.state.phase).toBe("done");
    const after = await policyVersions();
    for (const name of groupB) expect(after.get(name), name).toBe(before.get(name)! + (changed.includes(name) ? 2 : 0));
  }, 60_000);

  it("resumes a rollout paused for approval from its JSON in another process, which starts the next wave", async () => {
    const before = await policyVersions();
    const targets = groupA.slice(0, 40);
    const first = await rollout(stack.client, { id: "rr-approval", sandboxes: targets, settings: { key: "log_level", value: "warn" }, waves: [{ size: 5, gate: { pause: "approval" } }, "100%"] });
    expect(first.phase, `see ${stack.logFile}`).toBe("paused");
    expect(first.waves.map((w) => w.gate)).toEqual(["passed", "not-reached"]);
    expect(first.counts.byStatus).toMatchObject({ completed: 5, skipped: 35 });
    expect(first.state).toMatchObject({ phase: "paused", wave: 1 });

    const stateFile = join(dir, "approval.json");
    (await import("node:fs")).writeFileSync(stateFile, JSON.stringify(first.state));
    const { events } = await runChild(stateFile, { resume: true });
    expect(events.at(-1)).toEqual({ type: "finished", phase: "complete" });
    expect(events.filter((e) => e.type === "wave-started")).toHaveLength(1);
    const done = restoreRolloutState(readFileSync(stateFile, "utf8"));
    expect(done).toMatchObject({ phase: "done", wave: 2 });
    for (const name of targets) expect((await stack.client.getConfig({ sandbox: name })).desired.settings.log_level).toMatchObject({ value: "warn" });
    const after = await policyVersions();
    for (const name of targets) expect(after.get(name)).toBe(before.get(name));
  }, 60_000);
});
