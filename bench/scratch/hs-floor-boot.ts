// Scratch: heap samples of the floor gateway while N sessions bootstrap at once (as floorScale),
// with NODE_OPTIONS="--import ./bench/scratch/heap-sample-preload.mjs" HS_TARGET=floor-gateway.mjs.
import { setTimeout as sleep } from "node:timers/promises";
import { FloorStack } from "../floor/stack.js";
import { groupsFor } from "../scenarios/common.js";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const n = Number(process.argv[2] ?? 2500);
const groups = groupsFor("s", n, 2500);
const stack = await FloorStack.start({ expectReady: n, created: groups });
try {
  await sleep(1000);
  const g0 = stack.gatewaySample();
  process.kill(stack.gateway.pid, "SIGUSR2");
  const { results, goAt } = await stack.runTogether([{ kind: "ready", count: n, intervalMs: n > 2000 ? 250 : 100, timeoutMs: 120_000 }], () => {
    for (const g of groups) stack.startSupervisor(g);
  });
  const g1 = stack.gatewaySample();
  process.kill(stack.gateway.pid, "SIGUSR2");
  await sleep(1500);
  console.log(`ready in ${(results[0]!.readyAt - goAt).toFixed(0)} ms; gateway CPU ms/session ${((g1.cpuMs - g0.cpuMs) / n).toFixed(3)}`);
} finally { await stack.stop(); }
