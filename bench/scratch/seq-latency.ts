// Scratch: sequential updates of one sandbox (one in flight), commit-only and waited, by the SDK
// and by the raw connect client, then against the floor (with and without the provider message):
// p50 and minimum latency and CPU per update of the gateway, the supervisor and this client.
// MODES="sdk waited,raw commit" picks the modes; FLOORS=prov runs the floor with the provider message only.
//   node --import tsx bench/scratch/seq-latency.ts [N=300]
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { ConfigUpdateWaitMode, OpenShell, UpdateConfigRequestSchema, workspaceScope, type SandboxPolicy } from "openshell-config/raw";
import { Stack } from "../lib/stack.js";
import { FloorStack } from "../floor/stack.js";
import { createAll, bootstrapAll } from "../scenarios/common.js";
import { sampleProc } from "../lib/proc.js";
import { policyFor } from "../lib/policies.js";
import { runBuiltPrograms } from "../lib/build.js";
import { summarize } from "../lib/stats.js";

await runBuiltPrograms();
const N = Number(process.argv[2] ?? 300);
const groups = [{ prefix: "s", count: 1 }];

/** `warmup` untimed calls of `fn`, then N timed ones one at a time; prints latency and every process's CPU per call. */
async function measure(label: string, fn: () => Promise<unknown>, warmup: number, gatewayPid: number, supervisorPid: number): Promise<void> {
  for (let i = 0; i < warmup; i++) await fn();
  const g0 = sampleProc(gatewayPid).cpuMs;
  const s0 = sampleProc(supervisorPid).cpuMs;
  const c0 = process.cpuUsage();
  const xs: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    await fn();
    xs.push(performance.now() - t);
  }
  const c = process.cpuUsage(c0);
  const perOp = (ms: number) => (ms / N).toFixed(2);
  const { p50, min } = summarize(xs);
  console.log(`${label.padEnd(11)} p50 ${p50.toFixed(2)} min ${min.toFixed(2)} ms; CPU/op gateway ${perOp(sampleProc(gatewayPid).cpuMs - g0)} supervisor ${perOp(sampleProc(supervisorPid).cpuMs - s0)} client ${perOp((c.user + c.system) / 1000)}`);
}

const waited = (tag: string) =>
  create(UpdateConfigRequestSchema, { sandbox: "s0000", policy: policyFor(tag) as SandboxPolicy, idempotencyKey: crypto.randomUUID(), workspaceScope: workspaceScope(), waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION, waitTimeout: durationFromMs(20_000) });
let k = 0;
const stack = await Stack.start({ backend: "sqlite", groups, label: "seq" });
try {
  await createAll(stack, groups as never);
  const { supervisors } = await bootstrapAll(stack, groups as never, 60_000);
  const sdk = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }), token: stack.adminToken });
  const raw = createClient(OpenShell, createGrpcTransport({ baseUrl: stack.url, acceptCompression: [] }));
  const headers = { authorization: `Bearer ${stack.adminToken}` };
  const modes: Record<string, () => Promise<unknown>> = {
    "sdk commit": () => sdk.updatePolicy({ sandbox: "s0000", policy: policyFor(`c${k++}`) }),
    "sdk waited": () => sdk.updatePolicy({ sandbox: "s0000", policy: policyFor(`w${k++}`), wait: true }),
    "raw commit": () => raw.updateConfig(create(UpdateConfigRequestSchema, { sandbox: "s0000", policy: policyFor(`r${k++}`) as SandboxPolicy, idempotencyKey: crypto.randomUUID(), workspaceScope: workspaceScope() }), { headers }),
    "raw waited": () => raw.updateConfig(waited(`q${k++}`), { headers }),
    "raw get": () => raw.getSandboxConfig({ name: "s0000", workspaceScope: workspaceScope() } as never, { headers }),
  };
  const picked = Object.entries(modes).filter(([n]) => !process.env.MODES || process.env.MODES.split(",").includes(n));
  // Every path is warmed up before any is measured.
  for (const [, fn] of picked) for (let i = 0; i < N; i++) await fn();
  for (const [name, fn] of picked) await measure(name, fn, 30, stack.gateway.pid, supervisors[0]!.pid);
} finally {
  await stack.stop();
}
for (const providerToo of process.env.FLOORS === "prov" ? [true] : [false, true]) {
  const floor = await FloorStack.start({ providerToo, expectReady: 1 });
  try {
    await floor.bootstrap(groups, 60_000);
    const raw = createClient(OpenShell, createGrpcTransport({ baseUrl: floor.url, acceptCompression: [] }));
    await measure(providerToo ? "floor+prov" : "floor", () => raw.updateConfig(waited(`f${k++}`)), 60, floor.gateway.pid, floor.supervisors[0]!.pid);
  } finally {
    await floor.stop();
  }
}
