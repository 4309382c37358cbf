// Scratch: allocations of the floor gateway (with the provider message) over N waited updates of
// the probe shape; with NODE_OPTIONS="--import ./bench/scratch/heap-sample-preload.mjs" and
// HS_TARGET=floor-gateway.mjs (or floor-supervisor.mjs), SIGUSR2 at the start and the end.
import { FloorStack } from "../floor/stack.js";
import { groupsFor } from "../scenarios/common.js";
import { groupNames } from "../lib/stack.js";
import { setTimeout as sleep } from "node:timers/promises";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const N = Number(process.argv[2] ?? 3000);
const groups = groupsFor("f", 64, 64);
const stack = await FloorStack.start({ expectReady: 64, providerToo: true });
try {
  await stack.bootstrap(groups, 60_000);
  const target = process.env.HS_TARGET === "floor-supervisor.mjs" ? stack.supervisors[0]!.pid : stack.gateway.pid;
  const names = groups.flatMap(groupNames);
  await stack.runTogether([{ kind: "updates", sandboxes: names, loops: 32, ops: N, tag: "run", timeoutMs: 120_000, warmupOps: 1000 }], async () => {
    process.kill(target, "SIGUSR2");
    await sleep(300);
  });
  process.kill(target, "SIGUSR2");
  await sleep(1500);
} finally { await stack.stop(); }
