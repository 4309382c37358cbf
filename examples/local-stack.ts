// A local stack for the demo and for interactive use: one gateway process on an embedded SQLite
// file and reference supervisor processes, all on loopback, started from source with tsx so that
// a fresh clone needs no build. Every child process is killed when the stack stops.

import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export interface SupervisorSpec {
  readonly sandbox: string;
  readonly args?: readonly string[];
}

export interface LocalStack {
  readonly url: string;
  readonly adminToken: string;
  readonly dir: string;
  readonly logFile: string;
  /** Creates the sandbox token and starts a supervisor process for it. */
  startSupervisor(spec: SupervisorSpec): void;
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => res(port));
    });
  });
}

async function waitHealthy(url: string, child: ChildProcess, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (child.exitCode !== null) throw new Error(`the gateway exited with code ${child.exitCode} before becoming healthy`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the gateway at ${url} did not become healthy within ${timeoutMs} ms`);
}

/**
 * Starts a gateway. Supervisor tokens must be known to the gateway's auth file before it starts,
 * so the sandboxes that will get supervisors are named up front.
 */
export async function startLocalStack(options: { sandboxes: readonly string[]; dir?: string; port?: number; corsOrigins?: readonly string[] }): Promise<LocalStack> {
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), "openshell-demo-"));
  const ownsDir = options.dir === undefined;
  const adminToken = `admin-${randomBytes(12).toString("hex")}`;
  const supervisorTokens = new Map(options.sandboxes.map((s) => [s, `sup-${s}-${randomBytes(12).toString("hex")}`]));
  const authFile = join(dir, "auth.json");
  writeFileSync(
    authFile,
    JSON.stringify({
      tokens: [
        { token: adminToken, principal: "demo-admin", role: "admin", workspaces: "*" },
        ...[...supervisorTokens].map(([sandbox, token]) => ({ token, principal: `supervisor:${sandbox}`, role: "supervisor", workspace: "default", sandbox })),
      ],
    }),
    { mode: 0o600 },
  );
  const port = options.port ?? (await freePort());
  const url = `http://127.0.0.1:${port}`;
  const logFile = join(dir, "stack.log");
  const log = createWriteStream(logFile, { flags: "a" });
  const children: ChildProcess[] = [];
  const run = (script: string, args: readonly string[]) => {
    const child = spawn(process.execPath, ["--import", "tsx", join(ROOT, script), ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout!.pipe(log, { end: false });
    child.stderr!.pipe(log, { end: false });
    children.push(child);
    return child;
  };
  const cors = (options.corsOrigins ?? []).flatMap((o) => ["--cors-origin", o]);
  const gateway = run("gateway/src/cli.ts", ["serve", "--db", `sqlite:${join(dir, "gateway.db")}`, "--port", String(port), "--auth-file", authFile, ...cors]);
  try {
    await waitHealthy(url, gateway);
  } catch (err) {
    for (const c of children) c.kill("SIGKILL");
    throw new Error(`${(err as Error).message}; see ${logFile}`);
  }
  return {
    url,
    adminToken,
    dir,
    logFile,
    startSupervisor(spec) {
      const token = supervisorTokens.get(spec.sandbox);
      if (!token) throw new Error(`no supervisor token for sandbox ${spec.sandbox}: name it in startLocalStack({ sandboxes })`);
      run("supervisor/src/cli.ts", [
        "--gateway", url,
        "--sandbox", spec.sandbox,
        "--token", token,
        "--state-dir", join(dir, "supervisors"),
        ...(spec.args ?? []),
      ]);
    },
    async stop() {
      const exited = children.map((c) => (c.exitCode !== null ? Promise.resolve() : new Promise<void>((r) => c.once("exit", () => r()))));
      for (const c of children) c.kill("SIGTERM");
      const timer = setTimeout(() => children.forEach((c) => c.kill("SIGKILL")), 5_000);
      await Promise.all(exited);
      clearTimeout(timer);
      log.end();
      if (ownsDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
