// Runs the built `openshell-config` in a real pseudo-terminal, a detached tmux pane of a given
// size, and reads back what a person would see: the screen (rows as the terminal wrapped them,
// or lines as printed), what the program wrote byte for byte (pipe-pane), and its exit status.
// Each run has its own tmux server (-L), killed when the run ends.

import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { shellQuote } from "../../cli/commands/context.js";
import { BIN } from "./harness.js";

const exec = promisify(execFile);

/** A guard against a run that never ends (a hung command), not a measure of speed. */
const GIVE_UP_MS = 90_000;
const POLL_MS = 50;

export interface Screen {
  /** The rows of the pane, top to bottom, trailing empty rows dropped, the exit marker removed. */
  readonly rows: readonly string[];
  /** The same with wrapped rows joined back into the lines that were printed. */
  readonly lines: readonly string[];
  /** Every byte the program wrote to the terminal (stdout and stderr), escapes included. */
  readonly raw: string;
  readonly code: number;
}

export interface PaneRun {
  /** The screen now, as rows (wrapped). */
  capture(): Promise<string[]>;
  /** Polls the screen until `test` holds for one of its rows; returns that screen's rows. */
  waitForRow(test: (row: string) => boolean, what: string): Promise<string[]>;
  /** Types keys, e.g. `C-c`. */
  keys(...keys: string[]): Promise<void>;
  /** Waits for the command to exit; the final screen. */
  finish(): Promise<Screen>;
}

let runs = 0;

export async function hasTmux(): Promise<boolean> {
  try {
    await exec("tmux", ["-V"]);
    return true;
  } catch {
    return false;
  }
}

const MARKER = /\[exit (\d+)\]$/;

function trimEnd(rows: string[]): string[] {
  const out = [...rows];
  while (out.length > 0 && out.at(-1)!.trim() === "") out.pop();
  return out;
}

/**
 * Starts `node dist/cli/main.js ...args` in a `columns`-wide pane with exactly `env` (plus TERM),
 * then `[exit N]` once it exits.
 */
export async function startInPane(
  columns: number,
  args: readonly string[],
  env: Record<string, string>,
  cwd: string,
  /** What runs with `args`; default `node dist/cli/main.js` (e.g. `["npx", "openshell-config"]`). */
  program: readonly string[] = [process.execPath, BIN],
): Promise<PaneRun> {
  const socket = `osc-test-${process.pid}-${++runs}`;
  const dir = mkdtempSync(join(tmpdir(), "osc-tmux-"));
  const rawFile = join(dir, "raw");
  const tmux = (...a: string[]) => exec("tmux", ["-L", socket, "-f", "/dev/null", ...a], { encoding: "utf8" });
  const assignments = Object.entries({ TERM: "tmux-256color", ...env }).map(([k, v]) => `${k}=${shellQuote(v)}`);
  const command = [`cd ${shellQuote(cwd)} &&`, "env -i", ...assignments, ...program.map(shellQuote), ...args.map(shellQuote)].join(" ");
  // The pane waits until its output is piped to a file too (so that the file has the first
  // frame); `cat` keeps the pane open for the last capture.
  const go = `tmux -L ${socket} wait-for go`;
  await tmux("new-session", "-d", "-x", String(columns), "-y", "50", "-s", "t", `${go}; ${command}; printf '[exit %d]' $?; exec cat`);
  await tmux("pipe-pane", "-t", "t", "-o", `cat > ${shellQuote(rawFile)}`);
  await tmux("wait-for", "-S", "go");

  const capture = async (join = false) => trimEnd((await tmux("capture-pane", "-p", ...(join ? ["-J"] : []), "-S", "-", "-t", "t")).stdout.split("\n"));
  const until = async <T>(probe: () => Promise<T | undefined>, what: string): Promise<T> => {
    const end = Date.now() + GIVE_UP_MS;
    for (;;) {
      const v = await probe();
      if (v !== undefined) return v;
      if (Date.now() > end) throw new Error(`gave up waiting for ${what}; the screen:\n${(await capture()).join("\n")}`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };
  return {
    capture: () => capture(),
    waitForRow: (test, what) =>
      until(async () => {
        const rows = await capture();
        return rows.some(test) ? rows : undefined;
      }, what),
    async keys(...keys) {
      await tmux("send-keys", "-t", "t", ...keys);
    },
    async finish() {
      try {
        const code = await until(async () => {
          const m = MARKER.exec((await capture()).at(-1) ?? "");
          return m ? Number(m[1]) : undefined;
        }, `${args.join(" ")} to exit`);
        const strip = (rows: string[]) => trimEnd([...rows.slice(0, -1), rows.at(-1)!.replace(MARKER, "")]);
        const rows = strip(await capture());
        const lines = strip(await capture(true));
        return { rows, lines, raw: readFileSync(rawFile, "utf8"), code };
      } finally {
        await tmux("kill-server").catch(() => {});
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

/** How many rows `lines` take on a terminal `columns` wide (an empty line takes one). */
export function rowsFor(lines: readonly string[], columns: number): number {
  return lines.reduce((n, l) => n + Math.max(1, Math.ceil([...l].length / columns)), 0);
}

/** The frames a live line drew: the text between carriage returns, escapes removed. */
export function framesOf(raw: string): string[] {
  return raw
    .split(/\r|\n/)
    .map((f) => f.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, ""))
    .filter((f) => f !== "");
}
