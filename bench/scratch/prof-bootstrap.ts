// Scratch: profiles the gateway (PROF=DIR) while N sessions bootstrap at once.
import { Stack } from "../lib/stack.js";
import { createAll, bootstrapAll, groupsFor } from "../scenarios/common.js";
import { setTimeout as sleep } from "node:timers/promises";
import { runBuiltPrograms } from "../lib/build.js";
await runBuiltPrograms();
const n = Number(process.argv[2] ?? 2500);
const groups = groupsFor("s", n, 2500);
const stack = await Stack.start({ backend: "sqlite", groups, label: "profb", ...(process.env.PROF ? { cpuProfDir: process.env.PROF } : {}) });
try {
  await createAll(stack, groups, 2, 48);
  await sleep(1000);
  const metrics = async () => new Map((await stack.get("/metrics")).body.split("\n").filter((l) => l && !l.startsWith("#")).map((l) => [l.slice(0, l.lastIndexOf(" ")), Number(l.slice(l.lastIndexOf(" ") + 1))] as const));
  const m0 = await metrics();
  // With a preload that samples allocations on SIGUSR2 (HS=1): the bootstrap's window only.
  if (process.env.HS) process.kill(stack.gateway.pid, "SIGUSR2");
  const g0 = stack.gatewaySample();
  const b = await bootstrapAll(stack, groups, 120_000);
  const g1 = stack.gatewaySample();
  if (process.env.HS) (process.kill(stack.gateway.pid, "SIGUSR2"), await sleep(1500));
  const m1 = await metrics();
  const d = (k: string) => (m1.get(k) ?? 0) - (m0.get(k) ?? 0);
  console.log([...m1.keys()].filter((k) => k.startsWith("openshell_gateway_store_operation_seconds_count") || k.startsWith("openshell_gateway_rpc_requests_total")).map((k) => `${k.replace(/^openshell_gateway_(store_operation_seconds_count|rpc_requests_total)/, "")}=${(d(k) / n).toFixed(2)}`).filter((s) => !s.endsWith("=0.00")).join(" "));
  console.log(`ready in ${b.ms.toFixed(0)} ms; gateway CPU ms/session ${((g1.cpuMs - g0.cpuMs) / n).toFixed(3)}`);
} finally { await stack.stop(); }
