// Scratch (not a scenario): N sessions held, then SIGUSR2 to the gateway for a heap snapshot.
import { Stack } from "../lib/stack.js";
import { createAll, bootstrapAll, groupsFor } from "../scenarios/common.js";
import { setTimeout as sleep } from "node:timers/promises";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const n = Number(process.argv[2] ?? 2500);
const groups = groupsFor("s", n, 2500);
const stack = await Stack.start({ backend: "sqlite", groups, label: "heap" });
try {
  await createAll(stack, groups, 2, 48);
  await sleep(1000);
  const b0 = stack.gatewaySample();
  await bootstrapAll(stack, groups, 120_000);
  await sleep(3000);
  const b1 = stack.gatewaySample();
  console.log("rss per session kB", ((b1.rssBytes - b0.rssBytes) / 1024 / n).toFixed(1));
  process.kill(stack.gateway.pid, "SIGUSR2");
  await sleep(15000);
} finally { await stack.stop(); }
