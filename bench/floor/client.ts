// A floor client: no SDK, the raw connect-node client of the generated OpenShell service over the
// SDK's transport settings (gRPC, HTTP/2 cleartext, no compression: src/transport/node.ts). The
// same worker protocol as bench/client.ts: one JSON task on stdin, {"type":"ready"}, a "go" line
// for tasks with `barrier`, then {"type":"result",…} (or "error") on stdout.
//   node --import tsx bench/floor/client.ts   (bench/floor/stack.ts starts these)

import { randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { durationFromMs } from "@bufbuild/protobuf/wkt";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import {
  ConfigUpdateOperationState,
  ConfigUpdateWaitMode,
  OpenShell,
  SandboxPhase,
  UpdateConfigRequestSchema,
  workspaceScope,
  type SandboxPolicy,
} from "openshell-config/raw";
import { policyFor } from "../lib/policies.js";
import { serveWorker } from "../lib/worker-protocol.js";

/** Waited policy updates over disjoint sandboxes: `loops` in flight, `ops` in all (`warmupOps` more first, untimed, before ready). */
export interface UpdatesTask { readonly kind: "updates"; readonly sandboxes: readonly string[]; readonly loops: number; readonly ops: number; readonly tag: string; readonly timeoutMs: number; readonly warmupOps?: number }
/** Sequential waited updates of one sandbox after `warmup` untimed ones. */
export interface LatencyTask { readonly kind: "latency"; readonly sandbox: string; readonly n: number; readonly warmup: number }
/** Pages ListSandboxes until `count` sandboxes are READY (as bench/client.ts does against the real gateway). */
export interface ReadyTask { readonly kind: "ready"; readonly count: number; readonly intervalMs: number; readonly timeoutMs: number }
export type FloorTask = UpdatesTask | LatencyTask | ReadyTask;

export interface UpdatesResult {
  readonly completed: number;
  readonly latencyMs: number[];
  readonly mismatches: string[];
  readonly lost: string[];
  readonly endAt: number;
  /** This process's CPU time during the run. */
  readonly cpuMs: number;
}
export type FloorResult<T extends FloorTask> = T extends UpdatesTask
  ? UpdatesResult
  : T extends LatencyTask
    ? { readonly waitedMs: number[]; readonly mismatches: string[] }
    : { readonly readyAt: number; readonly polls: number };

type Rpc = Client<typeof OpenShell>;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const WAIT_MS = 30_000;

/** One waited UpdateConfig, shaped like the SDK's (idempotency key, workspace, server wait bound, call deadline); returns why it is wrong, if it is. */
async function waitedUpdate(rpc: Rpc, sandbox: string, tag: string): Promise<string | undefined> {
  const key = randomUUID();
  const req = create(UpdateConfigRequestSchema, {
    sandbox,
    policy: policyFor(tag) as SandboxPolicy,
    idempotencyKey: key,
    workspaceScope: workspaceScope(),
    waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION,
    waitTimeout: durationFromMs(WAIT_MS - 250),
  });
  const res = await rpc.updateConfig(req, { timeoutMs: WAIT_MS + 1000 });
  const op = res.operation;
  if (op?.state !== ConfigUpdateOperationState.APPLIED) return `${sandbox} ${tag}: ${op ? ConfigUpdateOperationState[op.state] : "no operation"}, expected APPLIED`;
  // The floor gateway carries the idempotency key as the policy hash through the supervisor and back.
  if (res.policyHash !== key) return `${sandbox} ${tag}: the answer is about another update (${res.policyHash})`;
  const rev = op.targetRevision?.component;
  if (rev?.case !== "sandboxConfig" || rev.value.policyVersion !== res.version) return `${sandbox} ${tag}: applied revision ${JSON.stringify(rev?.value, (_, v) => (typeof v === "bigint" ? String(v) : v))} is not version ${res.version}`;
  return undefined;
}

async function updates(rpc: Rpc, t: UpdatesTask): Promise<UpdatesResult> {
  const out = { completed: 0, latencyMs: [] as number[], mismatches: [] as string[], lost: [] as string[] };
  const cpu0 = process.cpuUsage();
  const loops = Math.max(1, Math.min(t.loops, t.sandboxes.length));
  let remaining = t.ops;
  await Promise.all(
    Array.from({ length: loops }, async (_, l) => {
      // Each loop owns the sandboxes l, l+loops, …, as in bench/client.ts.
      const mine = t.sandboxes.filter((_, i) => i % loops === l);
      for (let n = 0; remaining > 0; n++) {
        remaining -= 1;
        const t0 = performance.now();
        try {
          const wrong = await waitedUpdate(rpc, mine[n % mine.length]!, `${t.tag}-l${l}-n${n}`);
          out.latencyMs.push(performance.now() - t0);
          out.completed += 1;
          if (wrong) out.mismatches.push(wrong);
        } catch (err) {
          out.lost.push(`${t.tag}-l${l}-n${n}: ${(err as Error).message}`);
        }
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { ...out, endAt: Date.now(), cpuMs: (cpu.user + cpu.system) / 1000 };
}

async function latency(rpc: Rpc, t: LatencyTask): Promise<FloorResult<LatencyTask>> {
  const out = { waitedMs: [] as number[], mismatches: [] as string[] };
  for (let i = 0; i < t.warmup; i++) {
    const wrong = await waitedUpdate(rpc, t.sandbox, `warm-${i}`);
    if (wrong) out.mismatches.push(wrong);
  }
  for (let i = 0; i < t.n; i++) {
    const t0 = performance.now();
    const wrong = await waitedUpdate(rpc, t.sandbox, `w-${i}`);
    out.waitedMs.push(performance.now() - t0);
    if (wrong) out.mismatches.push(wrong);
  }
  return out;
}

async function ready(rpc: Rpc, t: ReadyTask): Promise<FloorResult<ReadyTask>> {
  const t0 = performance.now();
  for (let polls = 1; ; polls++) {
    let count = 0;
    let pageToken = "";
    do {
      const page = await rpc.listSandboxes({ pageSize: 1000, pageToken, workspaceScope: workspaceScope() });
      count += page.sandboxes.filter((s) => s.status?.phase === SandboxPhase.READY).length;
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    if (count >= t.count) return { readyAt: Date.now(), polls };
    if (performance.now() - t0 > t.timeoutMs) throw new Error(`only ${count} of ${t.count} sandboxes READY after ${t.timeoutMs} ms`);
    await sleep(t.intervalMs);
  }
}

serveWorker<FloorTask & { url: string; barrier?: boolean }>(async (task) => {
  // The same as src/transport/node.ts for gRPC.
  const transport = createGrpcTransport({ baseUrl: task.url, acceptCompression: [], idleConnectionTimeoutMs: 300_000, pingIntervalMs: 30_000 });
  const rpc = createClient(OpenShell, transport);
  await rpc.health({});
  if (task.kind === "updates" && task.warmupOps) {
    // As bench/client.ts: untimed, before "ready".
    const w = await updates(rpc, { ...task, ops: task.warmupOps, tag: `${task.tag}-warm` });
    const problems = [...w.lost, ...w.mismatches];
    if (problems.length > 0 || w.completed !== task.warmupOps) throw new Error(`warm-up: ${w.completed} of ${task.warmupOps}; ${problems.slice(0, 3).join("; ")}`);
  }
  const run = { updates, latency, ready } as Record<FloorTask["kind"], (rpc: Rpc, t: never) => Promise<unknown>>;
  return (t) => run[t.kind](rpc, t as never);
});
