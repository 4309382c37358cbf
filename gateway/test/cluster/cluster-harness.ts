// Several gateway replicas on one PostgreSQL, as real processes: a database of its own per
// cluster (created here, dropped on stop), replicas and reference supervisors started from source
// with `node --import tsx`, SDK clients, and a TCP front that stands in for a load balancer.
// Used by the cluster tests (the cross-replica latency probe that also used it is in bench/README.md, Findings).

import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import pg from "pg";
import { createConfigClient, type ConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, SandboxPhase, SandboxPolicySchema, workspaceScope, type SandboxPolicy } from "openshell-config/raw";
import { freePort } from "../../../examples/free-port.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
export const ADMIN_URL = process.env.OSC_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";

/** Whether the test PostgreSQL answers (the tests skip, or fail with OSC_REQUIRE_POSTGRES=1). */
export async function postgresReachable(): Promise<boolean> {
  const c = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 3_000 });
  try {
    await c.connect();
    await c.end();
    return true;
  } catch {
    return false;
  }
}

export interface Proc {
  readonly name: string;
  readonly url: string;
  lines(): readonly string[];
  /** Parsed JSON log lines. */
  json(): Record<string, unknown>[];
  kill(signal?: NodeJS.Signals): Promise<void>;
  readonly running: boolean;
}

export interface Cluster {
  readonly dbUrl: string;
  readonly adminToken: string;
  startReplica(name: string, args?: readonly string[]): Promise<Proc>;
  startSupervisor(sandbox: string, gateways: readonly string[], args?: readonly string[]): Proc;
  /** One supervisor process for the sandboxes `<prefix>0000`… (`count` of them, each with a token of `sandboxes`). */
  startFleet(prefix: string, count: number, gateways: readonly string[], args?: readonly string[]): Proc;
  /** An SDK client (gRPC) with the admin token. */
  client(baseUrl: string): ConfigClient;
  /** A TCP front forwarding each connection to the first of `backends()` that accepts it. */
  front(backends: () => readonly string[]): Promise<{ url: string; close(): void }>;
  /** One query on the cluster's database. */
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  stop(): Promise<void>;
}

async function admin<T>(f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 3_000 });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

