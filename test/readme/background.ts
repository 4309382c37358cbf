// Commands run as a user runs them, for the tests of README.md and of the `npm run` scripts:
// a user's shell environment, a one-off bash command, and a long-running command (`npm run
// gateway`, `npm run dashboard`) in its own process group, stopped with Ctrl-C as a user would.

import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { ROOT } from "../cli/harness.js";

/**
 * The environment of a user's shell: no npm lifecycle variables, no gateway settings of ours;
 * XDG directories (and so the `openshell` registry) under `scratch`.
 */
export function userEnvIn(scratch: string, extra: Record<string, string>): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("npm_") && !k.startsWith("OPENSHELL_") && k !== "NODE_OPTIONS"),
  );
  return { ...env, XDG_CONFIG_HOME: join(scratch, "config"), XDG_STATE_HOME: join(scratch, "state"), ...extra };
}

export interface Exited {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `command` in bash; kills its process group after `timeoutMs`. */
export function bash(command: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<Exited> {
  return new Promise((res, rej) => {
    const child = spawn("bash", ["-c", command], { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (c: string) => (stdout += c));
    child.stderr.setEncoding("utf8").on("data", (c: string) => (stderr += c));
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${timeoutMs} ms)`;
      process.kill(-child.pid!, "SIGKILL");
    }, timeoutMs);
    child.once("error", rej);
    child.once("close", (code) => {
      clearTimeout(timer);
      res({ code, stdout, stderr });
    });
  });
}

/** A long-running command (`npm run gateway`, `npm run dashboard`) in its own process group. */
export class Background {
  readonly child: ChildProcess;
  output = "";
  private readonly exited: Promise<number | null>;

  constructor(command: string, env: NodeJS.ProcessEnv) {
    this.child = spawn("bash", ["-c", command], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    for (const s of [this.child.stdout!, this.child.stderr!]) s.setEncoding("utf8").on("data", (c: string) => (this.output += c));
    this.exited = new Promise((r) => this.child.once("exit", (code) => r(code)));
  }

  /** Resolves once the output has a line matching `re` (its match); rejects on exit or timeout. */
  async waitFor(re: RegExp, timeoutMs = 90_000): Promise<RegExpMatchArray> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const m = this.output.match(re);
      if (m) return m;
      if (this.child.exitCode !== null) throw new Error(`exited (${this.child.exitCode}) before printing ${re}:\n${this.output}`);
      if (Date.now() > end) throw new Error(`no ${re} within ${timeoutMs} ms:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /**
   * Ctrl-C, as a user stops it: SIGINT to the whole process group; SIGKILL to what is left of it
   * after 15 s. Done when every process of the group is gone, not when bash is: a gateway that
   * hung in its own exit (seen under `node --import tsx`) outlived the command that started it.
   */
  async stop(): Promise<void> {
    const group = -this.child.pid!;
    const alive = () => {
      try {
        process.kill(group, 0);
        return true;
      } catch {
        return false;
      }
    };
    if (!alive()) return;
    process.kill(group, "SIGINT");
    const until = async (ms: number) => {
      const end = Date.now() + ms;
      while (alive() && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    };
    await until(15_000);
    if (alive()) {
      try {
        process.kill(group, "SIGKILL");
      } catch {
        // gone meanwhile
      }
      await until(5_000);
    }
    await this.exited;
  }

}
