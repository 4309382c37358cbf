// Scratch: profiles the gateway (PROF=DIR) while N sessions bootstrap at once.
import { Stack } from "../lib/stack.js";
import { createAll, bootstrapAll, groupsFor } from "../scenarios/common.js";
import { setTimeout as sleep } from "node:timers/promises";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const n = Number(process.argv[2] ?? 2500);
const groups = groupsFor("s", n, 2500);
const stack = await Stack.start({ backend: "sqlite", groups, label: "profb", cpuProfDir: process.env.PROF! });
try {
  await createAll(stack, groups, 2, 48);
  await sleep(1000);
  const g0 = stack.gatewaySample();
  const b = await bootstrapAll(stack, groups, 120_000);
  const g1 = stack.gatewaySample();
  console.log(`ready in ${b.ms.toFixed(0)} ms; gateway CPU ms/session ${((g1.cpuMs - g0.cpuMs) / n).toFixed(3)}`);
} finally { await stack.stop(); }
