// Scratch: the gateway's heap per held session after a full collection (not RSS, which the
// collector's timing moves), ours and the floor's: N sandboxes created, the heap measured, N
// sessions bootstrapped and held, the heap measured again (heap-after-gc-preload.mjs, which this
// script asks for through NODE_OPTIONS itself).
//   node --import tsx bench/scratch/session-heap.ts [N=2500] [ours|floor|both]
import { readFileSync, rmSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Stack } from "../lib/stack.js";
import { FloorStack } from "../floor/stack.js";
import { createAll, bootstrapAll, groupsFor } from "../scenarios/common.js";
import { runBuiltPrograms } from "../lib/build.js";
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} --import ${new URL("./heap-after-gc-preload.mjs", import.meta.url).pathname}`;
await runBuiltPrograms();
const n = Number(process.argv[2] ?? 2500);
const which = process.argv[3] ?? "both";
const groups = groupsFor("s", n, 2500);

async function heapOf(pid: number): Promise<number> {
  process.kill(pid, "SIGUSR2");
  await sleep(1500);
  return Number(readFileSync(`/tmp/retained-${pid}.txt`, "utf8").trim().split("\n").at(-1));
}

function report(label: string, before: number, after: number) {
  console.log(`${label}: heap after a full GC ${(before / 2 ** 20).toFixed(1)} → ${(after / 2 ** 20).toFixed(1)} MiB with ${n} sessions: ${((after - before) / 1024 / n).toFixed(1)} kB per session`);
}

if (which !== "floor") {
  process.env.HS_TARGET = "/gateway.mjs";
  const stack = await Stack.start({ backend: "sqlite", groups, label: "session-heap" });
  try {
    await createAll(stack, groups, 2, 48);
    rmSync(`/tmp/retained-${stack.gateway.pid}.txt`, { force: true });
    const before = await heapOf(stack.gateway.pid);
    await bootstrapAll(stack, groups, 180_000);
    await sleep(3000);
    report("ours", before, await heapOf(stack.gateway.pid));
  } finally {
    await stack.stop();
  }
}
if (which !== "ours") {
  process.env.HS_TARGET = "/floor-gateway.mjs";
  const floor = await FloorStack.start({ expectReady: n, created: groups });
  try {
    rmSync(`/tmp/retained-${floor.gateway.pid}.txt`, { force: true });
    const before = await heapOf(floor.gateway.pid);
    await floor.bootstrap(groups, 180_000);
    await sleep(3000);
    report("floor", before, await heapOf(floor.gateway.pid));
  } finally {
    await floor.stop();
  }
}
