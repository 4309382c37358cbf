// Scratch: N waited updates against the probe shape; SIGUSR2 to the gateway at the start and the end
// (with NODE_OPTIONS="--import ./bench/scratch/heap-sample-preload.mjs", which samples allocations and writes them on that signal).
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { Stack, groupNames } from "../lib/stack.js";
import { createAll, bootstrapAll } from "../scenarios/common.js";
import { policyFor } from "../lib/policies.js";
import { runBuiltPrograms } from "../lib/build.js";
import { setTimeout as sleep } from "node:timers/promises";
await runBuiltPrograms();
const N = Number(process.argv[2] ?? 3000);
const groups = [{ prefix: "p", count: 64 }];
const stack = await Stack.start({ backend: "sqlite", groups, label: "hs" });
try {
  await createAll(stack, groups as never);
  const { supervisors } = await bootstrapAll(stack, groups as never, 60_000);
  // The process the preload samples: the gateway, or with HS_TARGET=supervisor.mjs the supervisor.
  const target = process.env.HS_TARGET === "supervisor.mjs" ? supervisors[0]!.pid : stack.gateway.pid;
  const names = groups.flatMap(groupNames as never) as string[];
  const client = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }), token: stack.adminToken });
  await Promise.all(names.map((s, i) => client.updatePolicy({ sandbox: s, policy: policyFor(`w${i}`), wait: true })));
  process.kill(target, "SIGUSR2");
  await sleep(500);
  let k = 0;
  await Promise.all(Array.from({ length: 32 }, async (_, c) => {
    while (k < N) { const i = k++; await client.updatePolicy({ sandbox: names[c % names.length]!, policy: policyFor(`x${i}`), wait: true }); }
  }));
  process.kill(target, "SIGUSR2");
  await sleep(1500);
} finally { await stack.stop(); }
