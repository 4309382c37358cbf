// The pieces of `policy rollout` that need no gateway: its options, its progress bar (only on a
// terminal), its summary rows, the resume commands, its exit statuses and where it keeps state.

import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { parseCommandLine, UsageError } from "../../cli/args.js";
import { parseDuration } from "../../cli/values.js";
import { startProgressBar } from "../../cli/progress-bar.js";
import { describe as describe_, exitCodeOf, slowestFinished } from "../../cli/commands/rollout.js";
import { formatTimeoutFlag, rerunCommand, resumeTimeout, rolloutResumeCommand, waitCommand } from "../../cli/resume.js";
import { createRolloutStore, rolloutStateDir } from "../../cli/rollout-store.js";
import type { RolloutResult, SandboxRolloutResult } from "../../src/rollout.js";

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
      labelSelector: { requirements: [{ key: "env", op: "=", value: "prod" }, { key: "tier", op: "=", value: "web" }] },
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
    [["-l", "a in b", "-f", "p.yaml"], /--selector "a in b": unexpected "in" after "a"/],
    [["-l", "a=b", "-f", "p.yaml", "--sandbox", "x"], /does not take --sandbox/],
  ];
  it.each(bad)("rejects %j as a usage error", (args, message) => {
    expect(() => parse(...args)).toThrow(UsageError);
    expect(() => parse(...args)).toThrow(message);
  });
});

