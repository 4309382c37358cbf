// The rollout card's summary line, without a browser (issue 30, item 9): the time it shows is the
// run that just ended (a Continue or an Undo is a run of its own, so the line changes with each),
// written as the command line writes durations, never "0.0 s".

import { describe, expect, it } from "vitest";
import type { RolloutResult } from "openshell-config/rollout";
import { summaryOf } from "../src/rollout-rows.js";

const explain = (err: unknown) => String(err);

/** The parts of a run's result the summary reads. */
function result(over: { phase: RolloutResult["phase"]; durationMs: number; byState?: Record<string, number>; skipped?: number; wave?: number; rolledBack?: number }): RolloutResult {
  return {
    id: "r1",
    phase: over.phase,
    durationMs: over.durationMs,
    failures: 0,
    counts: { total: 3, byState: over.byState ?? {}, byStatus: { skipped: over.skipped ?? 0 } },
    waves: [{}, {}, {}],
    state: { wave: over.wave ?? 0 },
    ...(over.rolledBack !== undefined ? { rollback: { rolledBack: over.rolledBack, leftAlone: [], failed: [], pending: [] } } : {}),
  } as unknown as RolloutResult;
}

describe("a rollout's summary line", () => {
  it("shows each run's own time: the first run paused, Continue, then Undo", () => {
    const first = summaryOf(result({ phase: "paused", durationMs: 240, byState: { applied: 1 }, skipped: 2, wave: 1 }), "new", explain);
    const continued = summaryOf(result({ phase: "complete", durationMs: 1_430, byState: { applied: 3 } }), "resume", explain);
    const undone = summaryOf(result({ phase: "rolled-back", durationMs: 125_000, rolledBack: 3 }), "undo", explain);
    expect(first.text).toBe("Paused after wave 1 of 3, waiting for approval: 1 applied, 2 not sent yet (rollout r1; this run 240ms). Continue sends the next wave.");
    expect(continued.text).toBe("Done: 3 applied (rollout r1; this run 1.4s).");
    expect(undone.text).toBe("Undone: 3 rolled back (rollout r1; this run 2m05s).");
  });

  it("never says 0.0 s for a quick run", () => {
    for (const ms of [0, 4, 49, 940]) {
      const { text } = summaryOf(result({ phase: "complete", durationMs: ms, byState: { applied: 3 } }), "new", explain);
      expect(text).toBe(`Done: 3 applied (rollout r1; this run ${Math.round(ms)}ms).`);
    }
  });
});
