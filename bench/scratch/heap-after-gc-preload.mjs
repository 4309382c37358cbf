// Scratch preload for bench/scratch/retention.ts: in the process whose script ends with
// HS_TARGET (default /gateway.mjs), SIGUSR2 runs a full garbage collection and appends the heap
// still in use to /tmp/retained-<pid>.txt, so that what grows with the work done is what is kept.
import { appendFileSync } from "node:fs";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

if (process.argv[1]?.endsWith(process.env.HS_TARGET ?? "/gateway.mjs")) {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc");
  process.on("SIGUSR2", () => {
    gc();
    gc();
    appendFileSync(`/tmp/retained-${process.pid}.txt`, `${process.memoryUsage().heapUsed}\n`);
  });
}
