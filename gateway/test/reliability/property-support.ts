// What the property-based reliability tests share: how many inputs a property tries (a few
// hundred in `npm test`, far more under `npm run test:reliability`), a tally of outcomes by
// Connect code for docs/reliability.md, and the rule of what a clear rejection is.

import { Code, ConnectError } from "@connectrpc/connect";

/** `npm run test:reliability` sets this; the fast form in `npm test` leaves it unset. */
export const LONG = process.env.OSC_RELIABILITY_LONG === "1";

/** Runs of a property: `fast` normally, `fast × 25` in the long form. */
export function runs(fast: number): number {
  return LONG ? fast * 25 : fast;
}

/** Generous per-test timeout that grows with the run count. */
export function timeoutFor(fast: number, msPerRun = 60): number {
  return Math.max(20_000, runs(fast) * msPerRun * 2);
}

/** Outcomes counted by name (`ok` or a Connect code name), printed once per test file. */
export function createTally(title: string) {
  const counts = new Map<string, number>();
  let inputs = 0;
  return {
    count(outcome: string): void {
      inputs++;
      counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
    },
    get inputs() {
      return inputs;
    },
    get(outcome: string): number {
      return counts.get(outcome) ?? 0;
    },
    /** One line for the test log: the figures docs/reliability.md quotes. */
    report(): string {
      const parts = [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`);
      return `[reliability] ${title}: ${inputs} inputs (${LONG ? "long" : "fast"} form): ${parts.join(", ")}`;
    },
  };
}

/** The name used in tallies: `ok`, or the code's name (`InvalidArgument`). */
export function outcomeName(err: ConnectError | undefined): string {
  return err === undefined ? "ok" : (Code[err.code] ?? String(err.code));
}

/** Runs `call`; returns the ConnectError it failed with, or undefined on success. */
export async function settle(call: Promise<unknown>): Promise<ConnectError | undefined> {
  try {
    await call;
    return undefined;
  } catch (err) {
    return ConnectError.from(err);
  }
}

/** Codes that mean "the gateway failed", never "your request was bad": none may answer bad input. */
export const SERVER_FAULT_CODES: ReadonlySet<Code> = new Set([Code.Internal, Code.Unknown, Code.Unavailable, Code.DataLoss]);
