// What the command line prints (cli/output.ts, cli/format.ts, cli/setting-format.ts): the token
// is never printed, gateway text cannot drive the terminal, JSON and YAML are one document of the
// same typed data, --watch frames redraw in place only on a terminal, and values have one style
// (versions, durations, hashes, setting values by type). The spinner's tests are in
// live-line.test.ts.

import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { createOutput, formatTable, rowsOf, toJsonText, toYamlText } from "../../cli/output.js";
import { countOf, formatAge, formatDuration, formatVersion, shortHash } from "../../cli/format.js";
import { formatDuration as sharedFormatDuration } from "../../shared/duration.js";
import { formatSettingValue, settingJson } from "../../cli/setting-format.js";

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

describe("-o yaml", () => {
  it("prints the same document as -o json, 64-bit integers, bytes and times included", () => {
    const value = { n: 2n ** 63n - 1n, at: new Date(0), bytes: new Uint8Array([1, 2, 3]), list: [{ a: null }], s: "64" };
    const out = stream();
    createOutput("yaml", out, stream()).json(value);
    expect(parseYaml(out.text())).toEqual(JSON.parse(toJsonText(value)));
    expect(out.text()).toBe(`${toYamlText(value)}\n`);
    expect(out.text()).toContain('n: "9223372036854775807"');
    expect(out.text()).toContain('s: "64"');
  });

  it("prints no tables or lines, and redacts the token", () => {
    const out = stream();
    const o = createOutput("yaml", out, stream());
    o.redact("tok-0123456789");
    o.line("ignored");
    o.table(["A"], [["b"]]);
    o.frame(["ignored"]);
    o.json({ echo: "tok-0123456789" });
    expect(out.text()).toBe("echo: \"[redacted]\"\n");
  });
});

describe("--watch frames", () => {
  it("are plain lines when stdout is not a terminal", () => {
    const out = stream(false);
    const o = createOutput("table", out, stream());
    expect(o.live).toBe(false);
    o.frame(["a", "b"]);
    o.frame(["c"]);
    expect(out.text()).toBe("a\nb\nc\n");
  });

  it("replace the previous frame on a terminal: up as many rows as it took, then erase below", () => {
    const out = { ...stream(true), columns: 10 };
    const o = createOutput("table", out, stream(), {});
    expect(o.live).toBe(true);
    o.frame(["one", "two"]);
    o.frame(["a line longer than ten"]);
    expect(out.chunks).toEqual(["one\ntwo\n", "\x1b[2A\r\x1b[Ja line l…\n"]);
  });

  it("cut a line by terminal columns, and count the rows a wide line took by columns too", () => {
    const out = { ...stream(true), columns: 10 };
    const o = createOutput("table", out, stream(), {});
    o.frame(["漢字漢字漢字漢字"]); // 16 columns in 8 code units: cut, one row
    o.frame(["ok"]);
    expect(out.chunks).toEqual(["漢字漢字…\n", "\x1b[1A\r\x1b[Jok\n"]);
    expect(rowsOf("漢字漢字漢字漢字", 10)).toBe(2);
    expect(rowsOf("abcdefghij", 10)).toBe(1);
  });

  it("are not redrawn on a dumb terminal", () => {
    const out = stream(true);
    const o = createOutput("table", out, stream(), { TERM: "dumb" });
    o.frame(["a"]);
    o.frame(["b"]);
    expect(out.text()).toBe("a\nb\n");
  });

  it("format tables as table() prints them", () => {
    expect(formatTable(["NAME", "PHASE"], [["web", "ready"], ["analytics", "stopped"]])).toEqual(["NAME       PHASE", "web        ready", "analytics  stopped"]);
  });
});

