// `policy rollout list|history|status|approve|resume|undo` over the gateway's shared rollout
// records, as a built binary against real processes: a gateway on SQLite and one supervisor
// process with 6 sandboxes (and, for a CLI killed mid-wave, 2 more whose supervisor waits 2 s
// before each apply). Alice and Bob are admins of the workspace, each on a "machine" of
// their own (another XDG_STATE_HOME: Bob has no state file of Alice's rollouts), Carol a user.
// Then a gateway without operation tracking (so without records): list says so (exit 69), and
// status works from the local state file.

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { getRollout, rollout } from "openshell-config/rollout";
import { fleetNames, startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { driverId } from "../../cli/rollout-locate.js";
import { build, policyYaml, runBinary, waitFleetReady, type InterruptOptions, type Run } from "./harness.js";

const fleet = fleetNames("rs-", 6);
/** Sandboxes of one test, whose supervisor waits before each apply (started by that test). */
const slow = fleetNames("rd-", 2);
const base = { github: { host: "api.github.com" } };
const TOKENS = { alice: `alice-${"a".repeat(24)}`, bob: `bob-${"b".repeat(24)}`, carol: `carol-${"c".repeat(24)}` };
type Who = keyof typeof TOKENS;

let stack: LocalStack;
let dir: string;
let files = 0;

function cli(who: Who, args: readonly string[], url = stack.url, interrupt: InterruptOptions = {}): Promise<Run> {
  const env = { PATH: process.env.PATH, HOME: join(dir, "home"), XDG_STATE_HOME: join(dir, `state-${who}`), OPENSHELL_GATEWAY_URL: url, OPENSHELL_TOKEN: TOKENS[who] };
  return runBinary(args, dir, env, interrupt);
}

const sdk = (who: Who) => createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: TOKENS[who] });

async function versions(): Promise<Map<string, number>> {
  const res = await sdk("alice").raw(OpenShell).listSandboxes({ labelSelector: "team=rs", pageSize: 100, workspaceScope: workspaceScope() });
  return new Map(res.sandboxes.map((sb) => [sb.metadata!.name, sb.status!.desiredPolicyVersion]));
}
const bumps = async (before: Map<string, number>) => {
  const now = await versions();
  return fleet.map((n) => now.get(n)! - before.get(n)!);
};

/** A policy file with one more rule than any before: each rollout a new revision. */
function file(): string {
  const path = join(dir, `p${++files}.yaml`);
  writeFileSync(path, policyYaml({ ...base, [`r${files}`]: { host: `r${files}.example.com` } }));
  return path;
}

