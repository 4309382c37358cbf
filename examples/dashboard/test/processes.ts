// Which processes are still running, for the browser tests' check that nothing they started
// outlives them (Linux /proc).

import { readdirSync, readFileSync } from "node:fs";

/** Processes whose command line mentions `needle`. */
export function processesMentioning(needle: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(needle)) out.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}
