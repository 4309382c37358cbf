// A benchmark client: one process using the SDK over gRPC (HTTP/2 cleartext, or TLS with `ca`). It reads one JSON
// task from the first line of stdin, prints {"type":"ready"} and, for tasks with `barrier`, waits
// for a "go" line, does the work, and prints {"type":"result","result":…} (or "error") on stdout.
//   node --import tsx bench/client.ts   (the orchestrator, bench/lib/stack.ts, starts these)

import { CompletionTimeoutError, createConfigClient, type ConfigClient } from "openshell-config";
import { policyFor } from "./lib/policies.js";
import { serveWorker } from "./lib/worker-protocol.js";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, PolicyStatus, SandboxPhase, workspaceScope } from "openshell-config/raw";

interface Common {
  readonly url: string;
  readonly token: string;
  /** The gateway's CA (PEM) when it serves TLS. */
  readonly ca?: string;
  readonly barrier?: boolean;
}
/** Creates sandboxes (setup, not measured). */
export interface CreateTask { readonly kind: "create"; readonly names: readonly string[]; readonly concurrency: number }
/** Sequential updates of one sandbox: commit-only calls, then (unless `commitOnly`) waited calls. */
export interface LatencyTask { readonly kind: "latency"; readonly sandbox: string; readonly n: number; readonly warmup: number; readonly commitOnly?: boolean }
/** The polling baseline: commit, then GetSandboxPolicyStatus every `pollMs` until LOADED. */
export interface PollTask { readonly kind: "poll"; readonly sandbox: string; readonly n: number; readonly pollMs: number; readonly phaseMs: number }
/** Concurrent waited updates over disjoint sandboxes: policy, settings, invalid, superseded pairs (or `policyOnly`: valid policy updates only, as the floor sends). */
export interface FleetTask { readonly kind: "fleet"; readonly sandboxes: readonly string[]; readonly loops: number; readonly ops: number; readonly tag: string; readonly timeoutMs: number; readonly policyOnly?: boolean }
/**
 * Waited policy updates only, over disjoint sandboxes (the probe's shape; the floor client runs the
 * same). `warmupOps`: that many more first, untimed, in this process before it says ready.
 */
export interface WaitedTask { readonly kind: "waited"; readonly sandboxes: readonly string[]; readonly loops: number; readonly ops: number; readonly tag: string; readonly timeoutMs: number; readonly warmupOps?: number }
/** One commit-only policy update per sandbox. */
export interface CommitTask { readonly kind: "commit"; readonly sandboxes: readonly string[]; readonly concurrency: number; readonly tag: string }
/** Reads operations back and compares them with the expected states (`a|b` = either). */
export interface CheckTask { readonly kind: "check"; readonly ids: readonly string[]; readonly expect: readonly string[]; readonly concurrency: number }
/** Pages ListSandboxes until `count` sandboxes are READY; reports when. */
export interface ReadyTask { readonly kind: "ready"; readonly count: number; readonly intervalMs: number; readonly timeoutMs: number }

export type Task = CreateTask | LatencyTask | PollTask | FleetTask | WaitedTask | CommitTask | CheckTask | ReadyTask;

export interface Ops {
  /** Operation ids and the states each may end in, for the final check. */
  readonly ids: string[];
  readonly expect: string[];
}
export interface FleetResult extends Ops {
  readonly latencyMs: number[];
  readonly byKind: Record<string, number>;
  readonly byState: Record<string, number>;
  readonly mismatches: string[];
  readonly lost: string[];
  readonly stuck: string[];
  readonly endAt: number;
  /** This client process's CPU time during the run. */
  readonly cpuMs: number;
}
export interface CheckResult { readonly byState: Record<string, number>; readonly mismatches: string[]; readonly pending: number }
export type WorkerResult<T extends Task> = T extends CreateTask
  ? { readonly created: number; readonly ms: number }
  : T extends LatencyTask
    ? { readonly commitMs: number[]; readonly waitedMs: number[]; readonly serverMs: number[]; readonly byState: Record<string, number>; readonly mismatches: string[] }
    : T extends PollTask
      ? { readonly latencyMs: number[]; readonly supervisorMs: number[]; readonly byStatus: Record<string, number> }
      : T extends FleetTask | WaitedTask
        ? FleetResult
        : T extends CommitTask
          ? Ops & { readonly ms: number }
          : T extends CheckTask
            ? CheckResult
            : { readonly readyAt: number; readonly polls: number; readonly lastPollMs: number };

