// Chromium for the dashboard's browser test (examples/dashboard/test/dashboard.browser.test.ts),
// which drives Debian's Chromium at /usr/bin/chromium. This is the globalSetup of the `browser`
// project in vitest.config.ts: Vitest runs it only when a file of that project is part of the run,
// once per run, before any test starts.
//
// Chromium present: nothing happens. Missing, and this process is root with apt-get: it installs
// Debian's `chromium` package (apt-get update, then apt-get install -y chromium; 1–3 minutes),
// saying so in one line. Otherwise the run fails at once with one line that says what to install.
// OSC_CHROMIUM_INSTALL=0 forbids the install (the run then fails as it would without root).
//
// Two test runs on one machine never install at the same time: the install holds a lock file (and
// apt-get waits for dpkg's own lock), and whoever waited finds Chromium present afterwards.

import { spawn } from "node:child_process";
import { accessSync, closeSync, constants, createWriteStream, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const CHROMIUM = "/usr/bin/chromium";

/** Up to 15 minutes per apt-get step: a slow mirror, or another apt-get holding dpkg's lock. */
const APT_TIMEOUT_MS = 15 * 60_000;

/** What the setup found, as the decision needs it. */
export interface ChromiumState {
  readonly present: boolean;
  /** The process's uid; undefined where there is none (Windows). */
  readonly uid: number | undefined;
  readonly aptGet: boolean;
  /** false under OSC_CHROMIUM_INSTALL=0. */
  readonly installAllowed: boolean;
}

export type ChromiumPlan = { readonly kind: "present" } | { readonly kind: "install" } | { readonly kind: "fail"; readonly message: string };

const missing = (why: string) =>
  `Chromium is missing: install it with \`apt-get install -y chromium\` (Debian package) so ${CHROMIUM} exists (${why})`;

/** The decision alone, without side effects. */
export function planChromium(s: ChromiumState): ChromiumPlan {
  if (s.present) return { kind: "present" };
  if (!s.installAllowed) return { kind: "fail", message: missing("OSC_CHROMIUM_INSTALL=0: this test run does not install it") };
  if (s.uid !== 0) return { kind: "fail", message: missing("this test run installs it only when it runs as root") };
  if (!s.aptGet) return { kind: "fail", message: `Chromium is missing: install a Chromium so ${CHROMIUM} exists (apt-get is not available, so this test run cannot install it)` };
  return { kind: "install" };
}

/** Everything the setup does to the machine, injectable for the unit test. */
export interface ChromiumHost {
  present(): boolean;
  uid(): number | undefined;
  aptGet(): boolean;
  env(name: string): string | undefined;
  /** Runs a command to completion; `log` receives its output. */
  run(command: string, args: readonly string[], env: Record<string, string>): Promise<{ code: number | null; signal: string | null }>;
  /** The last lines of the install's output (for a failure message) and where all of it is. */
  readonly log: { tail(): string; readonly path: string; /** Removes the output once it is not needed (a successful install). */ discard?(): void };
  /** Runs `fn` holding the machine-wide install lock. */
  withLock<T>(fn: () => Promise<T>): Promise<T>;
  say(line: string): void;
  now(): number;
}

/** A one-line error: Vitest prints the message without a stack. */
export class ChromiumSetupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ChromiumSetupError";
    this.stack = `${this.name}: ${message}`;
  }
}

function stateOf(host: ChromiumHost): ChromiumState {
  return { present: host.present(), uid: host.uid(), aptGet: host.aptGet(), installAllowed: host.env("OSC_CHROMIUM_INSTALL") !== "0" };
}