const heldPolicy = {
  version: 1,
  filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] },
  networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] }, held: { name: "held", endpoints: [{ host: "held.example.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] } },
};

const firstLine = (r: Run) => r.stderr.split("\n")[0]!;
const widest = (text: string) => Math.max(0, ...text.split("\n").map((l) => l.length));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openshell-cli-shared-"));
  mkdirSync(join(dir, "home"));
  const stackDir = join(dir, "stack");
  mkdirSync(stackDir);
  // The stack keeps entries it did not write (examples/stack-tokens.ts): two admins and a user.
  const tokens = [
    { token: TOKENS.alice, principal: "alice", role: "admin", workspaces: ["default"] },
    { token: TOKENS.bob, principal: "bob", role: "admin", workspaces: ["default"] },
    { token: TOKENS.carol, principal: "carol", role: "user", workspaces: ["default"] },
  ];
  writeFileSync(join(stackDir, "auth.json"), JSON.stringify({ tokens }), { mode: 0o600 });
  const [started] = await Promise.all([startLocalStack({ sandboxes: [...fleet, ...slow], dir: stackDir }), build()]);
  stack = started;
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
  const policy = { version: 1, filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] }, networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] } } };
  for (const name of fleet) await raw.createSandbox({ name, labels: { team: "rs" }, spec: { policy }, workspaceScope: workspaceScope() });
  stack.startSupervisor({ fleet: { prefix: "rs-", count: fleet.length } });
  await waitFleetReady((labelSelector) => raw.listSandboxes({ labelSelector, pageSize: 100, workspaceScope: workspaceScope() }), "team=rs", fleet.length, stack.logFile);
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("policy rollout over shared records", () => {
  it("Alice starts a four-eyes rollout paused for approval; Bob lists it, approves it by its short id from another machine, resumes it to the end, and undoes it", async () => {
    const before = await versions();
    const started = await cli("alice", ["policy", "rollout", "-l", "team=rs", "-f", file(), "--waves", "2,4,100%", "--pause-for-approval", "--four-eyes", "-o", "json"]);
    expect(started.code, started.stderr).toBe(3);
    const { id, stateFile, resume } = JSON.parse(started.stdout) as { id: string; stateFile: string; resume: string };
    expect(resume).toMatch(new RegExp(`^openshell-config policy rollout approve ${id}( |$)`));
    // The hint names what works: someone else's approve, not Alice's own resume.
    expect(started.stderr).toMatch(new RegExp(`^another person approves the next wave with: openshell-config policy rollout approve ${id}( |$)`, "m"));
    expect(started.stderr).not.toContain("rollout resume");
    // Alice's machine keeps the state file too; Bob's has none.
    expect(existsSync(stateFile)).toBe(true);
    expect(existsSync(join(dir, "state-bob", "openshell-config", "rollouts", `${id}.json`))).toBe(false);

    const list = await cli("bob", ["policy", "rollout", "list"]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stderr).toBe("");
    expect(list.stdout).toMatch(/^ID\s+AGE\s+PHASE\s+WAVES\s+COUNTS\s+BY$/m);
    expect(list.stdout).toMatch(new RegExp(`^${id.slice(0, 8)}\\s+\\d+s\\s+paused \\(approval\\)\\s+1/3\\s+2/6 applied\\s+alice$`, "m"));
    expect(widest(list.stdout)).toBeLessThanOrEqual(80);
    const wide = await cli("bob", ["policy", "rollout", "list", "-A", "--no-headers"]);
    expect(wide.stdout).toMatch(new RegExp(`^${id.slice(0, 8)}\\s+default\\s+\\d+s\\s+paused \\(approval\\)\\s+1/3\\s+2/6 applied\\s+alice$`, "m"));
    expect(wide.stdout).not.toMatch(/^ID/m);
    expect(widest(wide.stdout)).toBeLessThanOrEqual(80);
    const json = JSON.parse((await cli("bob", ["policy", "rollout", "list", "-o", "json"])).stdout) as { rollouts: Record<string, unknown>[] };
    expect(json.rollouts.find((r) => r.id === id)).toMatchObject({ createdBy: "alice", phase: "paused", status: "paused (approval)", awaitingApproval: true, requireDistinctApprover: true, waves: { done: 1, total: 3 }, lease: null });

    const status = await cli("bob", ["policy", "rollout", "status", id]);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(new RegExp(`^rollout ${id}\nstatus: paused after wave 1/3, waiting for approval\n6 sandboxes \\(team=rs\\), 2 sent\ncreated by alice \\d+s ago \\(four eyes: another person approves\\)$`, "m"));
    expect(status.stdout).toMatch(new RegExp(`^another person approves the next wave with:\n  openshell-config policy rollout approve ${id}$`, "m"));

    // Four eyes: Alice may not approve her own rollout; Carol, a user, may not approve at all.
    const own = await cli("alice", ["policy", "rollout", "approve", id]);
    expect(own.code).toBe(1);
    expect(own.stderr.trim().split("\n")).toHaveLength(1);
    expect(firstLine(own)).toBe(`error: permission denied: rollout "${id}" needs an approver other than its creator (alice)`);
    const user = await cli("carol", ["policy", "rollout", "approve", id]);
    expect(user.code).toBe(1);
    expect(firstLine(user)).toMatch(/^error: permission denied: /);

    const approved = await cli("bob", ["policy", "rollout", "approve", id.slice(0, 8)]);
    expect(approved.code, approved.stdout + approved.stderr).toBe(3);
    expect(approved.stdout).toMatch(new RegExp(`^rollout ${id}: paused, 6 sandboxes in `, "m"));
    // Bob's machine now has the state file too: the export and fallback format.
    expect(existsSync(join(dir, "state-bob", "openshell-config", "rollouts", `${id}.json`))).toBe(true);
    const after = JSON.parse((await cli("bob", ["policy", "rollout", "status", id, "-o", "json"])).stdout) as { shared: boolean; createdBy: string; approvals: { wave: number; by: string }[]; status: string };
    expect(after).toMatchObject({ shared: true, createdBy: "alice", status: "paused after wave 2/3, waiting for approval" });
    expect(after.approvals.map((a) => [a.wave, a.by])).toEqual([[2, "bob"]]);

    const resumed = await cli("bob", ["policy", "rollout", "resume", id]);
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`^rollout ${id}: done, 6 sandboxes in `, "m"));
    expect(await bumps(before)).toEqual([1, 1, 1, 1, 1, 1]);
    const done = await cli("carol", ["policy", "rollout", "status", id]);
    expect(done.stdout).toMatch(/^wave 2 approved by bob /m);
    expect(done.stdout).toMatch(/^wave 3 approved by bob /m);
    expect(done.stdout).not.toMatch(/^driven by/m);

    const empty = await cli("bob", ["policy", "rollout", "list"]);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe("");
    expect(empty.stderr).toBe("no rollouts in progress\n");
    const history = await cli("carol", ["policy", "rollout", "history"]);
    expect(history.code, history.stderr).toBe(0);
    expect(history.stdout).toMatch(/^ID\s+AGE\s+RESULT\s+WAVES\s+COUNTS\s+APPROVALS\s+BY$/m);
    expect(history.stdout).toMatch(new RegExp(`^${id.slice(0, 8)}\\s+\\d+s\\s+complete\\s+3/3\\s+6/6 applied\\s+2\\s+alice$`, "m"));
    expect(widest(history.stdout)).toBeLessThanOrEqual(80);

    // Carol (a user) cannot undo; Bob can, from the record.
    const denied = await cli("carol", ["policy", "rollout", "undo", id]);
    expect(denied.code).toBe(1);
    expect(firstLine(denied)).toMatch(/^error: permission denied: /);
    const undone = await cli("bob", ["policy", "rollout", "undo", id]);
    expect(undone.code, undone.stdout + undone.stderr).toBe(0);
    expect(undone.stdout).toMatch(/^rolled back 6 of 6 changed sandboxes$/m);
    expect(await bumps(before)).toEqual([2, 2, 2, 2, 2, 2]);
    const rows = JSON.parse((await cli("alice", ["policy", "rollout", "history", "-o", "json"])).stdout) as { rollouts: { id: string; result: string; counts: { rolledBack: number } }[] };
    expect(rows.rollouts.find((r) => r.id === id)).toMatchObject({ result: "rolled-back", counts: { rolledBack: 6 } });
  }, 180_000);

  it("while another driver's lease is live, resume and undo are refused in one line naming it (exit 75); once it stops, undo works", async () => {
    const before = await versions();
    const stop = new AbortController();
    // Alice's driver pauses an hour between waves, holding (and renewing) the lease.
    const run = rollout(sdk("alice"), { id: "held-1", labelSelector: "team=rs", policy: heldPolicy, waves: [1, "100%"], gate: { pause: 3_600_000 }, driver: "alice's laptop", signal: stop.signal });
    for (let i = 0; ; i++) {
      const r = await getRollout(sdk("bob"), "held-1").catch(() => undefined);
      if (r?.phase === "paused" && r.lease !== undefined) break;
      if (i > 200) throw new Error("the rollout did not pause");
      await new Promise((res) => setTimeout(res, 100));
    }
    const wide = await cli("bob", ["policy", "rollout", "list", "-o", "wide"]);
    expect(wide.stdout).toMatch(/^held-1\s+default\s+\S+\s+paused \(timed\)\s+1\/2\s+1\/6 applied\s+alice\s+alice's laptop\s+team=rs\s+policy$/m);
    for (const verb of ["resume", "undo"]) {
      const refused = await cli("bob", ["policy", "rollout", verb, "held-1"]);
      expect(refused.code, refused.stdout + refused.stderr).toBe(75);
      expect(refused.stdout).toBe("");
      expect(refused.stderr.trim().split("\n").filter((l) => l.startsWith("error:"))).toEqual([
        expect.stringMatching(/^error: rollout held-1 is being driven by alice's laptop \(alice\): it can be taken over if its lease is not renewed by \d{4}-\d\d-\d\dT[\d:.]+Z \(in \d+s\)$/),
      ]);
    }
    const approve = await cli("bob", ["policy", "rollout", "approve", "held-1"]);
    expect(approve.code).toBe(1);
    expect(firstLine(approve)).toMatch(/^error: rollout held-1 waits for no approval \(its pause ends by itself at /);
    const status = await cli("carol", ["policy", "rollout", "status", "held-1"]);
    expect(status.stdout).toMatch(/^driven by alice's laptop \(alice\), lease until /m);
    // Only the first wave's one sandbox was sent.
    expect((await bumps(before)).reduce((a, b) => a + b, 0)).toBe(1);

    stop.abort();
    await run;
    const undone = await cli("bob", ["policy", "rollout", "undo", "held-1"]);
    expect(undone.code, undone.stdout + undone.stderr).toBe(0);
    expect(undone.stdout).toMatch(/^rolled back 1 of 1 changed sandbox$/m);
    expect((await bumps(before)).reduce((a, b) => a + b, 0)).toBe(2);
  }, 120_000);

  it("list -w prints a line when a rollout appears and when it pauses, until Ctrl-C (exit 130)", async () => {
    // Ctrl-C once the watch has printed the rollout paused (not at a guessed time; 45 s at most).
    let paused: RegExp | undefined;
    const watching = runBinary(["policy", "rollout", "list", "-w"], dir, { PATH: process.env.PATH, HOME: join(dir, "home"), XDG_STATE_HOME: join(dir, "state-carol"), OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: TOKENS.carol }, {
      interruptWhen: (out) => paused?.test(out) === true,
      interruptAfterMs: 45_000,
    });
    await new Promise((r) => setTimeout(r, 2_500));
    const started = await cli("alice", ["policy", "rollout", "-l", "team=rs", "-f", file(), "--waves", "1,100%", "--pause-for-approval", "-o", "json"]);
    expect(started.code, started.stderr).toBe(3);
    const { id } = JSON.parse(started.stdout) as { id: string };
    paused = new RegExp(`^${id.slice(0, 8)}.*paused \\(approval\\)`, "m");
    const w = await watching;
    expect(w.code, w.stderr).toBe(130);
    const rows = w.stdout.split("\n").filter((l) => l.startsWith(id.slice(0, 8)));
    expect(rows.at(-1), w.stdout).toMatch(/\s+paused \(approval\)\s+1\/2\s+1\/6 applied\s+alice$/);
    expect(widest(w.stdout)).toBeLessThanOrEqual(80);
    // Left for the next test's list to ignore: undone here.
    expect((await cli("bob", ["policy", "rollout", "undo", id])).code).toBe(0);
  }, 60_000);

  it("`policy rollout --resume ID` of a four-eyes rollout: its creator is refused in one line and nothing is sent; another admin's approves the next wave, and the hint after it names approve, from the gateway's record", async () => {
    const before = await versions();
    const started = await cli("alice", ["policy", "rollout", "-l", "team=rs", "-f", file(), "--waves", "1,2,100%", "--pause-for-approval", "--four-eyes", "-o", "json"]);
    expect(started.code, started.stderr).toBe(3);
    const { id } = JSON.parse(started.stdout) as { id: string };
    const own = await cli("alice", ["policy", "rollout", "--resume", id]);
    expect(own.code, own.stdout + own.stderr).toBe(1);
    expect(own.stdout).toBe("");
    expect(own.stderr.trim().split("\n")).toEqual([`error: permission denied: rollout "${id}" needs an approver other than its creator (alice)`]);
    expect((await bumps(before)).reduce((a, b) => a + b, 0)).toBe(1);
    // Bob's resume approves wave 2 and sends it. --four-eyes is not on his command line (nor in
    // any state file of his): the hint comes from the gateway's record of the rollout.
    const bobs = await cli("bob", ["policy", "rollout", "--resume", id]);
    expect(bobs.code, bobs.stdout + bobs.stderr).toBe(3);
    expect(bobs.stdout).toMatch(new RegExp(`^rollout ${id}: paused, 6 sandboxes in `, "m"));
    expect(bobs.stderr).toMatch(new RegExp(`^another person approves the next wave with: openshell-config policy rollout approve ${id}$`, "m"));
    expect(bobs.stderr).not.toContain("rollout resume");
    expect((await bumps(before)).reduce((a, b) => a + b, 0)).toBe(2);
    expect((await cli("bob", ["policy", "rollout", "undo", id])).code).toBe(0);
  }, 60_000);

  it("a four-eyes rollout whose creator's CLI dies mid-wave: her `--resume ID` is refused in one line while the dead run's lease lasts, then finishes the wave without a second revision and pauses, naming approve by another person", async () => {
    // Two sandboxes of their own, whose supervisor waits 2 s before each apply: a wave in flight
    // lasts long enough to be killed in.
    const raw = sdk("alice").raw(OpenShell);
    for (const name of slow) await raw.createSandbox({ name, labels: { team: "rd" }, spec: { policy: heldPolicy }, workspaceScope: workspaceScope() });
    stack.startSupervisor({ fleet: { prefix: "rd-", count: slow.length }, args: ["--apply-delay-ms", "2000"] });
    await waitFleetReady((labelSelector) => raw.listSandboxes({ labelSelector, pageSize: 100, workspaceScope: workspaceScope() }), "team=rd", slow.length, stack.logFile);

    const states = join(dir, "state-alice", "openshell-config", "rollouts");
    const known = new Set(existsSync(states) ? readdirSync(states) : []);
    /** The id of the new rollout while its saved state says it is running. */
    const running = (): string | undefined => {
      for (const f of existsSync(states) ? readdirSync(states) : []) {
        if (known.has(f) || !f.endsWith(".json")) continue;
        try {
          const state = JSON.parse(readFileSync(join(states, f), "utf8")) as { id: string; phase: string };
          if (state.phase === "running") return state.id;
        } catch {
          // Being replaced (temporary file, rename): the next poll reads it.
        }
      }
      return undefined;
    };
    // Killed once wave 1's change is committed at the gateway and its apply (2 s) is under way.
    const desired = async () => {
      const res = await raw.listSandboxes({ labelSelector: "team=rd", pageSize: 10, workspaceScope: workspaceScope() });
      return res.sandboxes.reduce((sum, sb) => sum + sb.status!.desiredPolicyVersion, 0);
    };
    const before = await desired();
    let committed = false;
    const watch = setInterval(() => void desired().then((v) => (committed ||= v > before), () => undefined), 50);
    const killed = await cli("alice", ["policy", "rollout", "-l", "team=rd", "-f", file(), "--waves", "1,100%", "--pause-for-approval", "--four-eyes"], stack.url, {
      interruptWhen: () => committed && running() !== undefined,
      interruptSignal: "SIGKILL",
    }).finally(() => clearInterval(watch));
    expect(killed.code, killed.stderr).toBeNull();
    const id = running()!;
    expect(id).toBeDefined();
    expect(await desired()).toBe(before + 1);

    // The dead process still holds the record's lease (15 s): refused in one line, nothing sent.
    const early = await cli("alice", ["policy", "rollout", "--resume", id]);
    expect(early.code, early.stdout + early.stderr).toBe(75);
    expect(early.stderr.trim().split("\n").filter((l) => l.startsWith("error:"))).toHaveLength(1);
    let resumed = early;
    for (const until = Date.now() + 40_000; resumed.code === 75 && Date.now() < until; ) {
      await new Promise((r) => setTimeout(r, 1_000));
      resumed = await cli("alice", ["policy", "rollout", "--resume", id]);
    }
    // Wave 1 finished with no second revision of its one sandbox, and wave 2 was not sent; the
    // rollout waits for another person's approval, which her command line (no --four-eyes) does
    // not say: the record does.
    expect(resumed.code, resumed.stdout + resumed.stderr).toBe(3);
    expect(await desired()).toBe(before + 1);
    expect(resumed.stdout).toMatch(new RegExp(`^rollout ${id}: paused, 2 sandboxes in `, "m"));
    expect(resumed.stderr).toMatch(new RegExp(`^another person approves the next wave with: openshell-config policy rollout approve ${id}$`, "m"));
    expect(resumed.stderr).not.toMatch(/^resume with:|^approve the next wave with:/m);
    expect((await cli("bob", ["policy", "rollout", "undo", id])).code).toBe(0);
  }, 90_000);

  it("an id neither the gateway nor this machine knows is a usage error naming both; a new rollout names this process as its driver", async () => {
    for (const verb of ["status", "resume", "approve", "undo"]) {
      const r = await cli("bob", ["policy", "rollout", verb, "nope"]);
      expect(r.code).toBe(2);
      expect(firstLine(r)).toMatch(/^error: no saved state for rollout nope in \S+, and the gateway has no rollout nope$/);
    }
    expect(driverId()).toMatch(new RegExp(`^cli \\S+@\\S+ pid ${process.pid}$`));
    const bad = await cli("alice", ["policy", "rollout", "-l", "team=rs", "-f", file(), "--waves", "1,100%", "--four-eyes"]);
    expect(bad.code).toBe(2);
    expect(firstLine(bad)).toBe("error: --four-eyes is about who approves a wave: give --pause-for-approval");
  }, 60_000);
});

describe("policy rollout against a gateway without shared records", () => {
  let plain: LocalStack;
  beforeAll(async () => {
    plain = await startLocalStack({ sandboxes: [], gatewayArgs: ["--without-operations"] });
  }, 120_000);
  afterAll(async () => {
    await plain?.stop();
  });
  const run = (args: readonly string[]) =>
    runBinary(args, dir, { PATH: process.env.PATH, HOME: join(dir, "home"), XDG_STATE_HOME: join(dir, "state-alice"), OPENSHELL_GATEWAY_URL: plain.url, OPENSHELL_TOKEN: plain.adminToken });

  it("list and history say in one line that the gateway keeps no shared rollouts and where the local states are (exit 69); status reads the local state file", async () => {
    for (const verb of ["list", "history"]) {
      const r = await run(["policy", "rollout", verb]);
      expect(r.code).toBe(69);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(`error: the gateway keeps no shared rollouts (no rollout record extension); rollouts started from this machine are in ${join(dir, "state-alice", "openshell-config", "rollouts")} ("policy rollout status ID" reads them)\n`);
    }
    // A state file of Alice's machine (her first rollout above), read with no record to prefer.
    const saved = readdirStates(join(dir, "state-alice", "openshell-config", "rollouts"))[0]!;
    const status = await run(["policy", "rollout", "status", saved.id, "-o", "json"]);
    expect(status.code, status.stderr).toBe(0);
    const doc = JSON.parse(status.stdout) as { id: string; shared: boolean; stateFile: string; total: number };
    expect(doc).toMatchObject({ id: saved.id, shared: false, stateFile: saved.path, total: 6 });
    const table = await run(["policy", "rollout", "status", saved.id]);
    expect(table.stdout).not.toMatch(/^created by/m);
    const missing = await run(["policy", "rollout", "resume", "nope"]);
    expect(missing.code).toBe(2);
    expect(firstLine(missing)).toMatch(/^error: no saved state for rollout nope in \S+ \(the gateway keeps no shared rollouts\)$/);
  }, 60_000);
});

/** The state files in `path` of a rollout to the 6 sandboxes. */
function readdirStates(path: string): { id: string; path: string }[] {
  return readdirSync(path)
    .filter((f) => f.endsWith(".json"))
    .map((f) => ({ id: f.slice(0, -".json".length), path: join(path, f) }))
    .filter((s) => (JSON.parse(readFileSync(s.path, "utf8")) as { sandboxes: string[] }).sandboxes.length === 6);
}
