// One floor stack on loopback: the floor gateway (bench/floor/gateway.ts), floor supervisor
// processes (bench/floor/supervisor.ts) and floor client workers (bench/floor/client.ts), all
// started from source with tsx like the real stack (bench/lib/stack.ts).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Child, openLog, sampleProc, type ProcSample } from "../lib/proc.js";
import { releaseTogether, startWorker, type Worker } from "../lib/worker-protocol.js";
import type { Group } from "../lib/stack.js";
import type { FloorResult, FloorTask } from "./client.js";

export interface FloorStats {
  readonly sessions: number;
  readonly ready: number;
  /** Supervisor results that matched no update in flight: must be 0. */
  readonly unmatched: number;
}

export class FloorStack {
  static readonly live = new Set<FloorStack>();
  readonly dir = mkdtempSync(join(tmpdir(), "openshell-bench-floor-"));
  readonly log = openLog(join(this.dir, "stack.log"));
  url = "";
  gateway!: Child;
  /** ms from spawning the gateway until it listened. */
  gatewayStartMs = 0;
  supervisors: Child[] = [];
  private readonly children: Child[] = [];
  private workers = 0;
  private readonly workerChildren: Child[] = [];
  private keep = false;

  private constructor(private readonly expectReady: number) {}

  /**
   * Starts a floor gateway; `expectReady`: it prints an all-ready line once that many sessions are
   * bootstrapped; `providerToo`: each waited update also delivers a provider-environment update
   * (the gateway's --provider-too); `created`: the sandboxes the real run creates first, which
   * ListSandboxes then lists whether or not their session is open (the gateway's --created).
   */
  static async start(o: { expectReady?: number; providerToo?: boolean; created?: readonly Group[] } = {}): Promise<FloorStack> {
    const s = new FloorStack(o.expectReady ?? 0);
    FloorStack.live.add(s);
    try {
      const args = [
        ...(s.expectReady > 0 ? ["--expect-ready", String(s.expectReady)] : []),
        ...(o.providerToo ? ["--provider-too"] : []),
        ...(o.created && o.created.length > 0 ? ["--created", o.created.map((g) => `${g.prefix}:${g.count}`).join(",")] : []),
      ];
      const g = new Child({ name: "floor-gateway", script: "bench/floor/gateway.ts", args, log: s.log, captureStdout: true });
      s.children.push(g);
      s.gateway = g;
      const line = await g.waitForLine((l) => l.includes('"listening"'), 60_000);
      s.gatewayStartMs = performance.now() - g.spawnedAt;
      s.url = `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}`;
      return s;
    } catch (err) {
      await s.stop();
      throw err;
    }
  }

  /** Resolves (with the orchestrator's performance.now()) when the gateway reports every expected session bootstrapped. */
  allReady(timeoutMs: number): Promise<number> {
    return this.gateway.waitForLine((l) => l.includes('"all-ready"'), timeoutMs).then(() => performance.now());
  }

  gatewaySample(): ProcSample {
    return sampleProc(this.gateway.pid);
  }

  startSupervisor(g: Group): Child {
    const c = new Child({
      name: `floor-supervisor#${this.supervisors.length + 1}`,
      script: "bench/floor/supervisor.ts",
      args: ["--gateway", this.url, "--sandboxes", String(g.count), "--sandbox-prefix", g.prefix],
      log: this.log,
    });
    this.children.push(c);
    this.supervisors.push(c);
    return c;
  }

  /** Starts every supervisor and resolves once the gateway counts all their sessions bootstrapped; fails when one of them exits. */
  async bootstrap(groups: readonly Group[], timeoutMs: number): Promise<number> {
    const t0 = performance.now();
    const started = groups.map((g) => this.startSupervisor(g));
    const crash = Promise.race(started.map((c) => c.exited.then(({ code, signal }) => Promise.reject(new Error(`${c.name} exited (${code ?? signal}): ${c.recent()}`)))));
    void crash.catch(() => {});
    await Promise.race([this.allReady(timeoutMs), crash]);
    return performance.now() - t0;
  }

  worker<T extends FloorTask>(task: T): Worker<FloorResult<T>> {
    const child = new Child({ name: `floor-client#${++this.workers}`, script: "bench/floor/client.ts", args: [], log: this.log, captureStdout: true });
    this.children.push(child);
    this.workerChildren.push(child);
    return startWorker<FloorResult<T>>(child, task.kind, { url: this.url, ...task });
  }

  /** Runs one task to its end. */
  run<T extends FloorTask>(task: T): Promise<FloorResult<T>> {
    return this.worker(task).result;
  }

  /** Runs `tasks` in parallel worker processes, all released at once after every one is ready. */
  runTogether<T extends FloorTask>(tasks: readonly T[], onGo?: () => void | Promise<void>): Promise<{ results: FloorResult<T>[]; goAt: number }> {
    return releaseTogether(tasks.map((t) => this.worker({ ...t, barrier: true })), onGo);
  }

  keepLogs(err: unknown): unknown {
    this.keep = true;
    if (err instanceof Error) err.message += ` (logs: ${join(this.dir, "stack.log")})`;
    return err;
  }

  /** Stops every process; returns the gateway's counters (undefined when it had already exited). */
  async stop(): Promise<FloorStats | undefined> {
    FloorStack.live.delete(this);
    let stats: FloorStats | undefined;
    if (this.gateway?.running) {
      this.gateway.send("stats");
      const l = await this.gateway.waitForLine((l) => l.includes('"stats"'), 10_000).catch(() => undefined);
      if (l) stats = JSON.parse(l) as FloorStats;
    }
    // A worker exits by itself once it has answered; a signal while it writes its CPU profile
    // (OSC_BENCH_PROF_ALL) would lose the profile, so it gets a moment first.
    await Promise.all(this.workerChildren.map((c) => Promise.race([c.exited, sleep(3_000)])));
    await Promise.all(this.children.filter((c) => c !== this.gateway).map((c) => c.kill("SIGTERM")));
    if (this.gateway) await this.gateway.kill("SIGTERM");
    await new Promise<void>((r) => this.log.end(() => r()));
    if (!process.env.BENCH_KEEP && !this.keep) rmSync(this.dir, { recursive: true, force: true });
    return stats;
  }
}
