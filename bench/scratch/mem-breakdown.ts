// Scratch: N held sessions, then the gateway's memory by kind from its /metrics (heap used, external, RSS), per session.
import { Stack } from "../lib/stack.js";
import { createAll, bootstrapAll, groupsFor } from "../scenarios/common.js";
import { setTimeout as sleep } from "node:timers/promises";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const n = Number(process.argv[2] ?? 2500);
const groups = groupsFor("s", n, 2500);
const stack = await Stack.start({ backend: "sqlite", groups, label: "mem" });
const metrics = async () => {
  const t = (await stack.get("/metrics")).body;
  const pick = (k: string) => Number(new RegExp(`^${k}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(t)?.[1] ?? NaN);
  return { heapUsed: pick("nodejs_heap_size_used_bytes"), heapTotal: pick("nodejs_heap_size_total_bytes"), external: pick("nodejs_external_memory_bytes"), rss: pick("process_resident_memory_bytes") };
};
try {
  await createAll(stack, groups, 2, 48);
  await sleep(1000);
  const m0 = await metrics();
  await bootstrapAll(stack, groups, 180_000);
  for (const wait of [3000, 7000, 20000]) {
    await sleep(wait);
    const m1 = await metrics();
    console.log(`after ${wait} ms more:`);
    for (const k of Object.keys(m0) as (keyof typeof m0)[]) console.log(`  ${k}: ${(m0[k] / 2 ** 20).toFixed(0)} MB -> ${(m1[k] / 2 ** 20).toFixed(0)} MB, ${((m1[k] - m0[k]) / 1024 / n).toFixed(1)} kB per session`);
  }
  if (process.env.HEAP) { process.kill(stack.gateway.pid, "SIGUSR2"); await sleep(Number(process.env.HEAP)); }
} finally { await stack.stop(); }
