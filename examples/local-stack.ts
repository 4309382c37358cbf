// A local stack for the demo, for interactive use and for the end-to-end tests: one gateway
// process on an embedded SQLite file and reference supervisor processes, all on loopback, started
// from source with tsx so that a fresh clone needs no build. The gateway can be killed and started
// again on the same file and port; every child process is killed when the stack stops (or, as a
// last resort, when this process exits). With `tls` the gateway serves HTTPS (and, for "mtls",
// requires client certificates) and supervisors reach it on a separate sandbox listener, as
// upstream separates them; tls-stack.ts has the certificates and the registry entry.

import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "./free-port.js";
import { assertPortFree } from "./stack-ports.js";
import { loadStackTokens } from "./stack-tokens.js";
import { ensureStackCertificates, httpsHealthy, LOCAL_GATEWAY_NAME, tlsListening, writeLocalRegistry, type ClientTls, type RegistryEntry } from "./tls-stack.js";
export { LOCAL_GATEWAY_NAME, type ClientTls, type RegistryEntry } from "./tls-stack.js";

/** How long the stack's processes get to stop on SIGTERM before SIGKILL. */
const STOP_KILL_MS = 10_000;

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export interface SupervisorSpec {
  /** One sandbox (`--sandbox`). Give this or `fleet`. */
  readonly sandbox?: string;
  /** Several sandboxes in one process (`--sandboxes N --sandbox-prefix P --token-file F`); see `fleetNames`. */
  readonly fleet?: { readonly prefix: string; readonly count: number };
  /** Extra command-line arguments, e.g. `["--apply-delay-ms", "150"]`. */
  readonly args?: readonly string[];
  /** `--state-dir`; default `<dir>/supervisors` (shared: each sandbox has its own subdirectory). */
  readonly stateDir?: string;
}

/** One child process of the stack. */
export interface StackProcess {
  /** `gateway`, `gateway#2` after a restart, `supervisor:<sandbox>`, … */
  readonly name: string;
  readonly pid: number | undefined;
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>;
  readonly running: boolean;
  /** Its stdout and stderr lines so far (the gateway and the supervisor log one JSON object per line). */
  lines(): readonly string[];
  /** Sends `signal` (default SIGTERM) and resolves once the process has exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export interface LocalStackOptions {
  /** Sandboxes that will get supervisors: their tokens go into the gateway's auth file. */
  readonly sandboxes: readonly string[];
  /** Working directory (auth file, database, logs, supervisor state); default a fresh temp dir, removed on stop. */
  readonly dir?: string;
  readonly port?: number;
  readonly corsOrigins?: readonly string[];
  /** Extra `serve` arguments, e.g. `["--ack-timeout", "1s", "--reconcile", "250ms"]`. */
  readonly gatewayArgs?: readonly string[];
  /**
   * Run the gateway with `--no-auth` (no auth file) and the supervisors without a token: each is
   * bound to the sandbox it names. Every caller is an admin; `adminToken` is accepted and ignored.
   */
  readonly noAuth?: boolean;
  /**
   * Serve HTTPS (certificates under `<dir>/tls/`, kept across starts while sound): `"tls"`, or
   * `"mtls"` to also require client certificates (a verified one is the platform admin) and write
   * the upstream registry entry `<dir>/gateways/openshell-local/` with its client bundle.
   * Supervisors then dial a second, sandbox-only listener with `--ca`.
   */
  readonly tls?: "tls" | "mtls";
  /** The sandbox listener's port with `tls`; default a free one (kept across gateway restarts). */
  readonly sandboxPort?: number;
}

export interface LocalStack {
  /** The gateway for clients: `http://…`, or `https://…` with `tls`. */
  readonly url: string;
  /** The gateway for supervisors: `url`, or with `tls` the sandbox listener's `https://…`. */
  readonly sandboxUrl: string;
  /** With `tls`: the CA to trust, and for "mtls" the client certificate and key to present. */
  readonly clientTls: ClientTls | undefined;
  /** With "mtls": the upstream registry entry written for this gateway (`dir` is OPENSHELL_SYSTEM_GATEWAY_DIR). */
  readonly registry: RegistryEntry | undefined;
  readonly adminToken: string;
  /** A second admin's token (`demo-reviewer`): another operator, e.g. to approve a rollout under four eyes. */
  readonly reviewerToken: string;
  readonly dir: string;
  /** Everything every process printed, in arrival order. */
  readonly logFile: string;
  /** The gateway's SQLite file (kept across gateway restarts). */
  readonly dbPath: string;
  /** The default supervisor state directory (`openshell-supervisor --print-effective NAME --state-dir DIR` reads it). */
  readonly stateDir: string;
  /** The current gateway process. */
  readonly gateway: StackProcess;
  /** Every process started so far, in order. */
  readonly processes: readonly StackProcess[];
  /** The supervisor token of a sandbox named in `sandboxes`. */
  tokenFor(sandbox: string): string;
  /** Starts a supervisor process for one sandbox or a fleet. */
  startSupervisor(spec: SupervisorSpec): StackProcess;
  /** Kills the gateway (default SIGKILL: no graceful shutdown) and waits for it to exit. */
  killGateway(signal?: NodeJS.Signals): Promise<void>;
  /** Starts a new gateway on the same database file and port, and waits until it is healthy. */
  startGateway(): Promise<StackProcess>;
  /** `killGateway` then `startGateway`. */
  restartGateway(signal?: NodeJS.Signals): Promise<StackProcess>;
  stop(): Promise<void>;
}