/** Polls until `probe` gives something other than undefined/false. */
export async function until<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, what: string, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts nothing yet: a fresh database and an auth file with tokens for `sandboxes`. */
export async function createCluster(sandboxes: readonly string[]): Promise<Cluster> {
  const database = `osc_cluster_${randomBytes(5).toString("hex")}`;
  await admin((c) => c.query(`CREATE DATABASE ${database}`));
  const dbUrl = (() => {
    const u = new URL(ADMIN_URL);
    u.pathname = `/${database}`;
    return u.toString();
  })();
  const dir = mkdtempSync(join(tmpdir(), "openshell-cluster-"));
  const adminToken = `admin-${randomBytes(12).toString("hex")}`;
  const tokens = new Map(sandboxes.map((s) => [s, `sup-${randomBytes(12).toString("hex")}`]));
  const authFile = join(dir, "auth.json");
  writeFileSync(
    authFile,
    JSON.stringify({
      tokens: [
        { token: adminToken, principal: "cluster-admin", role: "admin", workspaces: "*" },
        ...[...tokens].map(([sandbox, token]) => ({ token, principal: `supervisor:${sandbox}`, role: "supervisor", workspace: "default", sandbox })),
      ],
    }),
    { mode: 0o600 },
  );
  const fail = (sandbox: string): never => {
    throw new Error(`no token for sandbox ${sandbox}`);
  };
  const children: ChildProcess[] = [];
  const servers: Server[] = [];
  const pool = new pg.Pool({ connectionString: dbUrl, max: 2 });
  pool.on("error", () => undefined);

  const run = (name: string, url: string, script: string, args: readonly string[]): { child: ChildProcess; proc: Proc } => {
    const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, script), ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    children.push(child);
    const lines: string[] = [];
    for (const stream of [child.stdout!, child.stderr!]) {
      let carry = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => {
        const parts = (carry + chunk).split("\n");
        carry = parts.pop()!;
        lines.push(...parts);
      });
    }
    const exited = new Promise<void>((r) => child.once("exit", () => r()));
    const proc: Proc = {
      name,
      url,
      lines: () => lines,
      json: () =>
        lines.flatMap((l) => {
          if (!l.startsWith("{")) return [];
          try {
            return [JSON.parse(l) as Record<string, unknown>];
          } catch {
            return [];
          }
        }),
      get running() {
        return child.exitCode === null && child.signalCode === null;
      },
      async kill(signal = "SIGTERM") {
        if (proc.running) child.kill(signal);
        await exited;
      },
    };
    return { child, proc };
  };

  return {
    dbUrl,
    adminToken,
    async startReplica(name, args = []) {
      const port = await freePort();
      const url = `http://127.0.0.1:${port}`;
      const { child, proc } = run(`gateway ${name}`, url, "gateway/src/cli.ts", [
        "serve", "--db", dbUrl, "--port", String(port), "--auth-file", authFile, "--replica-id", name,
        "--reconcile", "250ms", "--lease", "3s", "--db-pool", "4", ...args,
      ]);
      const end = Date.now() + 30_000;
      for (;;) {
        if (!proc.running) throw new Error(`replica ${name} exited before becoming healthy:\n${proc.lines().slice(-20).join("\n")}`);
        try {
          if ((await fetch(`${url}/healthz`)).ok) break;
        } catch {
          // not listening yet
        }
        if (Date.now() > end) {
          child.kill("SIGKILL");
          throw new Error(`replica ${name} did not become healthy`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      return proc;
    },
    startSupervisor(sandbox, gateways, args = []) {
      const token = tokens.get(sandbox);
      if (!token) throw new Error(`no token for sandbox ${sandbox}`);
      const stateDir = join(dir, "supervisors", sandbox);
      return run(`supervisor ${sandbox}`, gateways[0]!, "supervisor/src/cli.ts", [
        "--sandbox", sandbox, "--token", token, "--gateway", gateways.join(","), "--state-dir", stateDir, ...args,
      ]).proc;
    },
    startFleet(prefix, count, gateways, args = []) {
      const width = Math.max(4, String(count - 1).length);
      const names = Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(width, "0")}`);
      const tokenFile = join(dir, `fleet-${prefix}tokens.json`);
      writeFileSync(tokenFile, JSON.stringify(Object.fromEntries(names.map((n) => [n, tokens.get(n) ?? fail(n)]))), { mode: 0o600 });
      return run(`supervisor ${prefix}*`, gateways[0]!, "supervisor/src/cli.ts", [
        "--sandboxes", String(count), "--sandbox-prefix", prefix, "--token-file", tokenFile, "--gateway", gateways.join(","), "--state-dir", join(dir, "supervisors"), ...args,
      ]).proc;
    },
    client(baseUrl) {
      return createConfigClient({ transport: createNodeTransport({ baseUrl, protocol: "grpc" }), token: adminToken });
    },
    async front(backends) {
      const sockets = new Set<Socket>();
      const server = createServer((downstream) => {
        sockets.add(downstream);
        downstream.once("close", () => sockets.delete(downstream));
        const tryNext = (i: number) => {
          const list = backends();
          if (i >= list.length) return downstream.destroy();
          const { hostname, port } = new URL(list[i]!);
          const upstream = connect(Number(port), hostname);
          let connected = false;
          upstream.on("error", () => (connected ? downstream.destroy() : tryNext(i + 1)));
          upstream.once("connect", () => {
            connected = true;
            sockets.add(upstream);
            downstream.pipe(upstream).pipe(downstream);
            upstream.once("close", () => downstream.destroy());
            downstream.once("close", () => upstream.destroy());
          });
        };
        downstream.on("error", () => undefined);
        tryNext(0);
      });
      servers.push(server);
      const port = await new Promise<number>((r) => server.listen(0, "127.0.0.1", () => r((server.address() as { port: number }).port)));
      return {
        url: `http://127.0.0.1:${port}`,
        close() {
          server.close();
          for (const s of sockets) s.destroy();
        },
      };
    },
    async query(text, values) {
      return (await pool.query(text, values)).rows;
    },
    async stop() {
      for (const s of servers) s.close();
      const exits = children.map((c) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => c.once("exit", () => r()))));
      for (const c of children) c.kill("SIGTERM");
      const force = setTimeout(() => children.forEach((c) => c.kill("SIGKILL")), 5_000);
      await Promise.all(exits);
      clearTimeout(force);
      await pool.end().catch(() => undefined);
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Revisions the supervisor put in force ("applied" or "degraded"), in order, one key per snapshot revision. */
export function appliedRevisions(supervisor: Proc): string[] {
  return supervisor
    .json()
    .filter((l) => l.msg === "sandbox config processed" && (l.outcome === "APPLIED" || l.outcome === "DEGRADED"))
    .map((l) => `policy ${String(l.policyVersion)} settings ${String(l.settingsRevision)}`);
}

export function policyWith(host: string): SandboxPolicy {
  return create(SandboxPolicySchema, {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp"] },
    networkPolicies: { out: { name: "out", endpoints: [{ host, ports: [443] }], binaries: [{ path: "/usr/bin/git" }] } },
  });
}

/** Three replicas A, B, C (extra args for each), sandbox `name` created through A, its supervisor on B (then C). */
export async function startThree(cluster: Cluster, name: string, replicaArgs: readonly string[] = [], supervisorArgs: readonly string[] = []) {
  const [a, b, c] = await Promise.all(["A", "B", "C"].map((r) => cluster.startReplica(r, replicaArgs)));
  const viaA = cluster.client(a!.url);
  await viaA.raw(OpenShell).createSandbox({ name, spec: { policy: policyWith("start.example.com") }, workspaceScope: workspaceScope() });
  const supervisor = cluster.startSupervisor(name, [b!.url, c!.url], supervisorArgs);
  await until(async () => (await viaA.raw(OpenShell).getSandbox({ name, workspaceScope: workspaceScope() })).sandbox?.status?.phase === SandboxPhase.READY, `${name} to be READY`);
  return { a: a!, b: b!, c: c!, supervisor, viaA, viaC: cluster.client(c!.url) };
}

/** The replica that owns sandbox `name`'s session, per the database. */
export async function ownerOf(cluster: Cluster, name: string): Promise<string | undefined> {
  const rows = await cluster.query<{ replica_id: string }>(
    "SELECT o.replica_id FROM session_owners o JOIN sandboxes s ON s.id = o.sandbox_id WHERE s.name = $1",
    [name],
  );
  return rows[0]?.replica_id;
}