describe("one style for values", () => {
  it("writes versions as v2 and durations as 950ms, 31.8s, 2m05s", () => {
    expect(formatVersion(2)).toBe("v2");
    expect(formatVersion(0)).toBe("-");
    expect(formatDuration(950)).toBe("950ms");
    expect(formatDuration(31_795)).toBe("31.8s");
    expect(formatDuration(999.6)).toBe("1.0s");
    expect(formatDuration(59_960)).toBe("1m00s");
    expect(formatDuration(1_000)).toBe("1.0s");
    expect(formatDuration(125_000)).toBe("2m05s");
    expect(formatDuration(3_720_000)).toBe("1h02m");
    expect(formatDuration(Infinity)).toBe("no limit");
  });

  it("shortens a hash to sha256: and 12 hex digits", () => {
    expect(shortHash("6cebb638b742d1e3aa2f4e1c5d7b9a0f1e2d3c4b5a69788796a5b4c3d2e1f001")).toBe("sha256:6cebb638b742…");
    expect(shortHash("sha512:abcdef0123456789abcdef")).toBe("sha512:abcdef012345…");
    expect(shortHash("")).toBe("-");
  });

  it("keeps a setting's type: text tells int 64 from string \"64\", JSON gives { type, value }", () => {
    expect([64n, "64", true, new Uint8Array([1, 2, 3])].map((v) => formatSettingValue(v))).toEqual(["64", '"64"', "true", "base64:AQID"]);
    expect(settingJson(64n)).toEqual({ type: "int", value: "64" });
    expect(settingJson(-(2n ** 63n))).toEqual({ type: "int", value: "-9223372036854775808" });
    expect(settingJson("64")).toEqual({ type: "string", value: "64" });
    expect(settingJson(false)).toEqual({ type: "bool", value: false });
    expect(settingJson(new Uint8Array([1, 2, 3]))).toEqual({ type: "bytes-base64", value: "AQID" });
    expect(settingJson(undefined)).toEqual({ type: null, value: null });
  });
});

