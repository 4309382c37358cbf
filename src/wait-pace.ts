// Pacing the slices of one wait (server-side waits, watch streams, polls). A gateway that ends a
// slice early (answers a server-side wait with DEADLINE_EXCEEDED at once, closes a watch without
// the outcome) would otherwise be asked again at once, as fast as the network allows: a request
// storm. And with an in-memory transport, whose calls settle as promise callbacks, such a loop
// would never let the wait's own deadline timer run. So every slice ends here: after an early end
// the wait pauses (100 ms, doubling per consecutive early end, capped at 2 s, plus up to 25%
// jitter), it always yields to the event loop, and the local deadline always ends it.

import { sleep } from "./retry.js";

/** The first pause after a slice that ended early. */
export const EARLY_END_MIN_MS = 100;
/** The longest pause after a slice that ended early. */
export const EARLY_END_MAX_MS = 2_000;

/** The deadline error of a wait; `waitForTarget` turns it into CompletionTimeoutError. */
export class LocalDeadline extends Error {
  constructor() {
    super("deadline exceeded");
    this.name = "LocalDeadline";
  }
}

/** The pacing state of one wait, shared by all of its slices (whatever means they use). */
export interface Pace {
  /** When the whole wait ends (epoch ms; may be Infinity). */
  readonly deadline: number;
  readonly signal: AbortSignal;
  /** Consecutive slices that ended early. */
  earlyEnds: number;
}

/** Throws once the wait is aborted or its deadline has passed (even before the deadline timer ran). */
export function checkDeadline(pace: Pace): void {
  pace.signal.throwIfAborted();
  if (Date.now() >= pace.deadline) throw new LocalDeadline();
}

/** The pause after the `n`-th consecutive early end (n ≥ 1). */
export function earlyEndPause(n: number): number {
  const base = Math.min(EARLY_END_MAX_MS, EARLY_END_MIN_MS * 2 ** Math.min(Math.max(0, n - 1), 16));
  return Math.min(EARLY_END_MAX_MS, base * (1 + Math.random() / 4));
}

/**
 * Ends one slice that began at `startedAt` and was meant to last `expectedMs` (the requested
 * server-side wait, or how long a watch could have stayed open). A slice shorter than half of
 * that ended early: pause, longer each time in a row. A slice that ran its course resets the
 * growth and goes on after a yield. Rejects with the abort reason or LocalDeadline.
 */
export async function afterSlice(pace: Pace, startedAt: number, expectedMs: number): Promise<void> {
  const early = Date.now() - startedAt < expectedMs / 2;
  pace.earlyEnds = early ? pace.earlyEnds + 1 : 0;
  await pauseFor(pace, early ? earlyEndPause(pace.earlyEnds) : 0);
}

/** Sleeps `ms` (0 still yields to the event loop), never past the deadline, then checks it. */
export async function pauseFor(pace: Pace, ms: number): Promise<void> {
  checkDeadline(pace);
  await sleep(Math.min(ms, Math.max(0, pace.deadline - Date.now())), pace.signal);
  checkDeadline(pace);
}
