// One benchmark stack on loopback: a gateway process (SQLite file or a fresh PostgreSQL
// database), supervisor processes hosting fleets of sandboxes, and SDK client worker processes
// (bench/client.ts) that take a JSON task on stdin and answer in JSON on stdout.

import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { get as httpsGet } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { sandboxNames } from "./names.js";
import { Child, freePort, openLog, ROOT, sampleProc, sleep, type ProcSample } from "./proc.js";
import { releaseTogether, startWorker, type Worker } from "./worker-protocol.js";
import type { Task, WorkerResult } from "../client.js";
import { createTestPki } from "../../examples/tls/pki.js";

export type Backend = "sqlite" | "postgres";

/** Sandboxes named `<prefix>0000` … as `--sandboxes N --sandbox-prefix P` derives them. */
export interface Group {
  readonly prefix: string;
  readonly count: number;
}

export function groupNames(g: Group): string[] {
  return sandboxNames(g.prefix, g.count);
}

/** Splits `total` sandboxes into `processes` groups `<base><k>-NNNN` (one supervisor process each). */
export function splitGroups(base: string, total: number, processes: number): Group[] {
  const n = Math.max(1, Math.min(processes, total));
  return Array.from({ length: n }, (_, k) => ({ prefix: `${base}${k}-`, count: Math.floor(total / n) + (k < total % n ? 1 : 0) }));
}

const PG_ADMIN_URL = process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

export interface StackOptions {
  readonly backend: Backend;
  readonly groups: readonly Group[];
  /** Extra `serve` arguments. */
  readonly gatewayArgs?: readonly string[];
  /** Write a CPU profile of the gateway into this directory (on graceful stop). */
  readonly cpuProfDir?: string;
  /** PostgreSQL: count the gateway's queries (bench/lib/pg-count.mjs); read with pgQueries(). */
  readonly countPgQueries?: boolean;
  /**
   * Serve the gateway over TLS (--tls-cert/--tls-key, a test CA): supervisors dial https with
   * --ca, clients with the SDK's `tls.ca`. The cost of TLS is this stack against a plain one.
   */
  readonly tls?: boolean;
  readonly label: string;
}

export class Stack {
  /** Stacks not yet stopped (stopped on SIGINT/SIGTERM by the runner). */
  static readonly live = new Set<Stack>();
  readonly dir: string;
  readonly stateDir: string;
  readonly adminToken = `admin-${randomBytes(12).toString("hex")}`;
  readonly tokens = new Map<string, string>();
  readonly log;
  url = "";
  dbUrl = "";
  gateway!: Child;
  /** ms from spawning the current gateway until /healthz answered. */
  gatewayStartMs = 0;
  private port = 0;
  private readonly children: Child[] = [];
  private pgDatabase: string | undefined;
  /** The test CA (PEM) when the stack runs TLS. */
  ca: string | undefined;
  private workers = 0;
  private supervisors = 0;

  private constructor(readonly o: StackOptions) {
    this.dir = mkdtempSync(join(tmpdir(), `openshell-bench-${o.label}-`));
    // Supervisor state on tmpfs when there is one: their fsyncs are not what is measured.
    this.stateDir = existsSync("/dev/shm") ? mkdtempSync("/dev/shm/openshell-bench-sup-") : join(this.dir, "supervisors");
    this.log = openLog(join(this.dir, "stack.log"));
    for (const g of o.groups) for (const n of groupNames(g)) this.tokens.set(n, `sup-${randomBytes(12).toString("hex")}`);
  }

  static async start(o: StackOptions): Promise<Stack> {
    const s = new Stack(o);
    Stack.live.add(s);
    try {
      writeFileSync(
        join(s.dir, "auth.json"),
        JSON.stringify({
          tokens: [
            { token: s.adminToken, principal: "bench-admin", role: "admin", workspaces: "*" },
            ...[...s.tokens].map(([sandbox, token]) => ({ token, principal: `supervisor:${sandbox}`, role: "supervisor", workspace: "default", sandbox })),
          ],
        }),
        { mode: 0o600 },
      );
      if (o.backend === "postgres") {
        s.pgDatabase = `openshell_bench_${process.pid}_${randomBytes(4).toString("hex")}`;
        const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
        await admin.connect();
        await admin.query(`CREATE DATABASE ${s.pgDatabase}`);
        await admin.end();
        const u = new URL(PG_ADMIN_URL);
        u.pathname = `/${s.pgDatabase}`;
        s.dbUrl = u.toString();
      } else {
        s.dbUrl = `sqlite:${join(s.dir, "gateway.db")}`;
      }
      s.port = await freePort();
      s.url = `${o.tls ? "https" : "http"}://127.0.0.1:${s.port}`;
      if (o.tls) {
        const pki = await createTestPki();
        s.ca = pki.ca.cert;
        writeFileSync(join(s.dir, "ca.crt"), pki.ca.cert);
        writeFileSync(join(s.dir, "server.crt"), pki.server.cert);
        writeFileSync(join(s.dir, "server.key"), pki.server.key, { mode: 0o600 });
      }
      await s.startGateway();
      return s;
    } catch (err) {
      await s.stop();
      throw err;
    }
  }