describe("tables that fit the terminal (issue 30, item 5)", () => {
  const tty = (columns: number) => Object.assign(stream(true), { columns });

  it("AGE reads as kubectl's: seconds up to 2 minutes, then minutes, hours, days and years, at most two units", () => {
    const now = Date.UTC(2026, 11, 4, 12, 0, 0);
    const ago = (s: number) => formatAge(new Date(now - s * 1_000), now);
    expect([ago(0), ago(45), ago(119), ago(200), ago(600), ago(25 * 60), ago(3 * 3600 + 60), ago(5 * 3600 + 600), ago(20 * 3600), ago(3 * 86400 + 4 * 3600), ago(40 * 86400), ago(800 * 86400), ago(13 * 365 * 86400)]).toEqual([
      "0s", "45s", "119s", "3m20s", "10m", "25m", "3h1m", "5h10m", "20h", "3d4h", "40d", "2y70d", "13y",
    ]);
    // A clock a little behind the gateway's: never a negative age.
    expect(formatAge(new Date(now + 5_000), now)).toBe("0s");
    expect(formatAge(undefined, now)).toBe("-");
  });

  it("on a terminal, the last column is cut to the width with an ellipsis and the other columns are whole; piped, nothing is cut", () => {
    const rows = [["v3", "failed", "invalid policy: network_policies[\"files\"].endpoints[0]: protocol \"ftp\" is not supported"]];
    const out = tty(40);
    createOutput("table", out, stream()).table(["VERSION", "STATUS", "ERROR"], rows);
    const lines = out.text().trimEnd().split("\n");
    expect(lines).toEqual(["VERSION  STATUS  ERROR", "v3       failed  invalid policy: networ…"]);
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(40);
    const piped = stream();
    createOutput("table", piped, stream()).table(["VERSION", "STATUS", "ERROR"], rows);
    expect(piped.text()).toContain('protocol "ftp" is not supported\n');
    // -o wide is never cut either: it is asked for in full.
    const wide = tty(40);
    createOutput("wide", wide, stream()).table(["VERSION", "STATUS", "ERROR"], rows);
    expect(wide.text()).toContain('protocol "ftp" is not supported\n');
  });

  it("leaves the last column out when not even its header fits the width, rather than cutting it to nothing", () => {
    expect(formatTable(["NAME", "DRIFT", "LABELS"], [["web", "behind,last-update-failed", "env=prod"]], { maxWidth: 36 })).toEqual([
      "NAME  DRIFT",
      "web   behind,last-update-failed",
    ]);
    expect(formatTable(["NAME", "DRIFT", "LABELS"], [["web", "behind", "env=prod,team=a"]], { maxWidth: 20 })).toEqual(["NAME  DRIFT   LABELS", "web   behind  env=p…"]);
  });

  it("leaves out as many columns from the right as do not fit their header, never a header cut to nothing", () => {
    const headers = ["NAME", "PHASE", "DESIRED", "ENFORCED", "DRIFT", "AGE", "LABELS"];
    for (const n of [41, 42, 63]) {
      const lines = formatTable(headers, [["n".repeat(n), "ready", "v1", "v1", "-", "3m20s", "env=dev"]], { maxWidth: 80 });
      for (const l of lines) expect(l.length, l).toBeLessThanOrEqual(80);
      // Every header shown is whole, and so is every cell but the last column's.
      const shown = lines[0]!.split(/\s+/);
      expect(headers.slice(0, shown.length)).toEqual(shown);
      expect(lines[1]!.split(/\s+/).slice(0, -1).join(" ")).toBe(["n".repeat(n), "ready", "v1", "v1", "-", "3m20s"].slice(0, shown.length - 1).join(" "));
    }
  });

  it("cuts the column it is told to first, down to its header, so that a name after it stays whole", () => {
    const headers = ["ID", "COUNTS", "BY"];
    const rows = [["3f2a8c1e", "3/3 applied, 1 failed, 3 rolled back", "demo-admin"]];
    expect(formatTable(headers, rows, { maxWidth: 40, cut: 1 })).toEqual(["ID        COUNTS              BY", "3f2a8c1e  3/3 applied, 1 fa…  demo-admin"]);
    for (const line of formatTable(headers, rows, { maxWidth: 40, cut: 1 })) expect(line.length).toBeLessThanOrEqual(40);
    // Without it, the last column goes (here it would not even have room for its header), and the
    // column before it, now the last, is cut to the width in turn.
    expect(formatTable(headers, rows, { maxWidth: 40 })).toEqual(["ID        COUNTS", "3f2a8c1e  3/3 applied, 1 failed, 3 roll…"]);
    // Never below its header: then the last column is cut as before.
    expect(formatTable(headers, rows, { maxWidth: 24, cut: 1 })).toEqual(["ID        COUNTS  BY", "3f2a8c1e  3/3 a…  demo-…"]);
    // Rows that fit are left alone.
    expect(formatTable(headers, rows, { maxWidth: 80, cut: 1 })[1]).toBe("3f2a8c1e  3/3 applied, 1 failed, 3 rolled back  demo-admin");
  });

  it("--no-headers leaves out the header row, piped or on a terminal", () => {
    for (const out of [stream(), tty(80)]) {
      createOutput("table", out, stream(), {}, { headers: false }).table(["NAME", "PHASE"], [["web", "ready"]]);
      expect(out.text()).toBe("web   ready\n");
    }
    expect(formatTable(["NAME"], [["web"]], { headers: false })).toEqual(["web"]);
  });

  it("a watch frame cuts a long line but keeps a command to copy whole, and goes up as many rows as the frame took", () => {
    const out = tty(40);
    const o = createOutput("table", out, stream(), {});
    const command = "resume with: openshell-config policy rollout resume 23a012ab-6a74-4bc0-aadc-4018f6266ab0";
    o.frame(["status: paused after wave 1/2, waiting for approval", command]);
    const first = out.text();
    expect(first).toContain("status: paused after wave 1/2, waiting…\n");
    expect(first).toContain(`${command}\n`);
    o.frame(["done"]);
    // 1 row for the cut line and 3 for the 88-character command at 40 columns.
    expect(out.text().slice(first.length)).toBe("\x1b[4A\r\x1b[Jdone\n");
  });
});

describe("counts (issue 30, item 9)", () => {
  it("say 1 sandbox and 2 sandboxes, never 1 sandboxes", () => {
    expect([0, 1, 2].map((n) => countOf(n, "sandbox", "sandboxes"))).toEqual(["0 sandboxes", "1 sandbox", "2 sandboxes"]);
    expect(countOf(1, "changed sandbox", "changed sandboxes")).toBe("1 changed sandbox");
    expect(countOf(3, "wave")).toBe("3 waves");
  });

  it("a duration is never a misleading 0.0s: milliseconds under a second, one decimal from a second, minutes from a minute", () => {
    const ms = [0, 4, 49, 240, 865, 999.4, 1_000, 31_795, 125_000];
    expect(ms.map(formatDuration)).toEqual(["0ms", "4ms", "49ms", "240ms", "865ms", "999ms", "1.0s", "31.8s", "2m05s"]);
    // The dashboard's rollout card uses the same function.
    expect(ms.map(sharedFormatDuration)).toEqual(ms.map(formatDuration));
  });
});
