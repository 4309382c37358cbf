// Scratch: the floor's N sessions held, then SIGUSR2 to its gateway for a heap snapshot.
import { FloorStack } from "../floor/stack.js";
import { groupsFor } from "../scenarios/common.js";
import { setTimeout as sleep } from "node:timers/promises";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const n = Number(process.argv[2] ?? 2500);
const stack = await FloorStack.start({ expectReady: n });
try {
  await sleep(1000);
  const b0 = stack.gatewaySample();
  await stack.bootstrap(groupsFor("s", n, 2500), 120_000);
  await sleep(3000);
  const b1 = stack.gatewaySample();
  console.log("rss per session kB", ((b1.rssBytes - b0.rssBytes) / 1024 / n).toFixed(1));
  process.kill(stack.gateway.pid, "SIGUSR2");
  await sleep(8000);
} finally { await stack.stop(); }
