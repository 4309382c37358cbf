// How long one fsync takes where the SQLite databases of the benchmarks live (the system's
// temporary directory): the "two fsyncs" of the sequential-latency target are two of these.

import { closeSync, fsyncSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { summarize, type Summary } from "./stats.js";

/** Appends 4 KiB and fsyncs, `n` times, in a fresh file under `dir`; the wall time of each fsync. */
export function measureFsync(n = 100, dir = tmpdir()): Summary {
  const d = mkdtempSync(join(dir, "openshell-bench-fsync-"));
  const fd = openSync(join(d, "probe"), "w");
  const page = Buffer.alloc(4096, 7);
  const xs: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      writeSync(fd, page);
      const t0 = performance.now();
      fsyncSync(fd);
      xs.push(performance.now() - t0);
    }
  } finally {
    closeSync(fd);
    rmSync(d, { recursive: true, force: true });
  }
  return summarize(xs);
}
