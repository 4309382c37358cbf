// The `openshell-gateway` executable run from its source, with its output collected line by line.

import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const cli = join(root, "gateway/src/cli.ts");

export interface Run {
  child: ChildProcess;
  /** stdout and stderr lines, in arrival order. */
  lines: string[];
  exit: Promise<number | null>;
  /** Resolves with the first stdout JSON line whose msg matches. */
  waitFor(msg: RegExp): Promise<Record<string, unknown>>;
}

/**
 * Gateways started here and not yet exited: killed after the test file's last test, so that a test
 * that times out (its own `finally` never runs) leaves no gateway behind.
 */
const running = new Set<ChildProcess>();
afterAll(() => {
  for (const child of running) child.kill("SIGKILL");
});

/** Starts `openshell-gateway ...args`. */
export function run(args: string[], env: Record<string, string> = {}): Run {
  const child = spawn(process.execPath, ["--import", "tsx", cli, ...args], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  child.once("exit", () => running.delete(child));
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  // A buffer per stream, so that a line is never spliced from both.
  const collect = () => {
    let buffer = "";
    return (chunk: Buffer) => {
      buffer += chunk.toString("utf8");
      const parts = buffer.split("\n");
      buffer = parts.pop()!;
      lines.push(...parts);
      for (const w of waiters) w();
    };
  };
  child.stdout!.on("data", collect());
  child.stderr!.on("data", collect());
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    lines,
    exit,
    waitFor(msg) {
      return new Promise((resolve, reject) => {
        const check = () => {
          for (const line of lines) {
            try {
              const json = JSON.parse(line) as Record<string, unknown>;
              if (typeof json.msg === "string" && msg.test(json.msg)) return resolve(json);
            } catch {
              // not a log line
            }
          }
        };
        waiters.push(check);
        check();
        void exit.then(() => reject(new Error(`exited before ${msg}: ${lines.join("\n")}`)));
      });
    },
  };
}