/** Makes sure /usr/bin/chromium exists, installing it if it may; throws a one-line ChromiumSetupError otherwise. */
export async function ensureChromium(host: ChromiumHost): Promise<"present" | "installed"> {
  const first = planChromium(stateOf(host));
  if (first.kind === "present") return "present";
  if (first.kind === "fail") throw new ChromiumSetupError(first.message);
  return host.withLock(async () => {
    // Another test run may have installed it while this one waited for the lock.
    if (host.present()) return "present";
    const started = host.now();
    host.say(`Chromium is missing (${CHROMIUM}): installing Debian's chromium package (apt-get update && apt-get install -y chromium, 1–3 minutes; output in ${host.log.path})`);
    const env = { DEBIAN_FRONTEND: "noninteractive" };
    // Wait for dpkg's lock rather than fail when some other apt-get is running.
    const lockWait = ["-o", `DPkg::Lock::Timeout=${APT_TIMEOUT_MS / 1000}`];
    for (const args of [[...lockWait, "update"], [...lockWait, "install", "-y", "chromium"]]) {
      const r = await host.run("apt-get", args, env);
      if (r.code !== 0) {
        const how = r.code === null ? `was stopped by ${r.signal}` : `exited with ${r.code}`;
        const tail = host.log.tail();
        throw new ChromiumSetupError(
          `Chromium is missing and \`apt-get ${args.slice(lockWait.length).join(" ")}\` ${how}${tail ? ` (${tail})` : ""}; install Debian's chromium package so ${CHROMIUM} exists (full output: ${host.log.path})`,
        );
      }
    }
    if (!host.present()) throw new ChromiumSetupError(`apt-get installed the chromium package, but ${CHROMIUM} does not exist: install a Chromium at ${CHROMIUM} (full output: ${host.log.path})`);
    host.say(`Chromium installed at ${CHROMIUM} in ${Math.round((host.now() - started) / 1000)} s`);
    // The output is kept only when it explains a failure.
    host.log.discard?.();
    return "installed";
  });
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? "").split(":").some((dir) => dir !== "" && executable(join(dir, command)));
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * A lock file holding the owner's pid, created exclusively. A lock whose owner is gone (killed
 * mid-install) is taken over; a live owner is waited for, saying so once.
 */
export async function withLockFile<T>(path: string, fn: () => Promise<T>, say: (line: string) => void, timeoutMs = 2 * APT_TIMEOUT_MS): Promise<T> {
  const end = Date.now() + timeoutMs;
  let told = false;
  for (;;) {
    let fd: number;
    try {
      fd = openSync(path, "wx", 0o644);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      let owner = Number.NaN;
      try {
        owner = Number.parseInt(readFileSync(path, "utf8"), 10);
      } catch {
        // removed meanwhile, or not yet written
      }
      if (Number.isInteger(owner) && owner > 0 && !alive(owner)) {
        try {
          unlinkSync(path);
        } catch {
          // someone else took it over first
        }
        continue;
      }
      if (!told && Number.isInteger(owner)) {
        say(`waiting for another test run (pid ${owner}) that is installing Chromium (lock ${path})`);
        told = true;
      }
      if (Date.now() > end) throw new ChromiumSetupError(`Chromium is missing and another test run has held the install lock ${path} for ${timeoutMs / 60_000} minutes; install Debian's chromium package so ${CHROMIUM} exists`);
      await sleep(500);
      continue;
    }
    try {
      writeSync(fd, String(process.pid));
    } finally {
      closeSync(fd);
    }
    try {
      return await fn();
    } finally {
      try {
        unlinkSync(path);
      } catch {
        // already gone
      }
    }
  }
}

/** The real machine. */
export function systemHost(): ChromiumHost {
  const logPath = join(tmpdir(), `osc-chromium-install-${process.pid}.log`);
  let output = "";
  return {
    present: () => executable(CHROMIUM),
    uid: () => process.getuid?.(),
    aptGet: () => onPath("apt-get"),
    env: (name) => process.env[name],
    run: (command, args, env) =>
      new Promise((resolve, reject) => {
        const log = createWriteStream(logPath, { flags: "a" });
        log.write(`$ ${command} ${args.join(" ")}\n`);
        const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"], timeout: APT_TIMEOUT_MS });
        for (const stream of [child.stdout, child.stderr]) {
          stream.on("data", (chunk: Buffer) => {
            log.write(chunk);
            output = (output + chunk.toString("utf8")).slice(-4096);
          });
        }
        child.once("error", (err) => log.end(() => reject(err)));
        child.once("close", (code, signal) => log.end(() => resolve({ code, signal })));
      }),
    log: {
      path: logPath,
      discard: () => {
        try {
          unlinkSync(logPath);
        } catch {
          // never written, or already gone
        }
      },
      tail: () =>
        output
          .split("\n")
          .map((l) => l.trim())
          .filter((l) => l !== "")
          .slice(-2)
          .join(" / "),
    },
    withLock: (fn) => withLockFile(join(tmpdir(), "openshell-config-chromium-install.lock"), fn, (l) => process.stdout.write(`${l}\n`)),
    say: (line) => process.stdout.write(`${line}\n`),
    now: () => Date.now(),
  };
}

/**
 * Vitest globalSetup. A failure ends the run at once with its one line: thrown, Vitest would
 * first report "No test files found" (it had not started any) and then the error with a banner.
 */
export default async function setup(): Promise<void> {
  try {
    await ensureChromium(systemHost());
  } catch (err) {
    if (!(err instanceof ChromiumSetupError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
}
