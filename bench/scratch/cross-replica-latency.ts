// Added latency of a cross-replica completion: two gateway replicas on one PostgreSQL, the
// sandbox's supervisor on replica A. N sequential waited policy updates (commit + wait for
// "applied") go through A (the owner: same replica) and then through B (commit and wait on B;
// delivery on A reached by NOTIFY, the outcome back to B by NOTIFY). Prints p50/p95/p99/mean.
//
//   node --import tsx bench/scratch/cross-replica-latency.ts [N=200]

import { createCluster, policyWith, until } from "../../gateway/test/cluster/cluster-harness.js";
import { OpenShell, SandboxPhase, workspaceScope } from "openshell-config/raw";

const n = Number(process.argv[2] ?? 200);
const cluster = await createCluster(["lat"]);
try {
  const [a, b] = await Promise.all([cluster.startReplica("A"), cluster.startReplica("B")]);
  const viaA = cluster.client(a.url);
  const viaB = cluster.client(b.url);
  await viaA.raw(OpenShell).createSandbox({ name: "lat", spec: { policy: policyWith("h0.example.com") }, workspaceScope: workspaceScope() });
  cluster.startSupervisor("lat", [a.url]);
  await until(async () => (await viaA.raw(OpenShell).getSandbox({ name: "lat", workspaceScope: workspaceScope() })).sandbox?.status?.phase === SandboxPhase.READY, "READY");
  let v = 0;
  const run = async (client: typeof viaA, count: number) => {
    const ms: number[] = [];
    for (let i = 0; i < count; i++) {
      const t = performance.now();
      const r = await client.updatePolicy({ sandbox: "lat", policy: policyWith(`h${++v}.example.com`), wait: { timeoutMs: 30_000 } });
      ms.push(performance.now() - t);
      if (r.completion.state !== "applied") throw new Error(`update ${v}: ${r.completion.state}`);
    }
    return ms;
  };
  const stats = (ms: number[]) => {
    const s = [...ms].sort((x, y) => x - y);
    const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!.toFixed(1);
    return `p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, p99 ${q(0.99)} ms, mean ${(ms.reduce((x, y) => x + y, 0) / ms.length).toFixed(1)} ms`;
  };
  await run(viaA, 20);
  await run(viaB, 20);
  const same = await run(viaA, n);
  const cross = await run(viaB, n);
  const median = (ms: number[]) => [...ms].sort((x, y) => x - y)[Math.floor(ms.length / 2)]!;
  console.log(`same replica  (${n}): ${stats(same)}`);
  console.log(`cross replica (${n}): ${stats(cross)}`);
  console.log(`added by crossing replicas: ${(median(cross) - median(same)).toFixed(1)} ms at p50`);
} finally {
  await cluster.stop();
}
