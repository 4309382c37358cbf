// Shared by the tests of the built `openshell-config` binary: building dist/ once when it is
// stale, running the binary as a user would (throwaway HOME, URL and token in the environment),
// and writing policy files.

import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SandboxPhase } from "openshell-config/raw";

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
export const BIN = join(ROOT, "dist", "cli", "main.js");

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** When runBinary interrupts the process: after a fixed time, or as soon as a condition (polled every 20 ms) holds. */
export interface InterruptOptions {
  readonly interruptAfterMs?: number;
  /** For a test that needs the process caught mid-work, whatever the machine's speed; given its standard output so far. */
  readonly interruptWhen?: (stdout: string) => boolean;
  /** The signal (default SIGINT, Ctrl-C); SIGKILL for a crash. */
  readonly interruptSignal?: NodeJS.Signals;
}

/** Runs the built binary in `cwd` with exactly `env` (undefined values unset), interrupting it as `options` say. */
export function runBinary(args: readonly string[], cwd: string, env: Record<string, string | undefined>, options: InterruptOptions = {}): Promise<Run> {
  const clean = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: clean, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const signal = options.interruptSignal ?? "SIGINT";
    const timer = options.interruptAfterMs === undefined ? undefined : setTimeout(() => child.kill(signal), options.interruptAfterMs);
    const when = options.interruptWhen;
    const poll =
      when === undefined
        ? undefined
        : setInterval(() => {
            if (!when(stdout)) return;
            clearInterval(poll);
            child.kill(signal);
          }, 20);
    child.once("error", rej);
    child.once("close", (code) => {
      clearTimeout(timer);
      clearInterval(poll);
      res({ code, stdout, stderr });
    });
  });
}

/** Runs `script` with `bash -c` in `cwd` with exactly `env`; its exit status and output. */
export function runBash(script: string, cwd: string | undefined, env: Record<string, string | undefined>): Promise<Run> {
  const clean = Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
  return new Promise((res, rej) => {
    const child = spawn("bash", ["-c", script], { ...(cwd !== undefined ? { cwd } : {}), env: clean, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    child.once("error", rej);
    child.once("close", (code) => res({ code, stdout, stderr }));
  });
}

/** True when every build output is newer than every input (make's rule). */
function distIsFresh(): boolean {
  const mtime = (p: string) => statSync(p).mtimeMs;
  const newest = (d: string): number =>
    Math.max(0, ...readdirSync(d, { withFileTypes: true }).map((e) => (e.isDirectory() ? newest(join(d, e.name)) : mtime(join(d, e.name)))));
  try {
    const outputs = ["dist/cli/main.js", "dist/index.js", "dist/index.cjs", "dist/index.d.ts", "dist/raw.js", "dist/rollout.js", "dist/oidc.js", "dist/transport/node.js"].map((p) => mtime(join(ROOT, p)));
    const inputs = [newest(join(ROOT, "src")), newest(join(ROOT, "cli")), ...["package.json", "tsup.config.ts", "tsconfig.json"].map((p) => mtime(join(ROOT, p)))];
    return Math.min(...outputs) > Math.max(...inputs);
  } catch {
    return false; // an output is missing
  }
}

/** A build's lock: test files run in parallel processes, and two builds at once clean each other's dist/. */
const BUILD_LOCK = join(ROOT, "test-results", ".build.lock");
/** A lock older than this was left by a test process that died mid-build. */
const STALE_LOCK_MS = 10 * 60_000;

/**
 * `npm run build`, unless dist/ is newer than every source and build input. Test files that need
 * the build at the same time (a fresh clone has no dist/) take turns through a lock directory:
 * one builds, the others wait for it and then find dist/ fresh.
 */
export async function build(): Promise<void> {
  if (distIsFresh()) return;
  mkdirSync(dirname(BUILD_LOCK), { recursive: true });
  for (;;) {
    try {
      mkdirSync(BUILD_LOCK);
      break;
    } catch (err) {
      if ((err as { code?: unknown }).code !== "EEXIST") throw err;
      try {
        if (Date.now() - statSync(BUILD_LOCK).mtimeMs > STALE_LOCK_MS) rmSync(BUILD_LOCK, { recursive: true, force: true });
      } catch {
        // released meanwhile
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  try {
    if (!distIsFresh()) await runBuild();
  } finally {
    rmSync(BUILD_LOCK, { recursive: true, force: true });
  }
}

function runBuild(): Promise<void> {
  return new Promise((res, rej) => {
    const child = spawn("npm", ["run", "build"], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (output += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (output += c));
    child.once("error", rej);
    child.once("close", (code) => (code === 0 ? res() : rej(new Error(`npm run build failed (${code}):\n${output}`))));
  });
}

/**
 * A policy file: a fixed base with `rules` (name → host, optional protocol) as network policies,
 * and a middleware whose service the supervisor probes at `middleware` (unreachable: degraded).
 */
export function policyYaml(rules: Record<string, { host: string; protocol?: string }>, middleware?: string): string {
  const lines = ["version: 1", "filesystem:", "  includeWorkdir: true", "  readOnly: [/usr]", "  readWrite: [/tmp, /workspace]", "networkPolicies:"];
  for (const [name, r] of Object.entries(rules)) {
    lines.push(`  ${name}:`, `    name: ${name}`, "    endpoints:", `      - host: ${r.host}`, "        ports: [443]");
    if (r.protocol) lines.push(`        protocol: ${r.protocol}`);
    lines.push("    binaries:", "      - path: /usr/bin/git");
  }
  if (middleware) {
    lines.push("networkMiddlewares:", "  audit:", "    name: audit", "    middleware: audit-log", `    config: { grpc_endpoint: "${middleware}" }`, "    order: 1");
  }
  return `${lines.join("\n")}\n`;
}

/** Waits until each of `names` is READY (a supervisor applied its bootstrap); polls every 50 ms. */
/** Waits until exactly `count` sandboxes match `labelSelector` and every one is READY (`list` pages ListSandboxes). */
export async function waitFleetReady(
  list: (labelSelector: string) => Promise<{ readonly sandboxes: readonly { readonly status?: { readonly phase: number } | undefined }[] }>,
  labelSelector: string,
  count: number,
  logFile: string,
): Promise<void> {
  for (let i = 0; ; i++) {
    const res = await list(labelSelector);
    if (res.sandboxes.length === count && res.sandboxes.every((sb) => sb.status?.phase === SandboxPhase.READY)) return;
    if (i > 600) throw new Error(`the fleet did not become READY; see ${logFile}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function waitReady(
  getPhase: (name: string) => Promise<number | undefined>,
  names: readonly string[],
  logFile: string,
  attempts = 600,
): Promise<void> {
  for (const name of names) {
    for (let i = 0; ; i++) {
      if ((await getPhase(name)) === SandboxPhase.READY) break;
      if (i > attempts) throw new Error(`sandbox ${name} did not become READY; see ${logFile}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
