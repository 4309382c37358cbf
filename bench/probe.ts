// A quick probe for profiling work, not a scenario: one supervisor process with 64 sandboxes, N
// waited policy updates from this process with C in flight; prints updates/s, latency, CPU per
// update of the gateway, the supervisor and this client, store transactions and COMMITs per
// update, and store calls per update (from the gateway's /metrics).
//   node --import tsx bench/probe.ts [sqlite|postgres] [N=2000] [C=32]
// PROF=DIR writes a CPU profile of the gateway there; OSC_BENCH_PROF_ALL=DIR profiles every process.
// PROBE_SANDBOXES=N hosts N sandboxes instead of 64; PROBE_ROTATE=1 sends each update to the next
// sandbox in turn (as the group-commit scenario does) rather than each loop to its own.
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { Stack, groupNames } from "./lib/stack.js";
import { createAll, bootstrapAll } from "./scenarios/common.js";
import { sampleProc } from "./lib/proc.js";
import { policyFor } from "./lib/policies.js";
import { runBuiltPrograms } from "./lib/build.js";

await runBuiltPrograms();

const backend = (process.argv[2] ?? "sqlite") as "sqlite" | "postgres";
const N = Number(process.argv[3] ?? 2000);
const C = Number(process.argv[4] ?? 32);
const groups = [{ prefix: "p", count: Number(process.env.PROBE_SANDBOXES ?? 64) }];
const rotate = process.env.PROBE_ROTATE === "1";
const prof = process.env.PROF; const stack = await Stack.start({ backend, groups, label: "probe", countPgQueries: backend === "postgres", ...(prof ? { cpuProfDir: prof } : {}) });
async function metrics() {
  const t = (await stack.get("/metrics")).body;
  const m = new Map<string, number>();
  for (const line of t.split("\n")) {
    if (line.startsWith("#") || !line) continue;
    const i = line.lastIndexOf(" ");
    m.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return m;
}
try {
  await createAll(stack, groups as never);
  const { supervisors } = await bootstrapAll(stack, groups as never, 60_000);
  const names = groups.flatMap(groupNames as never) as string[];
  const client = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }), token: stack.adminToken });
  // warm up
  await Promise.all(names.map((s, i) => client.updatePolicy({ sandbox: s, policy: policyFor(`w${i}`), wait: true })));
  const m0 = await metrics();
  const pg0 = backend === "postgres" ? await stack.pgQueries() : 0;
  const sup0 = supervisors.map((c) => sampleProc(c.pid).cpuMs);
  const me0 = process.cpuUsage();
  const t0 = performance.now();
  let k = 0;
  const lat: number[] = [];
  await Promise.all(Array.from({ length: C }, async (_, c) => {
    while (k < N) {
      const i = k++;
      const a = performance.now();
      const r = await client.updatePolicy({ sandbox: names[(rotate ? i : c) % names.length]!, policy: policyFor(`x${i}`), wait: true });
      lat.push(performance.now() - a);
      if (r.completion.state !== "applied") throw new Error(r.completion.state);
    }
  }));
  const wall = performance.now() - t0;
  const m1 = await metrics();
  const pg1 = backend === "postgres" ? await stack.pgQueries() : 0;
  const supMs = supervisors.map((c, i) => sampleProc(c.pid).cpuMs - sup0[i]!).reduce((a, b) => a + b, 0);
  const me = process.cpuUsage(me0);
  console.log(`supervisor CPU ms/op ${(supMs / N).toFixed(3)}; client CPU ms/op ${((me.user + me.system) / 1000 / N).toFixed(3)}`);
  const d = (k: string) => (m1.get(k) ?? 0) - (m0.get(k) ?? 0);
  lat.sort((a, b) => a - b);
  console.log(`${backend}: ${N} ops in ${wall.toFixed(0)} ms = ${(N / wall * 1000).toFixed(0)}/s; p50 ${lat[Math.floor(N / 2)]!.toFixed(1)} p99 ${lat[Math.floor(N * 0.99)]!.toFixed(1)}`);
  console.log(`gateway CPU ms/op ${(d("process_cpu_seconds_total") * 1000 / N).toFixed(3)}; commits/op ${(d("openshell_gateway_store_commits_total") / N).toFixed(2)}; tx/op ${(d("openshell_gateway_store_transactions_total") / N).toFixed(2)}${backend === "postgres" ? `; pg queries/op ${((pg1 - pg0) / N).toFixed(2)}` : ""}`);
  const ops = [...m1.keys()].filter((k) => k.startsWith("openshell_gateway_store_operation_seconds_count"));
  console.log(ops.map((k) => `${/op="([^"]+)"/.exec(k)![1]}=${(d(k) / N).toFixed(2)}`).filter((s) => !s.endsWith("=0.00")).join(" "));
  const rpcs = [...m1.keys()].filter((k) => k.startsWith("openshell_gateway_rpc_requests_total"));
  console.log(rpcs.map((k) => `${k.slice(36)}=${(d(k) / N).toFixed(2)}`).filter((s) => !s.endsWith("=0.00")).join(" "));
} finally {
  await stack.stop();
}
