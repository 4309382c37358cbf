// Scratch: whether a process keeps memory per waited update (a leak): the probe shape, the heap
// after a full collection measured (by heap-after-gc-preload.mjs) after each of ROUNDS rounds of N
// updates. Flat after the first round: nothing kept per update.
//   NODE_OPTIONS="--import ./bench/scratch/heap-after-gc-preload.mjs" [HS_TARGET=supervisor.mjs] node --import tsx bench/scratch/retention.ts [N=3000] [ROUNDS=4]
// HS_TARGET=sdk measures this process instead (the SDK client making the updates), no preload needed.
import { appendFileSync, readFileSync, rmSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { setTimeout as sleep } from "node:timers/promises";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { Stack, groupNames } from "../lib/stack.js";
import { createAll, bootstrapAll } from "../scenarios/common.js";
import { policyFor } from "../lib/policies.js";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const N = Number(process.argv[2] ?? 3000);
const ROUNDS = Number(process.argv[3] ?? 4);
const groups = [{ prefix: "p", count: 64 }];
const stack = await Stack.start({ backend: "sqlite", groups, label: "retention" });
try {
  await createAll(stack, groups as never);
  const { supervisors } = await bootstrapAll(stack, groups as never, 60_000);
  const sdk = process.env.HS_TARGET === "sdk";
  const target = sdk ? process.pid : process.env.HS_TARGET === "supervisor.mjs" ? supervisors[0]!.pid : stack.gateway.pid;
  if (sdk) {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    process.on("SIGUSR2", () => {
      gc();
      gc();
      appendFileSync(`/tmp/retained-${process.pid}.txt`, `${process.memoryUsage().heapUsed}\n`);
    });
  }
  const file = `/tmp/retained-${target}.txt`;
  rmSync(file, { force: true });
  const names = groups.flatMap(groupNames as never) as string[];
  const client = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }), token: stack.adminToken });
  let k = 0;
  for (let round = 0; round <= ROUNDS; round++) {
    if (round > 0) {
      const end = k + N;
      await Promise.all(Array.from({ length: 32 }, async (_, c) => {
        while (k < end) { const i = k++; await client.updatePolicy({ sandbox: names[c % names.length]!, policy: policyFor(`x${i}`), wait: true }); }
      }));
    }
    process.kill(target, "SIGUSR2");
    await sleep(1000);
  }
  const heaps = readFileSync(file, "utf8").trim().split("\n").map(Number);
  console.log(`heap after a full GC, MiB, every ${N} updates: ${heaps.map((h) => (h / 2 ** 20).toFixed(1)).join(" ")}`);
  console.log(`kept per update after the first round: ${(((heaps.at(-1)! - heaps[1]!) / ((heaps.length - 2) * N)) / 1024).toFixed(2)} kB`);
} finally { await stack.stop(); }
