// The harness of the fault tests (crash, database, network): a real gateway process on SQLite or
// PostgreSQL (the shared server, or any URL such as a private cluster) that can be killed with
// SIGKILL and started again on the same database and port, reference supervisor fleets pointed at
// the gateway or at a fault proxy, an SDK client, and readers for what the processes logged.
// examples/local-stack.ts is SQLite-only; these tests need every backend and a gateway URL per
// supervisor, hence a harness of their own.

import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { createConfigClient, type ConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, SandboxPhase, workspaceScope, type SandboxPolicy } from "openshell-config/raw";
import type { Client } from "@connectrpc/connect";
import { freePort } from "../../examples/free-port.js";
import { fleetNames } from "../../examples/local-stack.js";

export { fleetNames };

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const SHARED_PG = "postgres://postgres@127.0.0.1:5432/postgres";

/** `npm run test:reliability` sets this; `npm test` runs the fast forms. */
export const LONG = process.env.OSC_RELIABILITY_LONG === "1";

export type Backend = "sqlite" | "postgres";

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export { freePort };

/** Polls `probe` until it returns something other than undefined/false; throws after `timeoutMs`. */
export async function until<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, what: string, timeoutMs = 20_000, intervalMs = 50): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(intervalMs);
  }
}

// Children of a harness that was never stopped die with the test process.
const live = new Set<ChildProcess>();
process.once("exit", () => {
  for (const c of live) c.kill("SIGKILL");
});

/** One child process with its output kept line by line. */
export class Proc {
  readonly lines: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;

  constructor(readonly name: string, command: string, args: readonly string[], log: NodeJS.WritableStream) {
    this.child = spawn(command, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    live.add(this.child);
    this.exited = new Promise((r) =>
      this.child.once("exit", (code, signal) => {
        live.delete(this.child);
        r({ code, signal });
      }),
    );
    for (const stream of [this.child.stdout!, this.child.stderr!]) {
      let carry = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => {
        const parts = (carry + chunk).split("\n");
        carry = parts.pop()!;
        for (const p of parts) {
          this.lines.push(p);
          log.write(`[${name}] ${p}\n`);
        }
      });
    }
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Parsed JSON log lines (anything else, e.g. a stack trace, is skipped). */
  json(): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    for (const l of this.lines) {
      if (!l.startsWith("{")) continue;
      try {
        out.push(JSON.parse(l) as Record<string, unknown>);
      } catch {
        // a partial line
      }
    }
    return out;
  }

