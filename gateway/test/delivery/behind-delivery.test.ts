// A replica's session whose snapshot association finds behind the committed global part
// (delivery/associate.ts) delivers again: at once the first time, then through the delivery
// retry's backoff, so that a snapshot found behind again and again never becomes a loop of reads.
// The snapshots are made to look behind by moving their `builtOn` below every committed version,
// which is what another replica's unheard global commit looks like to association.

import { describe, expect, it, onTestFinished } from "vitest";
import { ConfigApplyOutcome } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "../rpc/harness.js";
import { createSandbox } from "../rpc/fixtures.js";
import { connectSupervisorDouble, type SupervisorDouble } from "./supervisor-double.js";
import { operation } from "../store/store-fixtures.js";
import { postgresReachable } from "../cluster/cluster-harness.js";
import { revisionBytes } from "../../src/delivery/revisions.js";
import { currentRevision } from "../../src/model/snapshot.js";
import type { SandboxRecord } from "../../src/store/store.js";
import { DELIVERY_RETRY_FIRST_MS } from "../../src/delivery/delivery-retry.js";

const reachable = await postgresReachable();

/** A replica (notifications off, no reconciler pass during the test) with one connected sandbox; its next `behindTimes` snapshots look behind. */
async function replicaWithBehindSnapshots(behindTimes: number) {
  const gw = await startTestGateway("postgres", { cluster: { replicaId: "a", leaseMs: 30_000, notify: false }, reconcileIntervalMs: 600_000 });
  let sup: SupervisorDouble | undefined;
  onTestFinished(async () => {
    sup?.close();
    await gw.close();
  });
  await createSandbox(gw, "dev");
  sup = connectSupervisorDouble(gw);
  await sup.ready;
  const desired = gw.gateway.deps.desired!;
  const snapshot = desired.snapshot.bind(desired);
  const behind = desired.behind.bind(desired);
  const seen = { behind: 0, snapshots: 0 };
  let left = behindTimes;
  desired.snapshot = async (sb, keep) => {
    const built = await snapshot(sb, keep);
    seen.snapshots++;
    if (left <= 0) return built;
    left--;
    return { ...built, builtOn: { policyVersion: -1, settingsRevision: -1n } };
  };
  desired.behind = (latest) => {
    seen.behind++;
    behind(latest);
  };
  const sb = (await gw.store.sandboxByName("default", "dev"))!;
  return { gw, sb, seen };
}

/** An operation on the sandbox's current policy version whose target is not yet this revision: association must re-target it. */
async function pendingOperation(g: TestGateway, sb: SandboxRecord) {
  // The target of a revision before this one (the sandbox without its policy).
  const target = revisionBytes(await currentRevision(g.store, { ...sb, policyVersion: 0 }, 0));
  const op = operation(sb.id, { workspace: sb.workspace, desiredRevision: BigInt(sb.policyVersion), target });
  await g.store.transaction((tx) => tx.insertOperation(op));
  return op;
}

async function until(cond: () => Promise<boolean> | boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(!reachable)("a replica's delivery found behind the committed global part", () => {
  it("delivers again at once, re-targets the operation to the fresh snapshot and completes it, with no retry logged", async () => {
    const { gw: g, sb, seen } = await replicaWithBehindSnapshots(1);
    const op = await pendingOperation(g, sb);
    g.gateway.sessions.get(sb.id)!.notify();
    await until(async () => (await g.store.operation(op.id))!.state !== op.state);
    expect((await g.store.operation(op.id))!.outcome).toBe(ConfigApplyOutcome.APPLIED);
    expect(seen.behind).toBe(1);
    expect(g.logs()).not.toMatch(/trying again/);
  });

  it("found behind again, delivers after the retry's backoff, which grows, and not in a loop", async () => {
    const { gw: g, sb, seen } = await replicaWithBehindSnapshots(3);
    const op = await pendingOperation(g, sb);
    const started = Date.now();
    g.gateway.sessions.get(sb.id)!.notify();
    await until(async () => (await g.store.operation(op.id))!.state !== op.state);
    // The first "behind" is retried at once; the second and third wait half a backoff at least.
    expect(Date.now() - started).toBeGreaterThanOrEqual(DELIVERY_RETRY_FIRST_MS / 2 + DELIVERY_RETRY_FIRST_MS);
    expect((await g.store.operation(op.id))!.outcome).toBe(ConfigApplyOutcome.APPLIED);
    expect(seen.behind).toBe(3);
    const retries = g
      .logs()
      .split("\n")
      .filter((l) => l.includes("behind what is committed, again"))
      .map((l) => JSON.parse(l) as { level: string; retryInMs: number });
    expect(retries.map((l) => l.retryInMs)).toEqual([DELIVERY_RETRY_FIRST_MS, 2 * DELIVERY_RETRY_FIRST_MS]);
    // Another replica's commits racing this one's reads are normal operation, not an error.
    expect(retries.map((l) => l.level)).toEqual(["info", "info"]);
  });
});