/** The sandbox names of a fleet, as the supervisor derives them from `--sandboxes` and `--sandbox-prefix`. */
export function fleetNames(prefix: string, count: number): string[] {
  const width = Math.max(4, String(count - 1).length);
  return Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(width, "0")}`);
}

export { freePort };

async function waitHealthy(url: string, child: ChildProcess, healthy: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the gateway exited (${child.exitCode ?? child.signalCode}) before becoming healthy`);
    if (await healthy()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`the gateway at ${url} did not become healthy within ${timeoutMs} ms`);
}

// Last resort: children of stacks that were never stopped die with this process.
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  live.add(child);
  child.once("exit", () => live.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once("exit", () => {
      for (const c of live) c.kill("SIGKILL");
    });
  }
}

/**
 * Starts a gateway. Supervisor tokens must be known to the gateway's auth file before it starts,
 * so the sandboxes that will get supervisors are named up front.
 */
export async function startLocalStack(options: LocalStackOptions): Promise<LocalStack> {
  // Before anything is written: a busy port (a stack already running on this folder, say) changes nothing.
  if (options.port !== undefined) await assertPortFree(options.port, "the gateway");
  if (options.sandboxPort !== undefined) await assertPortFree(options.sandboxPort, "the sandbox listener");
  const port = options.port ?? (await freePort());
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "openshell-demo-"));
  const ownsDir = options.dir === undefined;
  // Kept with the state (stack-tokens.ts): a restart on the same folder keeps the admin token.
  const { authFile, adminToken, reviewerToken, supervisors: supervisorTokens } = loadStackTokens(dir, options.sandboxes);
  const tls = options.tls === undefined ? undefined : await startTls(options.tls, dir, port, options.sandboxPort);
  const url = `${tls ? "https" : "http"}://127.0.0.1:${port}`;
  const sandboxUrl = tls?.sandboxUrl ?? url;
  const healthy = tls ? () => httpsHealthy(url, tls.client) : () => fetch(`${url}/healthz`).then((r) => r.ok, () => false);
  const dbPath = join(dir, "gateway.db");
  const stateDir = join(dir, "supervisors");
  const logFile = join(dir, "stack.log");
  const log = createWriteStream(logFile, { flags: "a" });
  const processes: StackProcess[] = [];
  const children: ChildProcess[] = [];
  let stopping = false;

  const run = (name: string, script: string, args: readonly string[], env: Record<string, string> = {}): { child: ChildProcess; proc: StackProcess } => {
    const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, script), ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    track(child);
    children.push(child);
    const lines: string[] = [];
    for (const stream of [child.stdout!, child.stderr!]) {
      let carry = "";
      stream.setEncoding("utf8");
      stream.on("data", (chunk: string) => {
        const parts = (carry + chunk).split("\n");
        carry = parts.pop()!;
        lines.push(...parts);
        if (!log.writableEnded) log.write(chunk);
      });
      stream.on("end", () => {
        if (carry !== "") lines.push(carry);
        carry = "";
      });
    }
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once("exit", (code, signal) => r({ code, signal })));
    const proc: StackProcess = {
      name,
      pid: child.pid,
      exited,
      get running() {
        return child.exitCode === null && child.signalCode === null;
      },
      lines: () => lines,
      async kill(signal = "SIGTERM") {
        if (child.exitCode === null && child.signalCode === null) child.kill(signal);
        await exited;
      },
    };
    processes.push(proc);
    return { child, proc };
  };

  const cors = (options.corsOrigins ?? []).flatMap((o) => ["--cors-origin", o]);
  let gateways = 0;
  let gateway: StackProcess;
  const startGateway = async (): Promise<StackProcess> => {
    if (stopping) throw new Error("the stack is stopping");
    gateways += 1;
    const { child, proc } = run(gateways === 1 ? "gateway" : `gateway#${gateways}`, "gateway/src/cli.ts", [
      "serve",
      "--db", `sqlite:${dbPath}`,
      "--port", String(port),
      ...(options.noAuth ? ["--no-auth"] : ["--auth-file", authFile]),
      ...cors,
      ...(tls?.gatewayArgs ?? []),
      ...(options.gatewayArgs ?? []),
    ]);
    gateway = proc;
    try {
      await waitHealthy(url, child, healthy);
      // Supervisors retry on their own, but a caller starting them now expects the listener up.
      if (tls) await waitHealthy(sandboxUrl, child, () => tlsListening(tls.sandboxPort, tls.client.ca));
    } catch (err) {
      child.kill("SIGKILL");
      throw new Error(`${(err as Error).message}; see ${logFile}`);
    }
    return proc;
  };

  const stop = async () => {
    stopping = true;
    const exited = children.map((c) => (c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => c.once("exit", () => r()))));
    for (const c of children) c.kill("SIGTERM");
    // Longer than the gateway's own grace for calls still running (5 s) plus closing its store:
    // killed before that, it would leave its SQLite WAL behind.
    const timer = setTimeout(() => children.forEach((c) => c.kill("SIGKILL")), STOP_KILL_MS);
    await Promise.all(exited);
    clearTimeout(timer);
    await new Promise<void>((r) => log.end(() => r()));
    if (ownsDir) rmSync(dir, { recursive: true, force: true });
  };

  try {
    await startGateway();
  } catch (err) {
    await stop();
    throw err;
  }
  let fleets = 0;
  const tokenFor = (sandbox: string): string => {
    const token = supervisorTokens.get(sandbox);
    if (!token) throw new Error(`no supervisor token for sandbox ${sandbox}: name it in startLocalStack({ sandboxes })`);
    return token;
  };
  return {
    url,
    sandboxUrl,
    clientTls: tls?.client,
    registry: tls?.registry,
    adminToken,
    reviewerToken,
    dir,
    logFile,
    dbPath,
    stateDir,
    get gateway() {
      return gateway;
    },
    processes,
    tokenFor,
    startSupervisor(spec) {
      if (stopping) throw new Error("the stack is stopping");
      const common = ["--gateway", sandboxUrl, ...(tls ? ["--ca", tls.caFile] : []), "--state-dir", spec.stateDir ?? stateDir];
      if (spec.fleet) {
        const names = fleetNames(spec.fleet.prefix, spec.fleet.count);
        const tokens: string[] = [];
        if (!options.noAuth) {
          const tokenFile = join(dir, `tokens-${++fleets}.json`);
          writeFileSync(tokenFile, JSON.stringify(Object.fromEntries(names.map((n) => [n, tokenFor(n)]))), { mode: 0o600 });
          tokens.push("--token-file", tokenFile);
        }
        const args = ["--sandboxes", String(spec.fleet.count), "--sandbox-prefix", spec.fleet.prefix, ...tokens, ...common, ...(spec.args ?? [])];
        return run(`supervisor:${spec.fleet.prefix}*`, "supervisor/src/cli.ts", args).proc;
      }
      if (spec.sandbox === undefined) throw new Error("startSupervisor needs a sandbox or a fleet");
      // The token in the environment, not on the command line, which every user of the machine
      // can read (ps); a process's environment is its owner's alone.
      const env: Record<string, string> = options.noAuth ? {} : { OPENSHELL_SUPERVISOR_TOKEN: tokenFor(spec.sandbox) };
      return run(`supervisor:${spec.sandbox}`, "supervisor/src/cli.ts", ["--sandbox", spec.sandbox, ...common, ...(spec.args ?? [])], env).proc;
    },
    async killGateway(signal = "SIGKILL") {
      await gateway.kill(signal);
    },
    startGateway,
    async restartGateway(signal = "SIGKILL") {
      await gateway.kill(signal);
      return startGateway();
    },
    stop,
  };
}

