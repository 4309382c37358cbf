// A shared rollout outlives its driver across replicas: two gateway processes on one PostgreSQL
// database, a driver process that rolls out through replica 1 and is SIGKILLed mid-wave, and this
// process resuming the rollout by id through replica 2 once the dead driver's lease runs out
// (refused while it is live). Every sandbox gets exactly one revision from the rollout, and exactly
// one more from the undo that follows; the takeover time after the driver's death is printed.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenShell, SandboxPhase, workspaceScope } from "openshell-config/raw";
import { getRollout, resumeRollout, undoSharedRollout, RolloutLeaseHeldError, type RolloutEvent, type RolloutResult } from "openshell-config/rollout";
import { createCluster, policyWith, postgresReachable, until, type Cluster, type Proc } from "./cluster-harness.js";

const reachable = await postgresReachable();
if (!reachable && process.env.OSC_REQUIRE_POSTGRES === "1") throw new Error("PostgreSQL unreachable for the cluster tests");

const COUNT = 10;
const names = Array.from({ length: COUNT }, (_, i) => `rp-${String(i).padStart(4, "0")}`);
const CHILD = resolve(import.meta.dirname, "../../../test/support/rollout-child.ts");
const LEASE_MS = 3_000;

describe.skipIf(!reachable)("a shared rollout driven through one replica and taken over through another", () => {
  let cluster: Cluster;
  let r1: Proc;
  let r2: Proc;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "shared-rollout-replicas-"));
    cluster = await createCluster(names);
    [r1, r2] = await Promise.all([cluster.startReplica("R1"), cluster.startReplica("R2")]);
    const raw = cluster.client(r1.url).raw(OpenShell);
    for (const name of names) await raw.createSandbox({ name, labels: { team: "rp" }, spec: { policy: policyWith("start.example.com") }, workspaceScope: workspaceScope() });
    cluster.startFleet("rp-", COUNT, [r1.url, r2.url]);
    await until(async () => {
      const page = await raw.listSandboxes({ pageSize: 100, workspaceScope: workspaceScope() });
      return page.sandboxes.filter((s) => s.status?.phase === SandboxPhase.READY).length === COUNT;
    }, "the fleet to be READY", 30_000);
  }, 90_000);
  afterAll(async () => {
    await cluster?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function versions(): Promise<number[]> {
    const page = await cluster.client(r2.url).raw(OpenShell).listSandboxes({ pageSize: 100, workspaceScope: workspaceScope() });
    const byName = new Map(page.sandboxes.map((s) => [s.metadata!.name, s.status!.desiredPolicyVersion]));
    return names.map((n) => byName.get(n)!);
  }

  /** Runs the driver through replica 1; SIGKILLs it once two sandboxes of its second wave are sent. */
  function driveAndKill(options: object): Promise<{ killedAt: number; sentInWave2: number }> {
    return new Promise((res, rej) => {
      const child = spawn(process.execPath, ["--import", "tsx", CHILD, r1.url, cluster.adminToken, join(dir, "state.json"), JSON.stringify(options)], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let wave = -1;
      let sent = 0;
      let killedAt = 0;
      let buf = "";
      let err = "";
      child.stderr.on("data", (d: Buffer) => (err += d.toString()));
      child.stdout.on("data", (d: Buffer) => {
        buf += d.toString();
        for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
          const e = JSON.parse(buf.slice(0, nl)) as { type: string };
          buf = buf.slice(nl + 1);
          if (e.type === "wave-started") wave++;
          if (e.type === "sent" && wave === 1) sent++;
          if (killedAt === 0 && sent >= 2) {
            killedAt = Date.now();
            child.kill("SIGKILL");
          }
        }
      });
      child.on("exit", () => (killedAt > 0 ? res({ killedAt, sentInWave2: sent }) : rej(new Error(`the driver ended before it was killed: ${err}`))));
    });
  }

  it("a driver killed mid-wave is refused while its lease lives, then resumed through the other replica: one revision per sandbox", async () => {
    const before = await versions();
    const { killedAt } = await driveAndKill({
      id: "rp-ship",
      labelSelector: "team=rp",
      policy: policyWith("shipped.example.com"),
      waves: [2, 6, "100%"],
      concurrency: 1,
      driver: "driver process on R1",
      leaseTtlMs: LEASE_MS,
    });
    const via2 = cluster.client(r2.url);
    const dead = await getRollout(via2, "rp-ship");
    expect(dead.phase).toBe("running");
    expect(dead.lease?.holder).toBe("driver process on R1");
    // The record has the first wave for sure; sends of the second are written at most every 250 ms,
    // so some may be missing: resuming sends them again under the same keys, which replays them.
    const sentBefore = dead.counts.sent;
    expect(sentBefore).toBeGreaterThanOrEqual(2);
    expect(sentBefore).toBeLessThan(COUNT);

    // Refused while the dead driver's lease is live; taken over as soon as it runs out.
    let refusals = 0;
    let takenAt = 0;
    for (;;) {
      const events: RolloutEvent[] = [];
      const run = resumeRollout(via2, "rp-ship", {
        driver: "operator on R2",
        onProgress: (e) => {
          if (takenAt === 0 && e.type === "started") takenAt = Date.now();
          events.push(e);
        },
      });
      const outcome: RolloutResult | unknown = await run.result.then(
        (r) => r,
        (e: unknown) => e,
      );
      if (outcome instanceof RolloutLeaseHeldError) {
        expect(outcome.lease.holder).toBe("driver process on R1");
        refusals++;
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      if (outcome instanceof Error) throw outcome;
      expect((outcome as RolloutResult).phase).toBe("complete");
      expect(events.find((e) => e.type === "started")).toMatchObject({ alreadyCommitted: expect.any(Number) });
      break;
    }
    const takeoverMs = takenAt - killedAt;
    process.stderr.write(`takeover after the driver's death: ${takeoverMs} ms (lease ${LEASE_MS} ms), ${refusals} refusals before\n`);
    expect(refusals).toBeGreaterThan(0);
    expect(takeoverMs).toBeGreaterThanOrEqual(LEASE_MS - 1_000);
    expect((await versions()).map((v, i) => v - before[i]!)).toEqual(names.map(() => 1));
    const done = await getRollout(cluster.client(r1.url), "rp-ship");
    expect(done).toMatchObject({ phase: "done", result: "complete", counts: { sent: COUNT, applied: COUNT }, lease: undefined });
  });

  it("an undo through replica 1 after the takeover gives each sandbox exactly one rollback revision", async () => {
    const before = await versions();
    const result = await undoSharedRollout(cluster.client(r1.url), "rp-ship", { driver: "undo on R1" });
    expect(result.phase).toBe("rolled-back");
    expect((await versions()).map((v, i) => v - before[i]!)).toEqual(names.map(() => 1));
    const again = await undoSharedRollout(cluster.client(r2.url), "rp-ship");
    expect(again.phase).toBe("rolled-back");
    expect((await versions()).map((v, i) => v - before[i]!)).toEqual(names.map(() => 1));
  });
});
