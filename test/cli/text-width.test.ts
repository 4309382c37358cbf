// Terminal columns, not string length (cli/text-width.ts): CJK characters and emoji take two
// columns, combining marks and zero-width characters none, a flag or a ZWJ emoji is one
// character; tables and live lines padded and cut by columns stay in line and within the width.

import { describe, expect, it } from "vitest";
import { cutToWidth, textWidth } from "../../cli/text-width.js";
import { formatTable } from "../../cli/output.js";
import { fit, visibleWidth } from "../../cli/terminal.js";

describe("textWidth", () => {
  it("counts the columns a terminal shows, not UTF-16 code units", () => {
    expect(textWidth("web-1")).toBe(5);
    expect(textWidth("日本語")).toBe(6);
    expect(textWidth("한국어 ok")).toBe(9);
    expect(textWidth("ＡＢ")).toBe(4); // fullwidth Latin
    expect(textWidth("ｶﾀｶﾅ")).toBe(4); // halfwidth katakana
    expect(textWidth("café")).toBe(4);
    expect(textWidth("cafe\u0301")).toBe(4); // e + combining acute
    expect(textWidth("a\u200bb")).toBe(2); // zero-width space
    expect(textWidth("🚀")).toBe(2);
    expect(textWidth("👩‍💻")).toBe(2); // ZWJ sequence: one character
    expect(textWidth("🇯🇵")).toBe(2); // a flag: two regional indicators, one character
    expect(textWidth("✔")).toBe(1); // text presentation
    expect(textWidth("✔️")).toBe(2); // emoji presentation (VS16)
    expect(textWidth("⌚\uFE0E")).toBe(1); // text presentation (VS15) of a wide emoji
    expect(textWidth("#️⃣")).toBe(2); // keycap
    expect(textWidth("co\u00ADop")).toBe(5); // a soft hyphen takes a column
    expect(textWidth("")).toBe(0);
  });

  it("cuts to a width in columns, never inside a character, ending in …", () => {
    expect(cutToWidth("日本語のラベル", 7)).toBe("日本語…");
    expect(textWidth(cutToWidth("日本語のラベル", 7))).toBe(7);
    expect(cutToWidth("日本語のラベル", 6)).toBe("日本…");
    expect(textWidth(cutToWidth("日本語のラベル", 6))).toBe(5);
    expect(cutToWidth("👩‍💻👩‍💻👩‍💻", 4)).toBe("👩‍💻…");
    expect(cutToWidth("short", 80)).toBe("short");
    expect(cutToWidth("abc", 0)).toBe("");
  });
});

describe("a table with wide characters", () => {
  it("keeps its columns in line on screen and its rows within the width", () => {
    const lines = formatTable(
      ["KEY", "VALUE", "SCOPE"],
      [
        ["greeting", "こんにちは", "sandbox"],
        ["motto", "ok", "global"],
      ],
    );
    // SCOPE starts at the same column on every row.
    const starts = lines.map((l) => textWidth(l.slice(0, l.lastIndexOf(" ") + 1)));
    expect(new Set(starts).size).toBe(1);
    expect(lines[1]).toBe("greeting  こんにちは  sandbox");
    expect(lines[2]).toBe("motto     ok          global");

    const cut = formatTable(["NAME", "LABELS"], [["web", `team=${"開発".repeat(50)}`]], { maxWidth: 40 });
    for (const l of cut) expect(textWidth(l)).toBeLessThanOrEqual(40);
    expect(cut[1]).toMatch(/^web   team=(開発)+開?…$/);
  });

  it("a live line with wide characters is cut to the terminal's width in columns", () => {
    const line = `\x1b[32mapplied\x1b[0m ${"漢字".repeat(30)}`;
    const fitted = fit(line, 20);
    expect(visibleWidth(fitted)).toBeLessThanOrEqual(20);
    expect(fitted.endsWith("…")).toBe(true);
    expect(visibleWidth("漢字🚀")).toBe(6);
  });
});
