import { describe, expect, it } from "vitest";
import { EARLY_END_MAX_MS, EARLY_END_MIN_MS, earlyEndPause } from "../../src/wait-pace.js";

describe("the pause after a wait slice that ended early", () => {
  it("starts at 100 ms or a little more, doubles with each early end in a row, and stops growing at 2 s", () => {
    for (let i = 0; i < 50; i++) {
      const pauses = [1, 2, 3, 4, 5, 6, 20, 1_000].map(earlyEndPause);
      expect(pauses[0]).toBeGreaterThanOrEqual(EARLY_END_MIN_MS);
      expect(pauses[0]).toBeLessThanOrEqual(EARLY_END_MIN_MS * 1.25);
      expect(pauses[1]).toBeGreaterThanOrEqual(200);
      expect(pauses[2]).toBeGreaterThanOrEqual(400);
      expect(pauses[3]).toBeGreaterThanOrEqual(800);
      expect(pauses[4]).toBeGreaterThanOrEqual(1_600);
      for (const p of pauses) expect(p).toBeLessThanOrEqual(EARLY_END_MAX_MS);
      expect(pauses.at(-1)).toBe(EARLY_END_MAX_MS);
    }
  });
});