  /** Starts a gateway on this stack's database and port; resolves once it is healthy. */
  async startGateway(): Promise<Child> {
    const nodeArgs = [
      ...(this.o.cpuProfDir ? ["--cpu-prof", "--cpu-prof-dir", this.o.cpuProfDir] : []),
      ...(this.o.countPgQueries ? ["--import", join(ROOT, "bench/lib/pg-count.mjs")] : []),
      // OSC_BENCH_GATEWAY_NODE_ARGS="--flag …": Node options for the gateway alone (experiments: GC tracing, heap sizes).
      ...(process.env.OSC_BENCH_GATEWAY_NODE_ARGS?.split(" ").filter((a) => a !== "") ?? []),
    ];
    const tls = this.o.tls ? ["--tls-cert", join(this.dir, "server.crt"), "--tls-key", join(this.dir, "server.key")] : [];
    const args = ["serve", "--db", this.dbUrl, "--port", String(this.port), "--auth-file", join(this.dir, "auth.json"), "--log-level", "warn", ...tls, ...(this.o.gatewayArgs ?? [])];
    const g = new Child({
      name: "gateway",
      script: "gateway/src/cli.ts",
      args,
      // Without options of its own, the gateway is profiled too under OSC_BENCH_PROF_ALL.
      ...(nodeArgs.length > 0 ? { nodeArgs } : {}),
      ...(this.o.countPgQueries ? { env: { OSC_BENCH_PG_COUNT: this.pgCountFile } } : {}),
      log: this.log,
    });
    this.children.push(g);
    this.gateway = g;
    const deadline = performance.now() + 60_000;
    for (;;) {
      if (!g.running) throw new Error(`the gateway exited before it became healthy:\n${g.recent()}`);
      try {
        if ((await this.get("/healthz")).status === 200) break;
      } catch {
        // not listening yet
      }
      if (performance.now() > deadline) throw new Error(`the gateway did not become healthy:\n${g.recent()}`);
      await sleep(20);
    }
    this.gatewayStartMs = performance.now() - g.spawnedAt;
    return g;
  }

  /** GET `path` on the gateway (over TLS trusting the stack's CA): status and body. */
  get(path: string): Promise<{ status: number; body: string }> {
    // As the platform admin: /metrics needs one.
    const headers = { authorization: `Bearer ${this.adminToken}` };
    if (!this.o.tls) return fetch(`${this.url}${path}`, { headers }).then(async (r) => ({ status: r.status, body: await r.text() }));
    return new Promise((resolve, reject) => {
      const req = httpsGet(`${this.url}${path}`, { ca: this.ca, agent: false, headers }, (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      });
      req.on("error", reject);
      req.setTimeout(10_000, () => req.destroy(new Error(`GET ${path}: no answer in 10 s`)));
    });
  }

  private get pgCountFile(): string {
    return join(this.dir, "pg-queries");
  }

  /** The gateway's PostgreSQL queries so far (countPgQueries): asks it with SIGUSR2 and reads its answer. */
  async pgQueries(): Promise<number> {
    const read = () => (existsSync(this.pgCountFile) ? readFileSync(this.pgCountFile, "utf8").split(" ") : ["0", "0"]);
    const before = read()[1];
    process.kill(this.gateway.pid!, "SIGUSR2");
    for (let i = 0; i < 200; i++) {
      await sleep(10);
      const [count, seq] = read();
      if (seq !== before) return Number(count);
    }
    throw new Error("the gateway did not answer SIGUSR2 with its PostgreSQL query count");
  }

  gatewaySample(): ProcSample {
    return sampleProc(this.gateway.pid);
  }

  /** A supervisor process for one group (`--sandboxes N --sandbox-prefix P --token-file F`). */
  startSupervisor(group: Group, args: readonly string[] = []): Child {
    const k = ++this.supervisors;
    const tokenFile = join(this.dir, `tokens-${k}.json`);
    writeFileSync(tokenFile, JSON.stringify(Object.fromEntries(groupNames(group).map((n) => [n, this.tokens.get(n)!]))), { mode: 0o600 });
    // OSC_BENCH_SUPERVISOR_NODE_ARGS="--flag …": Node options for the supervisor processes (experiments: GC tracing, heap sizes).
    const nodeArgs = process.env.OSC_BENCH_SUPERVISOR_NODE_ARGS?.split(" ").filter((a) => a !== "") ?? [];
    const c = new Child({
      name: `supervisor#${k}`,
      script: "supervisor/src/cli.ts",
      args: ["--gateway", this.url, ...(this.o.tls ? ["--ca", join(this.dir, "ca.crt")] : []), "--sandboxes", String(group.count), "--sandbox-prefix", group.prefix, "--token-file", tokenFile, "--state-dir", this.stateDir, "--log-level", "warn", ...args],
      ...(nodeArgs.length > 0 ? { nodeArgs } : {}),
      log: this.log,
    });
    this.children.push(c);
    return c;
  }