  async kill(signal: NodeJS.Signals = "SIGTERM", graceMs = 5_000): Promise<void> {
    if (this.running) this.child.kill(signal);
    const t = setTimeout(() => this.child.kill("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(t);
  }
}

export interface FaultStackOptions {
  readonly backend: Backend;
  /** A database URL to use instead of a fresh one (e.g. a private PostgreSQL cluster's). */
  readonly dbUrl?: string;
  /** Every sandbox a supervisor will serve: `<prefix>0000` … */
  readonly fleet: { readonly prefix: string; readonly count: number };
  /** Extra `serve` arguments. */
  readonly gatewayArgs?: readonly string[];
  /** A command the gateway runs under, e.g. `["prlimit", "--fsize=…", "--"]`. */
  readonly gatewayWrapper?: readonly string[];
  readonly label: string;
}

export class FaultStack {
  readonly dir: string;
  readonly stateDir: string;
  readonly adminToken = `admin-${randomBytes(12).toString("hex")}`;
  readonly sandboxes: readonly string[];
  readonly processes: Proc[] = [];
  readonly logFile: string;
  url = "";
  dbUrl = "";
  client!: ConfigClient;
  raw!: Client<typeof OpenShell>;
  gateway!: Proc;
  /** The command the next gateway runs under (from the options; tests may change it between starts). */
  gatewayWrapper: readonly string[];
  private port = 0;
  private pgDatabase: string | undefined;
  private readonly tokens = new Map<string, string>();
  private readonly log;
  private keep = false;

  private constructor(readonly o: FaultStackOptions) {
    this.dir = mkdtempSync(join(tmpdir(), `osc-fault-${o.label}-`));
    this.stateDir = join(this.dir, "supervisors");
    this.logFile = join(this.dir, "stack.log");
    this.log = createWriteStream(this.logFile, { flags: "a" });
    this.sandboxes = fleetNames(o.fleet.prefix, o.fleet.count);
    this.gatewayWrapper = o.gatewayWrapper ?? [];
    for (const n of this.sandboxes) this.tokens.set(n, `sup-${randomBytes(12).toString("hex")}`);
  }

  static async start(o: FaultStackOptions): Promise<FaultStack> {
    const s = new FaultStack(o);
    try {
      writeFileSync(
        join(s.dir, "auth.json"),
        JSON.stringify({
          tokens: [
            { token: s.adminToken, principal: "fault-admin", role: "admin", workspaces: "*" },
            ...[...s.tokens].map(([sandbox, token]) => ({ token, principal: `supervisor:${sandbox}`, role: "supervisor", workspace: "default", sandbox })),
          ],
        }),
        { mode: 0o600 },
      );
      if (o.dbUrl) s.dbUrl = o.dbUrl;
      else if (o.backend === "postgres") {
        s.pgDatabase = `osc_fault_${process.pid}_${randomBytes(3).toString("hex")}`;
        const admin = new pg.Client({ connectionString: SHARED_PG });
        await admin.connect();
        await admin.query(`CREATE DATABASE ${s.pgDatabase}`);
        await admin.end();
        s.dbUrl = `postgres://postgres@127.0.0.1:5432/${s.pgDatabase}`;
      } else s.dbUrl = `sqlite:${join(s.dir, "gateway.db")}`;
      s.port = await freePort();
      s.url = `http://127.0.0.1:${s.port}`;
      // Short retry delays: the tests measure the gateway's recovery, not the client's patience.
      s.client = createConfigClient({
        transport: createNodeTransport({ baseUrl: s.url, protocol: "grpc" }),
        token: s.adminToken,
        retry: { retries: 40, minDelayMs: 50, maxDelayMs: 500 },
      });
      s.raw = s.client.raw(OpenShell);
      await s.startGateway();
      return s;
    } catch (err) {
      await s.stop();
      throw err;
    }
  }

  /** The SQLite file (SQLite stacks only). */
  get sqlitePath(): string {
    if (!this.dbUrl.startsWith("sqlite:")) throw new Error("not a SQLite stack");
    return this.dbUrl.slice("sqlite:".length);
  }

  /** Spawns a gateway on this stack's database and port without waiting for it. */
  spawnGateway(): Proc {
    const args = ["serve", "--db", this.dbUrl, "--port", String(this.port), "--auth-file", join(this.dir, "auth.json"), ...(this.o.gatewayArgs ?? [])];
    const node = [process.execPath, "--import", "tsx", join(ROOT, "gateway/src/cli.ts"), ...args];
    const [command, ...rest] = [...this.gatewayWrapper, ...node];
    const p = new Proc(`gateway#${this.processes.filter((x) => x.name.startsWith("gateway")).length + 1}`, command!, rest, this.log);
    this.processes.push(p);
    this.gateway = p;
    return p;
  }

  /** Starts a gateway and resolves once /healthz answers. */
  async startGateway(timeoutMs = 60_000): Promise<Proc> {
    const g = this.spawnGateway();
    await until(async () => {
      if (!g.running) throw new Error(`${g.name} exited before it became healthy; see ${this.logFile}`);
      try {
        return (await fetch(`${this.url}/healthz`)).ok;
      } catch {
        return false;
      }
    }, `${g.name} to become healthy`, timeoutMs, 25);
    return g;
  }

  async killGateway(signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
    await this.gateway.kill(signal);
  }

  /** Creates every sandbox of the fleet, `policyFor(name)` as its first policy. */
  async createSandboxes(policyFor: (name: string) => SandboxPolicy): Promise<void> {
    for (const name of this.sandboxes) await this.raw.createSandbox({ name, spec: { policy: policyFor(name) }, workspaceScope: workspaceScope() });
  }

  /** Resolves once every sandbox of the fleet is READY (its supervisor applied its bootstrap). */
  async waitReady(timeoutMs = 60_000): Promise<void> {
    await until(async () => {
      let ready = 0;
      let pageToken = "";
      do {
        const page = await this.raw.listSandboxes({ pageSize: 1000, pageToken, workspaceScope: workspaceScope() });
        ready += page.sandboxes.filter((x) => x.status?.phase === SandboxPhase.READY).length;
        pageToken = page.nextPageToken;
      } while (pageToken !== "");
      return ready >= this.sandboxes.length;
    }, "every sandbox to be READY", timeoutMs, 200);
  }

  /** One supervisor process for the whole fleet, connecting to `gatewayUrl` (default: the gateway). */
  startSupervisor(args: readonly string[] = [], gatewayUrl = this.url): Proc {
    const tokenFile = join(this.dir, `tokens-${this.processes.length}.json`);
    writeFileSync(tokenFile, JSON.stringify(Object.fromEntries(this.tokens)), { mode: 0o600 });
    const cli = [
      "--import", "tsx", join(ROOT, "supervisor/src/cli.ts"),
      "--gateway", gatewayUrl,
      "--sandboxes", String(this.o.fleet.count),
      "--sandbox-prefix", this.o.fleet.prefix,
      "--token-file", tokenFile,
      "--state-dir", this.stateDir,
      ...args,
    ];
    const p = new Proc(`supervisor#${this.processes.length}`, process.execPath, cli, this.log);
    this.processes.push(p);
    return p;
  }

  /** The gateway's pending-operation gauge (from /metrics). */
  async pendingOperations(): Promise<number> {
    // As the platform admin: /metrics needs one.
    const text = await (await fetch(`${this.url}/metrics`, { headers: { authorization: `Bearer ${this.adminToken}` } })).text();
    const m = /^openshell_config_update_operations_pending (\S+)$/m.exec(text);
    if (!m) throw new Error("the pending-operations gauge is missing from /metrics");
    return Number(m[1]);
  }

  /** Keeps the working directory (logs, database) after stop() and names it in `err`'s message. */
  keepFor(err: unknown): unknown {
    this.keep = true;
    if (err instanceof Error) err.message += ` (kept: ${this.logFile})`;
    return err;
  }

  async stop(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.kill("SIGTERM")));
    await new Promise<void>((r) => this.log.end(() => r()));
    if (this.pgDatabase) {
      const admin = new pg.Client({ connectionString: SHARED_PG });
      try {
        await admin.connect();
        await admin.query(`DROP DATABASE IF EXISTS ${this.pgDatabase} WITH (FORCE)`);
      } finally {
        await admin.end().catch(() => {});
      }
    }
    if (this.keep || process.env.OSC_RELIABILITY_KEEP === "1") process.stderr.write(`fault stack kept: ${this.dir}\n`);
    else rmSync(this.dir, { recursive: true, force: true });
  }
}