interface StackTls {
  readonly sandboxPort: number;
  readonly sandboxUrl: string;
  readonly caFile: string;
  readonly gatewayArgs: readonly string[];
  readonly client: ClientTls;
  readonly registry: RegistryEntry | undefined;
}

// Certificates, the gateway's TLS flags and, for mutual TLS, the registry entry clients find it by.
async function startTls(mode: "tls" | "mtls", dir: string, port: number, sandboxPortOption: number | undefined): Promise<StackTls> {
  const certs = await ensureStackCertificates(join(dir, "tls"));
  const sandboxPort = sandboxPortOption ?? (await freePort());
  const { files } = certs;
  const mtls = mode === "mtls";
  return {
    sandboxPort,
    sandboxUrl: `https://127.0.0.1:${sandboxPort}`,
    caFile: files.ca,
    gatewayArgs: [
      "--tls-cert", files.serverCert,
      "--tls-key", files.serverKey,
      ...(mtls ? ["--tls-client-ca", files.ca] : []),
      "--sandbox-port", String(sandboxPort),
    ],
    client: mtls ? { ca: certs.ca, cert: certs.client.cert, key: certs.client.key } : { ca: certs.ca },
    registry: mtls ? writeLocalRegistry(dir, { name: LOCAL_GATEWAY_NAME, endpoint: `https://127.0.0.1:${port}`, ca: certs.ca, client: certs.client }) : undefined,
  };
}
