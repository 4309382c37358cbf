// Scratch preload for bench/scratch/heap-sample.ts and prof-bootstrap.ts (HS=1): in the gateway
// process only (the built gateway.mjs; HS_TARGET=supervisor.mjs samples the supervisor instead), samples allocations, those already collected included,
// and on each SIGUSR2 writes the samples since the previous signal to /tmp/heapsample-<pid>.json
// (a sampling heap profile, the format of HeapProfiler.stopSampling) and starts again.
// HS_PROMOTED=1: only what survived young collections (see params).
//   NODE_OPTIONS="--import ./bench/scratch/heap-sample-preload.mjs" node --import tsx bench/scratch/heap-sample.ts 3000
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";

if (process.argv[1]?.endsWith(process.env.HS_TARGET ?? "/gateway.mjs")) {
  const session = new Session();
  session.connect();
  // Collected objects too: the point is what the garbage collector has to deal with. HS_PROMOTED=1
  // leaves out what young collections free, so that what remains is what survived into the old
  // generation (or is still alive).
  const params = { samplingInterval: 16384, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: !process.env.HS_PROMOTED };
  session.post("HeapProfiler.enable");
  session.post("HeapProfiler.startSampling", params);
  process.on("SIGUSR2", () => {
    session.post("HeapProfiler.stopSampling", (err, r) => {
      if (!err) writeFileSync(`/tmp/heapsample-${process.pid}.json`, JSON.stringify(r.profile));
      session.post("HeapProfiler.startSampling", params);
    });
  });
}