describe("policy rollout waves, gates and rollback options", () => {
  const base = ["-l", "a=b", "-f", "p.yaml"];
  it("reads --waves as cumulative counts and percentages, --max-failures as each wave's gate, --pause as a duration", () => {
    expect(parse(...base, "--waves", "1, 10%,100%", "--max-failures", "2", "--fail-on-degraded", "--pause", "5m", "--rollback-on-failure")).toMatchObject({
      waves: [1, "10%", "100%"],
      gate: { maxFailures: 2, failOnDegraded: true, pause: 300_000 },
      rollback: true,
      // The rollout's own limit stays unset: with waves, --max-failures is the gate's.
      maxFailures: undefined,
    });
    expect(parse(...base, "--waves", "1,50%", "--pause-for-approval")).toMatchObject({ waves: [1, "50%"], gate: { pause: "approval" } });
    expect(parse(...base, "--waves", "5,12.5%")).toMatchObject({ waves: [5, "12.5%"] });
    expect(parse(...base, "--waves", "1,100%")).not.toHaveProperty("gate");
    // Without --waves, --max-failures is the old limit and --rollback-on-failure rolls back when it is reached.
    const single = parse(...base, "--max-failures", "3", "--rollback-on-failure");
    expect(single).toMatchObject({ maxFailures: 3, rollback: true });
    expect(single).not.toHaveProperty("waves");
  });

  it("reads resume, undo and status ID, and --resume ID as resume's alias", () => {
    const of = (...a: string[]) => parseCommandLine(["policy", "rollout", ...a]).command;
    expect(of("resume", "r-1", "--timeout", "2m", "--concurrency", "4")).toEqual({ name: "policy rollout resume", id: "r-1", workspace: undefined, concurrency: 4, maxFailures: undefined, timeoutMs: 120_000 });
    expect(of("undo", "r-1")).toEqual({ name: "policy rollout undo", id: "r-1", concurrency: undefined, timeoutMs: undefined });
    expect(of("status", "r-1", "-w")).toEqual({ name: "policy rollout status", id: "r-1", watch: true });
    expect(parseCommandLine(["policy", "rollout", "status", "r-1", "-o", "yaml"]).global.output).toBe("yaml");
    expect(of("--resume", "r-1")).toMatchObject({ name: "policy rollout", resume: "r-1" });
  });

  const bad: [string[], string][] = [
    [[...base, "--waves", "1,x"], '--waves: "x" is neither a count of at least 1 nor a percentage (e.g. 1,10%,100%)'],
    [[...base, "--waves", "1,,100%"], '--waves must be a comma-separated list of counts and percentages such as 1,10%,100%; got "1,,100%"'],
    [[...base, "--waves", "10%,5%"], "--waves: sizes are cumulative and must increase (5% after 10%)"],
    [[...base, "--waves", "5,2"], "--waves: sizes are cumulative and must increase (2 after 5)"],
    [[...base, "--waves", "1,150%"], "--waves: 150% is not a percentage above 0% and at most 100%"],
    [[...base, "--waves", "0,100%"], '--waves: "0" is neither a count of at least 1 nor a percentage (e.g. 1,10%,100%)'],
    [[...base, "--waves", "1,100%", "--pause", "5m", "--pause-for-approval"], "--pause and --pause-for-approval are mutually exclusive"],
    [[...base, "--waves", "1,100%", "--pause", "soon"], '--pause must be a duration such as 500ms, 30s, 5m or 1h; got "soon"'],
    [[...base, "--waves", "1,100%", "--pause", "0"], '--pause must be a duration such as 30s or 5m (for no limit, use --pause-for-approval); got "0"'],
    [[...base, "--pause", "5m"], "--pause pauses between waves: give --waves"],
    [[...base, "--pause-for-approval"], "--pause-for-approval pauses between waves: give --waves"],
    [[...base, "--rollback-on-failure"], "--rollback-on-failure needs --waves or --max-failures (without either, no gate fails)"],
    [["--resume", "r-1", "--waves", "1,100%"], "--waves, --pause, --pause-for-approval, --rollback-on-failure and --fail-on-degraded start a rollout; a resumed one keeps its own"],
    [[...base, "--wave", "1,100%"], 'unknown option "--wave" for policy rollout; did you mean "--waves"?'],
    [[...base, "--pause-for-aproval"], 'unknown option "--pause-for-aproval" for policy rollout; did you mean "--pause-for-approval"?'],
    [["resme", "r-1"], 'unknown command "policy rollout resme"; did you mean "policy rollout resume"?'],
    [["undo"], "policy rollout undo needs ROLLOUT_ID"],
    [["status", "bad id"], 'ROLLOUT_ID must be a rollout id (letters, digits, ".", "_", ":", "-"); got "bad id"'],
    [["resume", "r-1", "--selector", "a=b"], "policy rollout resume does not take --selector"],
    [["undo", "r-1", "--waves", "1"], "policy rollout undo does not take --waves"],
    [["status", "r-1", "--timeout", "5s"], "policy rollout status does not take --timeout"],
  ];
  it.each(bad)("rejects %j with one line naming the flag", (args, message) => {
    let err: unknown;
    try {
      parse(...args);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).message).toBe(message);
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
    const bar = startProgressBar(s, "rolling out", { now: () => now, env: { NO_COLOR: "1" } });
    now = 1_000;
    bar.update(12, 48, "1 failed");
    bar.stop();
    expect(s.chunks).toContainEqual(`\rrolling out [#######-----------------------] 12/48 1 failed 1.0s\x1b[K\r`);
    expect(s.chunks.at(-1)).toBe("\r\x1b[K");
  });
});