const bump = (m: Record<string, number>, k: string, by = 1) => void (m[k] = (m[k] ?? 0) + by);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Runs `fn` over `items` with at most `n` in flight. */
async function pool<T>(items: readonly T[], n: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(n, items.length)) }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i]!, i);
      }
    }),
  );
}

async function createSandboxes(client: ConfigClient, t: CreateTask): Promise<WorkerResult<CreateTask>> {
  const raw = client.raw(OpenShell);
  const t0 = performance.now();
  await pool(t.names, t.concurrency, async (name) => {
    await raw.createSandbox({ name, spec: { policy: policyFor("initial") }, workspaceScope: workspaceScope() });
  });
  return { created: t.names.length, ms: performance.now() - t0 };
}

async function latency(client: ConfigClient, t: LatencyTask): Promise<WorkerResult<LatencyTask>> {
  const out = { commitMs: [] as number[], waitedMs: [] as number[], serverMs: [] as number[], byState: {}, mismatches: [] as string[] };
  let k = 0;
  const check = (state: string, what: string) => {
    bump(out.byState, state);
    if (state !== "applied") out.mismatches.push(`${what}: ${state}`);
  };
  for (let i = 0; i < t.warmup; i++) await client.updatePolicy({ sandbox: t.sandbox, policy: policyFor(`warm-${i}`), wait: true });
  // Commit-only: the commit's round trip; the outcome is awaited (untimed) before the next one.
  for (let i = 0; i < t.n; i++) {
    const t0 = performance.now();
    const r = await client.updatePolicy({ sandbox: t.sandbox, policy: policyFor(`c-${k++}`) });
    out.commitMs.push(performance.now() - t0);
    check((await client.awaitCompletion(r.handle, { timeoutMs: 30_000 })).state, `commit #${i}`);
  }
  // Waited: commit and wait for the sandbox to apply, in one call.
  for (let i = 0; i < (t.commitOnly ? 0 : t.n); i++) {
    const t0 = performance.now();
    const r = await client.updatePolicy({ sandbox: t.sandbox, policy: policyFor(`w-${k++}`), wait: { timeoutMs: 30_000 } });
    out.waitedMs.push(performance.now() - t0);
    const c = r.completion;
    if (c.createdAt && c.completedAt) out.serverMs.push(c.completedAt.getTime() - c.createdAt.getTime());
    check(c.state, `waited #${i}`);
  }
  return out;
}

async function poll(client: ConfigClient, t: PollTask): Promise<WorkerResult<PollTask>> {
  const raw = client.raw(OpenShell);
  const out = { latencyMs: [] as number[], supervisorMs: [] as number[], byStatus: {} as Record<string, number> };
  // First the polling supervisor loads what is there now (its first poll), untimed.
  for (const t0 = performance.now(); (await raw.getSandboxPolicyStatus({ sandbox: t.sandbox, workspaceScope: workspaceScope() })).revision?.status !== PolicyStatus.LOADED; ) {
    if (performance.now() - t0 > 120_000) throw new Error("the polling supervisor never reported the initial policy LOADED");
    await sleep(100);
  }
  for (let i = 0; i < t.n; i++) {
    // Commit at a random point of the supervisor's poll cycle: back-to-back updates would
    // otherwise each start just after a poll (when the previous one was seen) and wait a whole cycle.
    await sleep(Math.random() * t.phaseMs);
    const t0 = performance.now();
    const r = await client.updatePolicy({ sandbox: t.sandbox, policy: policyFor(`p-${i}-${Date.now()}`) });
    for (;;) {
      const s = await raw.getSandboxPolicyStatus({ sandbox: t.sandbox, version: r.policyVersion, workspaceScope: workspaceScope() });
      const rev = s.revision!;
      if (rev.status === PolicyStatus.LOADED || rev.status === PolicyStatus.FAILED) {
        out.latencyMs.push(performance.now() - t0);
        bump(out.byStatus, PolicyStatus[rev.status]!);
        const created = rev.createdTime, loaded = rev.loadedTime;
        if (created && loaded) out.supervisorMs.push(Number(loaded.seconds - created.seconds) * 1000 + (loaded.nanos - created.nanos) / 1e6);
        break;
      }
      if (performance.now() - t0 > 120_000) throw new Error(`policy version ${r.policyVersion} not loaded after 120 s (polling)`);
      await sleep(t.pollMs);
    }
  }
  return out;
}

