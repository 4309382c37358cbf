// Scratch: sequential updates of one sandbox (one in flight), commit-only and waited, by the SDK
// and by the raw connect client, then against the floor (with and without the provider message):
// p50 and p10 latency and CPU per update of the gateway, the supervisor and this client.
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

await runBuiltPrograms();
const N = Number(process.argv[2] ?? 300);
const groups = [{ prefix: "s", count: 1 }];
const stack = await Stack.start({ backend: "sqlite", groups, label: "seq" });
try {
  await createAll(stack, groups as never);
  const { supervisors } = await bootstrapAll(stack, groups as never, 60_000);
  const sdk = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }), token: stack.adminToken });
  const raw = createClient(OpenShell, createGrpcTransport({ baseUrl: stack.url, acceptCompression: [] }));
  const headers = { authorization: `Bearer ${stack.adminToken}` };
  let k = 0;
  const modes: Record<string, () => Promise<unknown>> = {
    "sdk commit": () => sdk.updatePolicy({ sandbox: "s0000", policy: policyFor(`c${k++}`) }),
    "sdk waited": () => sdk.updatePolicy({ sandbox: "s0000", policy: policyFor(`w${k++}`), wait: true }),
    "raw commit": () => raw.updateConfig(create(UpdateConfigRequestSchema, { sandbox: "s0000", policy: policyFor(`r${k++}`) as SandboxPolicy, idempotencyKey: crypto.randomUUID(), workspaceScope: workspaceScope() }), { headers }),
    "raw waited": () => raw.updateConfig(create(UpdateConfigRequestSchema, { sandbox: "s0000", policy: policyFor(`q${k++}`) as SandboxPolicy, idempotencyKey: crypto.randomUUID(), workspaceScope: workspaceScope(), waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION, waitTimeout: durationFromMs(20_000) }), { headers }),
    "raw get": () => raw.getSandboxConfig({ name: "s0000", workspaceScope: workspaceScope() } as never, { headers }),
  };
  for (const round of [0, 1]) for (const [name, fn] of Object.entries(modes).filter(([n]) => !process.env.MODES || process.env.MODES.split(",").includes(n))) {
    for (let i = 0; i < 30; i++) await fn();
    const m0 = await stack.metrics();
    const s0 = sampleProc(supervisors[0]!.pid).cpuMs;
    const c0 = process.cpuUsage();
    const xs: number[] = [];
    for (let i = 0; i < N; i++) { const t = performance.now(); await fn(); xs.push(performance.now() - t); }
    const m1 = await stack.metrics();
    const c = process.cpuUsage(c0);
    xs.sort((a, b) => a - b);
    const g = ((m1.get("process_cpu_seconds_total")! - m0.get("process_cpu_seconds_total")!) * 1000) / N;
    if (round === 1) console.log(`${name.padEnd(11)} p50 ${xs[N >> 1]!.toFixed(2)} p10 ${xs[Math.floor(N * 0.1)]!.toFixed(2)} ms; CPU/op gateway ${g.toFixed(2)} supervisor ${((sampleProc(supervisors[0]!.pid).cpuMs - s0) / N).toFixed(2)} client ${((c.user + c.system) / 1000 / N).toFixed(2)}`);
  }
} finally {
  await stack.stop();
}
for (const providerToo of process.env.FLOORS === "prov" ? [true] : [false, true]) {
  const floor = await FloorStack.start({ providerToo, expectReady: 1 });
  try {
    await floor.bootstrap(groups, 60_000);
    const raw = createClient(OpenShell, createGrpcTransport({ baseUrl: floor.url, acceptCompression: [] }));
    let k = 0;
    const fn = () => raw.updateConfig(create(UpdateConfigRequestSchema, { sandbox: "s0000", policy: policyFor(`f${k++}`) as SandboxPolicy, idempotencyKey: crypto.randomUUID(), workspaceScope: workspaceScope(), waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION, waitTimeout: durationFromMs(20_000) }));
    for (let i = 0; i < 60; i++) await fn();
    const g0 = floor.gatewaySample().cpuMs, s0 = sampleProc(floor.supervisors[0]!.pid).cpuMs, c0 = process.cpuUsage();
    const xs: number[] = [];
    for (let i = 0; i < N; i++) { const t = performance.now(); await fn(); xs.push(performance.now() - t); }
    const c = process.cpuUsage(c0);
    xs.sort((a, b) => a - b);
    console.log(`floor${providerToo ? "+prov" : "     "} p50 ${xs[N >> 1]!.toFixed(2)} p10 ${xs[Math.floor(N * 0.1)]!.toFixed(2)} ms; CPU/op gateway ${((floor.gatewaySample().cpuMs - g0) / N).toFixed(2)} supervisor ${((sampleProc(floor.supervisors[0]!.pid).cpuMs - s0) / N).toFixed(2)} client ${((c.user + c.system) / 1000 / N).toFixed(2)}`);
  } finally {
    await floor.stop();
  }
}