describe("rollout summary rows", () => {
  const handle = (operationId?: string) => ({ kind: "openshell-config/operation-handle@1", sandbox: "s", idempotencyKey: "k", dimension: "policy", request: {}, ...(operationId ? { operationId } : {}) }) as never;
  const completed = (sandbox: string, durationMs: number, outcome = "applied") =>
    ({ status: "completed", sandbox, durationMs, handle: handle("op-c"), completion: { state: "applied", outcome, operationId: `op-${sandbox}` } }) as unknown as SandboxRolloutResult;
  const pending = (sandbox: string, durationMs: number, reason: "deadline" | "aborted") => ({ status: "pending", sandbox, wave: 0, durationMs, reason, handle: handle(`op-${sandbox}`) }) as SandboxRolloutResult;

  it("show the supervisor's outcome in OUTCOME and the reason a wait ended, with the operation, in DETAIL", () => {
    expect(describe_(pending("a", 10, "deadline"))).toEqual({ state: "pending", outcome: "-", detail: "wait timed out; operation op-a" });
    expect(describe_(pending("b", 10, "aborted"))).toEqual({ state: "pending", outcome: "-", detail: "interrupted; operation op-b" });
    expect(describe_(completed("c", 10, "degraded"))).toEqual({ state: "applied", outcome: "degraded", detail: "operation op-c" });
    expect(describe_({ status: "skipped", sandbox: "d", wave: 0, reason: "halted" })).toEqual({ state: "skipped", outcome: "-", detail: "not sent (halted)" });
  });

  it("list as slowest only sandboxes that finished, slowest first", () => {
    const r = { sandboxes: [completed("fast", 100), pending("stuck", 60_000, "deadline"), completed("slow", 900), pending("cut", 5_000, "aborted")] } as unknown as RolloutResult;
    expect(slowestFinished(r).map((s) => s.sandbox)).toEqual(["slow", "fast"]);
  });
});

describe("resume commands", () => {
  const repeat = { connectionArgs: ["--url", "https://gw.example:8443", "--protocol", "connect"], format: "json" };

  it("a resume command repeats a useful --timeout, not the default and not one too short to be of use (--timeout 1ms)", () => {
    expect(resumeTimeout(1, 60_000)).toBeUndefined();
    expect(resumeTimeout(9_999, 60_000)).toBeUndefined();
    expect(resumeTimeout(60_000, 60_000)).toBeUndefined();
    expect(resumeTimeout(30_000, 60_000)).toBe(30_000);
    expect(resumeTimeout(Infinity, 60_000)).toBe(Infinity);
  });

  it("repeat the timeout, the workspace, the output format and the connection flags of the wait that ended", () => {
    expect(waitCommand(repeat, "0f3c", { workspace: "team a", timeoutMs: 2_000 })).toBe(
      "openshell-config operation wait 0f3c --workspace 'team a' --timeout 2s -o json --url https://gw.example:8443 --protocol connect",
    );
    expect(waitCommand({ connectionArgs: [], format: "table" }, "0f3c", {})).toBe("openshell-config operation wait 0f3c");
    // `policy rollout resume ID`, the command; `policy rollout --resume ID` is its alias.
    expect(rolloutResumeCommand(repeat, "r-1", { timeoutMs: 1_500 })).toBe("openshell-config policy rollout resume r-1 --timeout 1.5s -o json --url https://gw.example:8443 --protocol connect");
  });

  it("write a timeout as --timeout reads it back", () => {
    for (const [ms, text] of [[500, "500ms"], [1_500, "1.5s"], [2_000, "2s"], [120_000, "2m"], [90_000, "90s"], [3_600_000, "1h"], [Infinity, "0"]] as const) {
      expect(formatTimeoutFlag(ms)).toBe(text);
      expect(parseDuration(text)).toBe(ms);
    }
  });

  it("rerun an update with its idempotency key and without the token", () => {
    expect(rerunCommand(["policy", "set", "-s", "web", "-f", "p.yaml", "--token", "s3cret", "--token=s3cret", "--wait"], "k-1")).toBe(
      "openshell-config policy set -s web -f p.yaml --wait --idempotency-key k-1",
    );
    expect(rerunCommand(["policy", "set", "--idempotency-key", "mine"], "k-1")).toBe("openshell-config policy set --idempotency-key mine");
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
        kind: "openshell-config/rollout@2" as const,
        id: "r-1",
        request: { settingKey: "k", settingValue: { stringValue: "v" } },
        concurrency: 4,
        sandboxes: ["a"],
        refs: {},
        waves: [{ sandboxes: ["a"], gate: { maxFailures: null, maxTotalFailures: null, failOnDegraded: false, pause: null } }],
        wave: 0,
        phase: "running" as const,
        rollback: "never" as const,
        before: {},
        undoRefs: {},
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
