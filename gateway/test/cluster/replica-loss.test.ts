// Losing a replica loses nothing. Replica B holds the sandbox's supervisor session and a caller's
// wait (through a TCP front standing in for a load balancer) when it is killed with SIGKILL in the
// middle of an apply. The supervisor reconnects to C, which takes the session over; every
// committed operation becomes terminal; the SDK's wait, cut off with the connection, resumes by
// its idempotency key on A; and no revision is created or applied twice.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { appliedRevisions, createCluster, ownerOf, policyWith, postgresReachable, startThree, until, type Cluster } from "./cluster-harness.js";

const reachable = await postgresReachable();
if (!reachable && process.env.OSC_REQUIRE_POSTGRES === "1") throw new Error("PostgreSQL unreachable for the cluster tests");

const SANDBOX = "sb-loss";
const LEASE_MS = 3_000; // the harness's --lease

describe.skipIf(!reachable)("replica loss", () => {
  let cluster: Cluster;
  let three: Awaited<ReturnType<typeof startThree>>;
  beforeAll(async () => {
    cluster = await createCluster([SANDBOX]);
    // Slow applies keep updates in flight when B dies.
    // Long enough that B cannot finish the first apply in the moments before it is killed.
    three = await startThree(cluster, SANDBOX, [], ["--apply-delay-ms", "2000"]);
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });

  it("after kill -9 of the owner mid-update every committed operation is terminal once the supervisor reconnects elsewhere, and the cut-off wait resumes by key on another replica", async () => {
    const { a, b, c, viaA, supervisor } = three;
    expect(await ownerOf(cluster, SANDBOX)).toBe("B");
    const front = await cluster.front(() => [b.url, a.url]);
    const viaFront = cluster.client(front.url);
    try {
      // Committed and waited on B (the front prefers it while it lives).
      const waited = viaFront.updatePolicy({ sandbox: SANDBOX, policy: policyWith("waited.example.com"), idempotencyKey: "loss-waited", wait: { timeoutMs: 30_000 } });
      // Committed on A, not waited: only the database knows about it when B dies.
      const setting = await viaA.updateSettings({ sandbox: SANDBOX, key: "log_level", value: "debug" });
      const pending = () => cluster.query<{ n: string }>("SELECT count(*) AS n FROM operations WHERE state = 1");
      await until(async () => Number((await pending())[0]!.n) >= 2 && true, "both operations to be committed");
      await new Promise((r) => setTimeout(r, 250)); // the first is now being applied
      await b.kill("SIGKILL");

      const completion = (await waited).completion;
      expect(["applied", "superseded"]).toContain(completion.state);
      // Committed on B; the SDK's retry after UNAVAILABLE replayed it by key on A.
      expect(b.json().some((l) => l.msg === "update committed" && l.sandbox === SANDBOX)).toBe(true);
      expect(a.json().some((l) => l.msg === "update replayed" && l.sandbox === SANDBOX)).toBe(true);
      await until(async () => Number((await pending())[0]!.n) === 0 && true, "every operation to be terminal", 20_000);
      expect((await viaA.getOperation(setting.handle)).state).toBe("applied");
      expect(await ownerOf(cluster, SANDBOX)).toBe("C");
      expect(supervisor.json().some((l) => l.msg === "session accepted" && l.gateway === c.url)).toBe(true);

      // The retried wait replayed the original commit: one revision per request, none twice.
      const { revisions } = await viaA.raw(OpenShell).listSandboxPolicies({ sandbox: SANDBOX, workspaceScope: workspaceScope() });
      expect(revisions.map((r) => r.version).sort()).toEqual([1, 2]);
      const applied = appliedRevisions(supervisor);
      expect(new Set(applied).size).toBe(applied.length);

      // B's leases run out: nothing is held in its name any more.
      await new Promise((r) => setTimeout(r, LEASE_MS));
      const heldByB = await cluster.query("SELECT 1 FROM session_owners WHERE replica_id = 'B' AND lease_until > now()");
      expect(heldByB).toEqual([]);
    } finally {
      front.close();
    }
  }, 60_000);
});