async function fleet(client: ConfigClient, t: FleetTask): Promise<FleetResult> {
  const out: FleetResult = { ids: [], expect: [], latencyMs: [], byKind: {}, byState: {}, mismatches: [], lost: [], stuck: [], endAt: 0, cpuMs: 0 };
  const cpu0 = process.cpuUsage();
  const loops = Math.max(1, Math.min(t.loops, t.sandboxes.length));
  let remaining = t.ops;
  const record = (id: string | undefined, state: string, expect: string, ms: number, what: string) => {
    bump(out.byState, state);
    out.latencyMs.push(ms);
    if (id) (out.ids.push(id), out.expect.push(expect));
    if (!expect.split("|").includes(state)) out.mismatches.push(`${what} (${id}): ${state}, expected ${expect}`);
  };
  const guard = async (what: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      if (err instanceof CompletionTimeoutError) out.stuck.push(`${what} (${err.operationId ?? "id unknown"}): no outcome within ${t.timeoutMs} ms`);
      else out.lost.push(`${what}: ${(err as Error).message}`);
    }
  };
  const wait = { timeoutMs: t.timeoutMs };
  await Promise.all(
    Array.from({ length: loops }, async (_, l) => {
      // Each loop owns the sandboxes l, l+loops, …: no two loops ever update the same sandbox.
      const mine = t.sandboxes.filter((_, i) => i % loops === l);
      // After an invalid policy, the sandbox's desired policy stays invalid until a valid one is
      // committed: a settings change is delivered with it and fails too.
      const invalid = new Set<string>();
      for (let n = 0; remaining > 0; n++) {
        const sandbox = mine[n % mine.length]!;
        const tag = `${t.tag}-l${l}-n${n}`;
        const r = t.policyOnly ? 999 : (n * 7919 + l * 104729) % 1000; // deterministic mix; 999 is a policy update
        const t0 = performance.now();
        if (r < 75 && remaining >= 2) {
          remaining -= 2;
          bump(out.byKind, "superseded-pair", 2);
          await guard(`pair ${tag}`, async () => {
            const first = await client.updatePolicy({ sandbox, policy: policyFor(`${tag}-a`) });
            const second = await client.updatePolicy({ sandbox, policy: policyFor(`${tag}-b`), wait });
            invalid.delete(sandbox);
            record(second.completion.operationId, second.completion.state, "applied", performance.now() - t0, `pair second ${tag}`);
            const c = await client.awaitCompletion(first.handle, wait);
            // Usually superseded; applied when the supervisor acknowledged it before the second commit.
            record(c.operationId, c.state, "superseded|applied", performance.now() - t0, `pair first ${tag}`);
          });
          continue;
        }
        remaining -= 1;
        if (r < 150) {
          bump(out.byKind, "invalid");
          await guard(`invalid ${tag}`, async () => {
            invalid.add(sandbox);
            const u = await client.updatePolicy({ sandbox, policy: policyFor(tag, "ftp"), wait });
            record(u.completion.operationId, u.completion.state, "failed", performance.now() - t0, `invalid ${tag}`);
          });
        } else if (r < 450) {
          bump(out.byKind, "settings");
          await guard(`settings ${tag}`, async () => {
            const expect = invalid.has(sandbox) ? "failed" : "applied";
            const u = await client.updateSettings({ sandbox, key: "bench_counter", value: `${tag}`, wait });
            record(u.completion.operationId, u.completion.state, expect, performance.now() - t0, `settings ${tag}`);
          });
        } else {
          bump(out.byKind, "policy");
          await guard(`policy ${tag}`, async () => {
            invalid.delete(sandbox);
            const u = await client.updatePolicy({ sandbox, policy: policyFor(tag), wait });
            record(u.completion.operationId, u.completion.state, "applied", performance.now() - t0, `policy ${tag}`);
          });
        }
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  return { ...out, endAt: Date.now(), cpuMs: (cpu.user + cpu.system) / 1000 };
}

async function waited(client: ConfigClient, t: WaitedTask): Promise<FleetResult> {
  const out: FleetResult = { ids: [], expect: [], latencyMs: [], byKind: {}, byState: {}, mismatches: [], lost: [], stuck: [], endAt: 0, cpuMs: 0 };
  const cpu0 = process.cpuUsage();
  const loops = Math.max(1, Math.min(t.loops, t.sandboxes.length));
  let remaining = t.ops;
  await Promise.all(
    Array.from({ length: loops }, async (_, l) => {
      const mine = t.sandboxes.filter((_, i) => i % loops === l);
      for (let n = 0; remaining > 0; n++) {
        remaining -= 1;
        const tag = `${t.tag}-l${l}-n${n}`;
        const t0 = performance.now();
        try {
          const u = await client.updatePolicy({ sandbox: mine[n % mine.length]!, policy: policyFor(tag), wait: { timeoutMs: t.timeoutMs } });
          out.latencyMs.push(performance.now() - t0);
          bump(out.byState, u.completion.state);
          out.ids.push(u.completion.operationId);
          out.expect.push("applied");
          if (u.completion.state !== "applied") out.mismatches.push(`policy ${tag} (${u.completion.operationId}): ${u.completion.state}, expected applied`);
        } catch (err) {
          if (err instanceof CompletionTimeoutError) out.stuck.push(`policy ${tag} (${err.operationId ?? "id unknown"}): no outcome within ${t.timeoutMs} ms`);
          else out.lost.push(`policy ${tag}: ${(err as Error).message}`);
        }
      }
    }),
  );
  bump(out.byKind, "policy", t.ops);
  const cpu = process.cpuUsage(cpu0);
  return { ...out, endAt: Date.now(), cpuMs: (cpu.user + cpu.system) / 1000 };
}

async function commit(client: ConfigClient, t: CommitTask): Promise<WorkerResult<CommitTask>> {
  const ids: string[] = new Array(t.sandboxes.length);
  const t0 = performance.now();
  await pool(t.sandboxes, t.concurrency, async (sandbox, i) => {
    const r = await client.updatePolicy({ sandbox, policy: policyFor(`${t.tag}-${i}`) });
    ids[i] = r.operation!.operationId;
  });
  return { ids, expect: ids.map(() => "applied"), ms: performance.now() - t0 };
}

async function check(client: ConfigClient, t: CheckTask): Promise<CheckResult> {
  const out = { byState: {} as Record<string, number>, mismatches: [] as string[], pending: 0 };
  await pool(t.ids, t.concurrency, async (id, i) => {
    const s = await client.getOperation({ operationId: id });
    bump(out.byState, s.state);
    if (s.state === "pending") out.pending += 1;
    if (!t.expect[i]!.split("|").includes(s.state)) out.mismatches.push(`${id}: ${s.state}, expected ${t.expect[i]}`);
  });
  return out;
}

async function ready(client: ConfigClient, t: ReadyTask): Promise<WorkerResult<ReadyTask>> {
  const raw = client.raw(OpenShell);
  const t0 = performance.now();
  for (let polls = 1; ; polls++) {
    const p0 = performance.now();
    let count = 0;
    let pageToken = "";
    do {
      const page = await raw.listSandboxes({ pageSize: 1000, pageToken, workspaceScope: workspaceScope() });
      count += page.sandboxes.filter((s) => s.status?.phase === SandboxPhase.READY).length;
      pageToken = page.nextPageToken;
    } while (pageToken !== "");
    if (count >= t.count) return { readyAt: Date.now(), polls, lastPollMs: performance.now() - p0 };
    if (performance.now() - t0 > t.timeoutMs) throw new Error(`only ${count} of ${t.count} sandboxes READY after ${t.timeoutMs} ms`);
    await sleep(t.intervalMs);
  }
}

serveWorker<Task & Common>(async (task) => {
  const client = createConfigClient({ transport: createNodeTransport({ baseUrl: task.url, protocol: "grpc", ...(task.ca ? { tls: { ca: task.ca } } : {}) }), token: task.token });
  // Open the HTTP/2 connection before the clock starts.
  await client.raw(OpenShell).health({});
  if (task.kind === "waited" && task.warmupOps) {
    // Untimed, before "ready": the measured updates run on code already compiled and optimized,
    // in this process and in the gateway and supervisor.
    const w = await waited(client, { ...task, ops: task.warmupOps, tag: `${task.tag}-warm` });
    const problems = [...w.lost, ...w.stuck, ...w.mismatches];
    if (problems.length > 0) throw new Error(`warm-up: ${problems.slice(0, 3).join("; ")}`);
  }
  const run: Record<Task["kind"], (c: ConfigClient, t: never) => Promise<unknown>> = { create: createSandboxes, latency, poll, fleet, waited, commit, check, ready };
  return (t) => run[t.kind](client, t as never);
});
