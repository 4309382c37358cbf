// The pieces of `policy rollout` that need no gateway: its options, its progress bar (only on a
// terminal), its exit statuses and where it keeps state.

import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseCommandLine, UsageError } from "../../cli/args.js";
import { renderBar, startProgressBar } from "../../cli/progress-bar.js";
import { exitCodeOf } from "../../cli/commands/rollout.js";
import { createRolloutStore, rolloutStateDir } from "../../cli/rollout-store.js";
import type { RolloutResult } from "../../src/rollout.js";

function stream(isTTY: boolean) {
  const chunks: string[] = [];
  return { isTTY, chunks, write: (c: string) => (chunks.push(c), true) };
}

const parse = (...args: string[]) => parseCommandLine(["policy", "rollout", ...args]).command;

describe("policy rollout options", () => {
  it("reads the selector, file and limits of a new rollout", () => {
    expect(parse("--selector", "env=prod", "-l", "tier=web", "--file", "p.yaml", "--max-failures", "3", "--concurrency", "8", "--timeout", "2m")).toEqual({
      name: "policy rollout",
      selector: "env=prod,tier=web",
      file: "p.yaml",
      workspace: undefined,
      maxFailures: 3,
      concurrency: 8,
      timeoutMs: 120_000,
      resume: undefined,
    });
  });

  it("takes --resume alone, or with both --selector and --file", () => {
    expect(parse("--resume", "r-1")).toMatchObject({ resume: "r-1", selector: undefined, file: undefined });
    expect(parse("--resume", "r-1", "-l", "a=b", "-f", "p.yaml")).toMatchObject({ resume: "r-1", selector: "a=b", file: "p.yaml" });
  });

  const bad: [string[], RegExp][] = [
    [["--file", "p.yaml"], /needs --selector/],
    [["--selector", "a=b"], /needs --file/],
    [["--resume", "r-1", "--file", "p.yaml"], /both --selector and --file .* or neither/],
    [["--resume", "bad id"], /--resume must be a rollout id/],
    [["-l", "a=b", "-f", "p.yaml", "--concurrency", "0"], /--concurrency must be an integer of at least 1/],
    [["-l", "a=b", "-f", "p.yaml", "--max-failures", "two"], /--max-failures must be an integer of at least 1/],
    [["-l", "a", "-f", "p.yaml"], /--selector must be key=value/],
    [["-l", "a=b", "-f", "p.yaml", "--sandbox", "x"], /does not take --sandbox/],
  ];
  it.each(bad)("rejects %j as a usage error", (args, message) => {
    expect(() => parse(...args)).toThrow(UsageError);
    expect(() => parse(...args)).toThrow(message);
  });
});

describe("rollout progress bar", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("writes nothing when stderr is not a terminal", () => {
    const s = stream(false);
    const bar = startProgressBar(s, "rolling out");
    bar.update(5, 10, "");
    bar.stop();
    expect(s.chunks).toEqual([]);
  });

  it("draws done/total with failures on a terminal and erases its line when stopped", () => {
    vi.useFakeTimers();
    let now = 0;
    const s = stream(true);
    const bar = startProgressBar(s, "rolling out", { now: () => now });
    now = 1_000;
    bar.update(12, 48, "(1 failed)");
    bar.stop();
    expect(s.chunks).toContainEqual(`\r\x1b[2Krolling out [######------------------] 12/48 (1 failed) 1.0s`);
    expect(s.chunks.at(-1)).toBe("\r\x1b[2K");
  });

  it("fills the bar in proportion, never beyond its width", () => {
    expect(renderBar(0, 4, 4)).toBe("[----]");
    expect(renderBar(2, 4, 4)).toBe("[##--]");
    expect(renderBar(4, 4, 4)).toBe("[####]");
    expect(renderBar(0, 0, 4)).toBe("[####]");
  });
});

describe("rollout exit status", () => {
  const result = (over: Partial<RolloutResult>, statuses: RolloutResult["sandboxes"] = []): RolloutResult =>
    ({ aborted: false, halted: false, sandboxes: statuses, counts: { total: 0, byStatus: { completed: 0, pending: 0, error: 0, skipped: 0 }, byState: {}, byOutcome: {} }, ...over }) as RolloutResult;
  const completed = (state: string) => ({ status: "completed", sandbox: "s", completion: { state } }) as unknown as RolloutResult["sandboxes"][number];

  it("is 0 when every sandbox applied or is inactive", () => {
    expect(exitCodeOf(result({}, [completed("applied"), completed("inactive")]))).toBe(0);
  });
  it("is 1 for a failed, superseded or cancelled sandbox, or a halt", () => {
    for (const state of ["failed", "superseded", "cancelled"]) expect(exitCodeOf(result({}, [completed(state)]))).toBe(1);
    expect(exitCodeOf(result({ halted: true }))).toBe(1);
  });
  it("is 124 when a wait timed out and nothing failed, 130 when interrupted", () => {
    const pending = result({ counts: { total: 1, byStatus: { completed: 0, pending: 1, error: 0, skipped: 0 }, byState: {}, byOutcome: {} } });
    expect(exitCodeOf(pending)).toBe(124);
    expect(exitCodeOf(result({ aborted: true }, [completed("failed")]))).toBe(130);
  });
});

describe("rollout state files", () => {
  it("live under $XDG_STATE_HOME, else ~/.local/state", () => {
    expect(rolloutStateDir({ XDG_STATE_HOME: "/x" }, "/home/u")).toBe("/x/openshell-config/rollouts");
    expect(rolloutStateDir({}, "/home/u")).toBe("/home/u/.local/state/openshell-config/rollouts");
  });

  it("are saved readable only by the user and read back as the same state", () => {
    const dir = mkdtempSync(join(tmpdir(), "rollout-store-"));
    try {
      const store = createRolloutStore(join(dir, "rollouts"));
      const state = {
        kind: "openshell-config/rollout@1" as const,
        id: "r-1",
        request: { settingKey: "k", settingValue: { stringValue: "v" } },
        concurrency: 4,
        sandboxes: ["a"],
        refs: {},
      };
      const path = store.save(state);
      expect(statSync(path).mode & 0o777).toBe(0o600);
      expect(store.load("r-1")).toEqual(state);
      expect(store.load("r-2")).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
