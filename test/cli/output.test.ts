// What the command line prints (cli/output.ts) and its spinner (cli/spinner.ts): the
// token is never printed, gateway text cannot drive the terminal, JSON is one document, and the
// spinner appears only on a terminal.

import { afterEach, describe, expect, it, vi } from "vitest";
import { createOutput, toJsonText } from "../../cli/output.js";
import { formatElapsed, startSpinner } from "../../cli/spinner.js";

function stream(isTTY = false) {
  const chunks: string[] = [];
  return { isTTY, chunks, text: () => chunks.join(""), write: (c: string) => (chunks.push(c), true) };
}

describe("output", () => {
  it("redacts the token from everything it prints, in every format", () => {
    const out = stream();
    const err = stream();
    const o = createOutput("table", out, err);
    o.redact("tok-0123456789");
    o.line("sent tok-0123456789");
    o.error("the gateway said: bad token tok-0123456789");
    const j = stream();
    const oj = createOutput("json", j, err);
    oj.redact("tok-0123456789");
    oj.json({ echo: "tok-0123456789" });
    expect(out.text() + err.text() + j.text()).not.toContain("tok-0123456789");
    expect(JSON.parse(j.text())).toEqual({ echo: "[redacted]" });
  });

  it("escapes control characters from untrusted text so it cannot drive the terminal", () => {
    const out = stream();
    const o = createOutput("table", out, stream());
    o.line("error: \u001b[2J\u001b]0;owned\u0007 bad");
    expect(out.text()).toBe("error: \\u001b[2J\\u001b]0;owned\\u0007 bad\n");
  });

  it("prints tables and fields only for humans, JSON only with --output json", () => {
    const human = stream();
    const h = createOutput("table", human, stream());
    h.table(["NAME", "PHASE"], [["web", "ready"], ["analytics", "stopped"]]);
    h.fields([["state", "applied"], ["error", undefined], ["operation", "op-1"]]);
    h.json({ ignored: true });
    expect(human.text()).toBe("NAME       PHASE\nweb        ready\nanalytics  stopped\nstate      applied\noperation  op-1\n");
    const machine = stream();
    const m = createOutput("json", machine, stream());
    m.line("ignored");
    m.table(["A"], [["b"]]);
    m.json({ n: 1n, at: new Date(0), bytes: new Uint8Array([1, 2, 3]) });
    expect(JSON.parse(machine.text())).toEqual({ n: "1", at: "1970-01-01T00:00:00.000Z", bytes: "AQID" });
  });

  it("writes warnings and errors to stderr whatever the format", () => {
    const out = stream();
    const err = stream();
    const o = createOutput("json", out, err);
    o.warn("runs degraded");
    o.error("failed");
    expect(out.text()).toBe("");
    expect(err.text()).toBe("warning: runs degraded\nerror: failed\n");
  });

  it("serializes 64-bit integers as decimal strings", () => {
    expect(toJsonText({ big: 2n ** 63n - 1n })).toContain('"9223372036854775807"');
  });
});

describe("spinner", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("writes nothing at all when the stream is not a terminal", () => {
    const s = stream(false);
    const spinner = startSpinner(s, "waiting");
    spinner.update("still waiting");
    spinner.stop();
    expect(s.chunks).toEqual([]);
  });

  it("shows the text with the elapsed time on a terminal, and erases its line when stopped", () => {
    vi.useFakeTimers();
    let now = 0;
    const s = stream(true);
    const spinner = startSpinner(s, "waiting for web", { intervalMs: 100, now: () => now });
    now = 1_250;
    vi.advanceTimersByTime(100);
    spinner.update("waiting for web (pending)");
    spinner.stop();
    spinner.stop();
    expect(s.chunks[0]).toMatch(/^\r\x1b\[2K. waiting for web 0\.0s$/);
    expect(s.chunks).toContainEqual(expect.stringMatching(/waiting for web 1\.3s$/));
    expect(s.chunks).toContainEqual(expect.stringMatching(/waiting for web \(pending\) 1\.3s$/));
    expect(s.chunks.at(-1)).toBe("\r\x1b[2K");
    const count = s.chunks.length;
    vi.advanceTimersByTime(1_000);
    expect(s.chunks.length).toBe(count);
  });

  it("formats elapsed time in seconds, then minutes", () => {
    expect(formatElapsed(400)).toBe("0.4s");
    expect(formatElapsed(59_949)).toBe("59.9s");
    expect(formatElapsed(125_000)).toBe("2m05s");
  });
});