  /** Starts a client worker with `task`; `ready` resolves when it waits for "go" (tasks with `barrier`). */
  worker<T extends Task>(task: T): Worker<WorkerResult<T>> {
    const child = new Child({ name: `client#${++this.workers}`, script: "bench/client.ts", args: [], log: this.log, captureStdout: true });
    this.children.push(child);
    return startWorker<WorkerResult<T>>(child, task.kind, { url: this.url, token: this.adminToken, ...(this.ca ? { ca: this.ca } : {}), ...task });
  }

  /** Runs one task to its end. */
  run<T extends Task>(task: T): Promise<WorkerResult<T>> {
    return this.worker(task).result;
  }

  /** Runs `tasks` in parallel worker processes, all released at once after every one is ready. */
  runTogether<T extends Task>(tasks: readonly T[], onGo?: () => void | Promise<void>): Promise<{ results: WorkerResult<T>[]; goAt: number }> {
    return releaseTogether(tasks.map((t) => this.worker({ ...t, barrier: true })), onGo);
  }

  /** Session streams that ended and were reconnected, by reason, over every supervisor process so far. */
  supervisorReconnects(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const c of this.children) for (const [k, v] of c.reconnects) out[k] = (out[k] ?? 0) + v;
    return out;
  }

  /** Every sample of the gateway's /metrics, by name with labels. */
  async metrics(): Promise<Map<string, number>> {
    const text = (await this.get("/metrics")).body;
    const m = new Map<string, number>();
    for (const line of text.split("\n")) {
      if (line === "" || line.startsWith("#")) continue;
      const i = line.lastIndexOf(" ");
      m.set(line.slice(0, i), Number(line.slice(i + 1)));
    }
    return m;
  }

  /** The gateway's pending-operation gauge (from /metrics). */
  async pendingOperations(): Promise<number> {
    const text = (await this.get("/metrics")).body;
    const m = /^openshell_config_update_operations_pending (\S+)$/m.exec(text);
    if (!m) throw new Error("the pending-operations gauge is missing from /metrics");
    return Number(m[1]);
  }

  /** SQLite only: stops the gateway cleanly, copies its database aside, and starts it again. */
  async snapshotDb(): Promise<void> {
    await this.gateway.kill("SIGTERM", 15_000);
    const db = this.sqlitePath();
    copyFileSync(db, `${db}.snapshot`);
    // A clean close checkpoints and removes the WAL; should one remain, it is part of the state.
    if (existsSync(`${db}-wal`)) copyFileSync(`${db}-wal`, `${db}.snapshot-wal`);
    await this.startGateway();
  }

  /** SQLite only: stops every process, puts the snapshot back, and starts a gateway on it. */
  async restoreDb(): Promise<void> {
    await Promise.all(this.children.filter((c) => c !== this.gateway).map((c) => c.kill("SIGTERM")));
    await this.gateway.kill("SIGKILL");
    const db = this.sqlitePath();
    for (const suffix of ["-wal", "-shm"]) rmSync(`${db}${suffix}`, { force: true });
    copyFileSync(`${db}.snapshot`, db);
    if (existsSync(`${db}.snapshot-wal`)) copyFileSync(`${db}.snapshot-wal`, `${db}-wal`);
    rmSync(this.stateDir, { recursive: true, force: true });
    await this.startGateway();
  }

  private sqlitePath(): string {
    if (!this.dbUrl.startsWith("sqlite:")) throw new Error("database snapshots are for SQLite stacks");
    return this.dbUrl.slice("sqlite:".length);
  }

  async killGateway(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    await this.gateway.kill(signal);
  }

  private keep = false;

  /** Keeps this stack's directory (logs, database) after stop() and names it in `err`'s message. */
  keepLogs(err: unknown): unknown {
    this.keep = true;
    if (err instanceof Error) err.message += ` (logs: ${join(this.dir, "stack.log")})`;
    return err;
  }

  /** Stops every process (gateway last, gracefully so a CPU profile is written) and removes the database. */
  async stop(): Promise<void> {
    Stack.live.delete(this);
    const others = this.children.filter((c) => c !== this.gateway);
    await Promise.all(others.map((c) => c.kill("SIGTERM")));
    if (this.gateway) await this.gateway.kill("SIGTERM", 15_000);
    await new Promise<void>((r) => this.log.end(() => r()));
    if (this.pgDatabase) {
      const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
      try {
        await admin.connect();
        await admin.query(`DROP DATABASE IF EXISTS ${this.pgDatabase} WITH (FORCE)`);
      } finally {
        await admin.end().catch(() => {});
      }
    }
    rmSync(this.stateDir, { recursive: true, force: true });
    if (!process.env.BENCH_KEEP && !this.keep) rmSync(this.dir, { recursive: true, force: true });
  }
}
