// Three gateway processes on one PostgreSQL database. A sandbox's supervisor holds its session on
// replica B; updates committed through replica A complete and wake waiters on replica C, at once
// with notifications and within the reconcile bound without them. Every revision is applied once.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FIRST_CHECK_MS } from "../../src/operations/reconciler.js";
import { OpenShell } from "openshell-config/raw";
import type { ConfigClient } from "openshell-config";
import { appliedRevisions, createCluster, ownerOf, policyWith, postgresReachable, startThree, until, type Cluster, type Proc } from "./cluster-harness.js";

const RECONCILE_MS = 250;

/** Commits a global policy through `via`, then waits until the supervisor applied a new configuration. */
async function expectGlobalPolicyApplied(via: ConfigClient, supervisor: Proc, host: string): Promise<void> {
  const processed = () => supervisor.json().filter((l) => l.msg === "sandbox config processed" && l.outcome === "APPLIED");
  const before = processed();
  const last = before[before.length - 1]!.configRevision;
  await via.raw(OpenShell).updateConfig({ global: true, policy: policyWith(host) });
  const after = await until(() => processed().length > before.length && processed(), "the global policy to be applied", 10_000);
  expect(after[after.length - 1]!.configRevision).not.toBe(last);
}

const reachable = await postgresReachable();
if (!reachable && process.env.OSC_REQUIRE_POSTGRES === "1") throw new Error("PostgreSQL unreachable for the cluster tests");

describe.skipIf(!reachable)("three replicas on one database, notifications on", () => {
  let cluster: Cluster;
  let three: Awaited<ReturnType<typeof startThree>>;
  beforeAll(async () => {
    cluster = await createCluster(["sb-fast"]);
    three = await startThree(cluster, "sb-fast");
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("the replica the supervisor connected to owns the sandbox's session in the database", async () => {
    expect(await ownerOf(cluster, "sb-fast")).toBe("B");
  });

  it("an update committed through A for a sandbox owned by B, waited on through C, completes without waiting for the repair path", async () => {
    const { viaA, viaC, supervisor } = three;
    const started = Date.now();
    const committed = await viaA.updatePolicy({ sandbox: "sb-fast", policy: policyWith("a.example.com") });
    const completion = await viaC.awaitCompletion(committed.handle, { timeoutMs: 10_000 });
    const elapsed = Date.now() - started;
    expect(completion.state).toBe("applied");
    // The reconciler would first look at the operation FIRST_CHECK_MS after its commit.
    expect(elapsed).toBeLessThan(FIRST_CHECK_MS);
    expect(appliedRevisions(supervisor)).toContain(`policy ${committed.policyVersion} settings 0`);
  });

  it("waited updates committed and waited through C complete in sequence, each revision applied exactly once", async () => {
    const { viaC, supervisor } = three;
    for (let i = 0; i < 5; i++) {
      const r = await viaC.updatePolicy({ sandbox: "sb-fast", policy: policyWith(`c${i}.example.com`), wait: { timeoutMs: 10_000 } });
      expect(r.completion.state).toBe("applied");
    }
    const settings = await viaC.updateSettings({ sandbox: "sb-fast", key: "log_level", value: "debug", wait: { timeoutMs: 10_000 } });
    expect(settings.completion.state).toBe("applied");
    const applied = appliedRevisions(supervisor);
    expect(new Set(applied).size).toBe(applied.length);
  });

  it("a global policy committed through A reaches the sandbox owned by B, though B had just confirmed the global part it holds", async () => {
    const { viaA, viaC, supervisor } = three;
    // B delivers this update, reading (and so trusting for a while) the global versions.
    const r = await viaC.updateSettings({ sandbox: "sb-fast", key: "log_level", value: "info", wait: { timeoutMs: 10_000 } });
    expect(r.completion.state).toBe("applied");
    // A global change has no operation: only A's notification makes B deliver it (there is no
    // repair path to fall back on), and B must not answer it with the global part it trusts.
    await expectGlobalPolicyApplied(viaA, supervisor, "global.example.com");
  });
});

describe.skipIf(!reachable)("three replicas on one database, notifications off", () => {
  let cluster: Cluster;
  let three: Awaited<ReturnType<typeof startThree>>;
  beforeAll(async () => {
    cluster = await createCluster(["sb-slow"]);
    three = await startThree(cluster, "sb-slow", ["--notify", "off"]);
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("an update through A for a sandbox owned by B, waited on through C, still completes, within the reconcile bound", async () => {
    const { viaA, viaC, supervisor } = three;
    expect(await ownerOf(cluster, "sb-slow")).toBe("B");
    const started = Date.now();
    const committed = await viaA.updatePolicy({ sandbox: "sb-slow", policy: policyWith("slow.example.com") });
    const completion = await viaC.awaitCompletion(committed.handle, { timeoutMs: 15_000 });
    const elapsed = Date.now() - started;
    expect(completion.state).toBe("applied");
    // Nothing told B: it found the operation when it fell due, and C's sweep found the outcome.
    expect(elapsed).toBeGreaterThanOrEqual(FIRST_CHECK_MS - 100);
    // Bound: first check + one reconcile interval + one sweep interval, plus process scheduling slack.
    expect(elapsed).toBeLessThan(FIRST_CHECK_MS + 2 * RECONCILE_MS + 2_000);
    const applied = appliedRevisions(supervisor);
    expect(new Set(applied).size).toBe(applied.length);
  });

  it("a global policy committed through A reaches the sandbox owned by B, which no message tells, by B's periodic check", async () => {
    const { viaA, supervisor } = three;
    // A global change has no operation for the reconciler to find: only the check of the global
    // versions, every reconcile interval, can notice it.
    await expectGlobalPolicyApplied(viaA, supervisor, "global-slow.example.com");
  });
});

