// The live line under the spinner and the rollout bar, on a fake terminal of 40, 80 and 120
// columns: what it writes must fit one row, redraw in place, leave nothing behind, stay silent
// off a terminal and honour NO_COLOR.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startLiveLine } from "../../cli/live-line.js";
import { barFrame, renderBar, startProgressBar } from "../../cli/progress-bar.js";
import { spinnerFrame, startSpinner } from "../../cli/spinner.js";
import { canRedraw, colorEnabled, ERASE_LINE, fit, visibleWidth, wrap } from "../../cli/terminal.js";

/** A terminal that records every write. */
function terminal(columns: number | undefined, isTTY = true) {
  const writes: string[] = [];
  return { isTTY, columns, writes, write: (c: string) => (writes.push(c), true) };
}

const COLOUR = /\x1b\[\d+m/;
const plain = (s: string) => s.replace(/\x1b\[[0-9;]*[mK]/g, "");
/** The text a write leaves on the row: what follows its last carriage return, escapes removed. */
const rowOf = (write: string) => plain(write.replace(/\r$/, "").split("\r").at(-1)!);
const colour = { NO_COLOR: undefined, TERM: "xterm-256color" };
const noColour = { NO_COLOR: "1", TERM: "xterm-256color" };
const ID = "0f3c2a1b-5c1d-4e0f-9a6b-3d2e1f0a9b8c";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("fitting a line to the terminal", () => {
  it.each([40, 80, 120])("cuts text longer than %i columns with … and keeps shorter text as it is", (width) => {
    const long = `waiting for operation ${ID} and operation ${ID}: pending`;
    expect(visibleWidth(fit(long, width))).toBe(Math.min(width, long.length));
    expect(fit(long, width).endsWith("…")).toBe(long.length > width);
    expect(fit("short", width)).toBe("short");
  });

  it("does not count colour sequences and closes a colour it cuts through", () => {
    const text = `\x1b[32m${"#".repeat(20)}\x1b[0m`;
    expect(visibleWidth(text)).toBe(20);
    expect(fit(text, 5)).toBe("\x1b[32m####…\x1b[0m");
  });

  it("removes control characters that came with a name or a state", () => {
    expect(fit("web\x1b[2J\x07\n", 80)).toBe("web[2J");
  });
});

describe("wrapping a note to the terminal", () => {
  it("breaks at spaces into lines of at most the width, indents the lines after the first, and keeps every word", () => {
    const text = "rollout 3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f: 3 sandboxes (env in (dev,staging,prod)), 1 sent before";
    const lines = wrap(text, 80).split("\n");
    expect(lines).toEqual(["rollout 3f2a8c1e-5b7d-4c9a-8e6f-0a1b2c3d4e5f: 3 sandboxes (env in", "  (dev,staging,prod)), 1 sent before"]);
    for (const l of lines) expect(visibleWidth(l)).toBeLessThanOrEqual(80);
    expect(lines.map((l) => l.trim()).join(" ")).toBe(text);
  });

  it("leaves a line that fits as it is, and a word longer than a line whole", () => {
    expect(wrap("wave 1/3  canary  1/1 applied", 80)).toBe("wave 1/3  canary  1/1 applied");
    expect(wrap(`see ${"x".repeat(30)} now`, 20)).toBe(`see\n  ${"x".repeat(30)}\n  now`);
    expect(wrap("a\u0007b c", 80)).toBe("ab c");
  });

  it("collapses runs of spaces only in a line it breaks, and keeps the text's own line breaks", () => {
    expect(wrap("abc    def", 5)).toBe("abc\n  def");
    expect(wrap("  lead   and   trail  ", 10)).toBe("lead and\n  trail");
    expect(wrap("one\ntwo three four", 9)).toBe("one\ntwo three\n  four");
  });
});

describe("when to draw and in which colours", () => {
  it("draws only on a terminal that is not dumb", () => {
    expect(canRedraw(terminal(80), colour)).toBe(true);
    expect(canRedraw(terminal(80, false), colour)).toBe(false);
    expect(canRedraw(terminal(80), { TERM: "dumb" })).toBe(false);
  });

  it("uses colour unless NO_COLOR is set (an empty NO_COLOR is unset) or the stream is not a terminal", () => {
    expect(colorEnabled(terminal(80), colour)).toBe(true);
    expect(colorEnabled(terminal(80), noColour)).toBe(false);
    expect(colorEnabled(terminal(80), { NO_COLOR: "" })).toBe(true);
    expect(colorEnabled(terminal(80, false), colour)).toBe(false);
  });
});

describe("a live line", () => {
  it("writes nothing at all when the stream is not a terminal", () => {
    const t = terminal(undefined, false);
    const line = startLiveLine(t, () => "text", { env: colour });
    vi.advanceTimersByTime(1_000);
    line.above(() => t.write("printed\n"));
    line.stop();
    expect(t.writes).toEqual(["printed\n"]);
  });

  it.each([40, 80, 120])("at %i columns every frame fits one column short of the width, redrawn in place with no newline", (columns) => {
    const t = terminal(columns);
    let n = 0;
    const line = startLiveLine(t, () => `frame ${n++} ${"x".repeat(200)}`, { env: colour });
    vi.advanceTimersByTime(2_000);
    line.stop();
    const frames = t.writes.slice(0, -1);
    expect(frames.length).toBeGreaterThan(1);
    for (const w of frames) {
      expect(w.startsWith("\r")).toBe(true);
      expect(w).not.toContain("\n");
      expect(rowOf(w).length).toBe(columns - 1);
    }
  });

  it("leaves nothing behind: the last write erases the line, and nothing is written after stop", () => {
    const t = terminal(80);
    const line = startLiveLine(t, () => "waiting", { env: colour });
    line.stop();
    const count = t.writes.length;
    vi.advanceTimersByTime(1_000);
    line.stop();
    expect(t.writes.at(-1)).toBe(ERASE_LINE);
    expect(t.writes).toHaveLength(count);
  });

  it("redraws only when the text changed, at most once a frame", () => {
    const t = terminal(80);
    let text = "same";
    const line = startLiveLine(t, () => text, { env: colour });
    vi.advanceTimersByTime(1_000);
    expect(t.writes).toHaveLength(1);
    for (let i = 0; i < 100; i++) {
      text = `changed ${i}`;
      line.refresh();
    }
    // The first refresh draws (a second had passed since the last draw); the rest wait for the frame.
    expect(t.writes).toHaveLength(2);
    vi.advanceTimersByTime(100);
    expect(t.writes.map(rowOf)).toEqual(["same", "changed 0", "changed 99"]);
    line.stop();
  });

  it("erases itself before printing a line above, then draws again below it", () => {
    const t = terminal(80);
    const line = startLiveLine(t, () => "bar", { env: colour });
    line.above(() => t.write("rollout r-1: 12 sandboxes\n"));
    line.stop();
    expect(t.writes).toEqual(["\rbar\x1b[K\r", ERASE_LINE, "rollout r-1: 12 sandboxes\n", "\rbar\x1b[K\r", ERASE_LINE]);
  });

  it("is erased by anything else written to its terminal (a retry notice, a line on stdout) and drawn again below it", () => {
    const t = terminal(80);
    const stdout = terminal(80);
    const line = startLiveLine(t, () => "waiting 1.0s", { env: colour, companions: [stdout] });
    t.write("gateway unreachable (ECONNREFUSED); retrying 3 times within 3.5s…\n");
    vi.advanceTimersByTime(100);
    stdout.write("a line on stdout\n");
    vi.advanceTimersByTime(100);
    line.stop();
    t.write("after\n");
    stdout.write("after\n");
    expect(t.writes).toEqual(["\rwaiting 1.0s\x1b[K\r", ERASE_LINE, "gateway unreachable (ECONNREFUSED); retrying 3 times within 3.5s…\n", "\rwaiting 1.0s\x1b[K\r", ERASE_LINE, "\rwaiting 1.0s\x1b[K\r", ERASE_LINE, "after\n"]);
    expect(stdout.writes).toEqual(["a line on stdout\n", "after\n"]);
  });
});

describe("the spinner", () => {
  it.each([40, 80, 120])("of operation wait names the operation once and fits %i columns, elapsed time kept", (columns) => {
    const t = terminal(columns);
    const spinner = startSpinner(t, `waiting for operation ${ID}`, { env: noColour });
    spinner.update(`waiting for operation ${ID}: pending`);
    vi.advanceTimersByTime(3_000);
    spinner.stop();
    const rows = t.writes.slice(0, -1).map(rowOf);
    for (const row of rows) {
      expect(row.length).toBeLessThanOrEqual(columns - 1);
      expect(row.split(ID.slice(0, 8)).length).toBeLessThanOrEqual(2);
      expect(row).toMatch(/ \d+\.\ds$/);
    }
    expect(rows.at(-1)).toMatch(/ 3\.0s$/);
  });

  it("has no colour with NO_COLOR, and a coloured frame without it", () => {
    const grey = terminal(80);
    startSpinner(grey, "waiting", { env: noColour }).stop();
    expect(grey.writes.join("")).not.toMatch(COLOUR);
    const coloured = terminal(80);
    startSpinner(coloured, "waiting", { env: colour }).stop();
    expect(coloured.writes[0]).toMatch(COLOUR);
  });

  it("keeps the frame and the elapsed time when the text is cut", () => {
    expect(spinnerFrame("x".repeat(100), 1_500, 20)).toBe(`⠴ ${"x".repeat(12)}… 1.5s`);
  });
});

describe("the rollout bar", () => {
  it("shows a spinner, not a bar, until the sandboxes are known: never a full bar for 0/0", () => {
    const t = terminal(80);
    const bar = startProgressBar(t, "rolling out", { env: noColour, starting: "finding the sandboxes (env=prod)" });
    vi.advanceTimersByTime(300);
    const before = t.writes.map(rowOf);
    bar.update(0, 12, "");
    vi.advanceTimersByTime(100);
    bar.stop();
    expect(before[0]).toMatch(/^⠋ finding the sandboxes \(env=prod\) 0\.0s$/);
    for (const row of before) expect(row).not.toMatch(/\[|0\/0/);
    expect(t.writes.map(rowOf)).toContainEqual(expect.stringMatching(/^rolling out \[-+\] 0\/12 0\.\ds$/));
    expect(renderBar(0, 0, 4)).toBe("[----]");
  });

  it.each([40, 80, 120])("fits %i columns, its bar as wide as the text leaves room for", (columns) => {
    const row = barFrame("rolling out", { done: 12, total: 48, status: "1 failed" }, 61_000, columns - 1);
    expect(row.length).toBeLessThanOrEqual(columns - 1);
    expect(row).toMatch(/^rolling out \[#+-+\] 12\/48 1 failed 1m01s$/);
  });

  it("drops the bar, not the counts or the time, when even a short bar does not fit", () => {
    expect(barFrame("rolling out", { done: 12, total: 48, status: "1 failed" }, 1_000, 34)).toBe("rolling out 12/48 1 failed 1.0s");
  });

  it("fills the bar in proportion, never beyond its width", () => {
    expect(renderBar(0, 4, 4)).toBe("[----]");
    expect(renderBar(2, 4, 4)).toBe("[##--]");
    expect(renderBar(4, 4, 4)).toBe("[####]");
    expect(renderBar(9, 4, 4)).toBe("[####]");
  });
});
