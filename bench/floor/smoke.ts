// The floor stack's self-check, on its own: 64 sessions, 600 waited updates and 20 sequential
// ones through the floor gateway and supervisor, then the same 600 with the provider message too
// (the floor gateway's --provider-too); exits 1 on any lost, wrong or unmatched result.
// `npm run bench` runs the first check first (step floor/smoke).
//   node --import tsx bench/floor/smoke.ts

import { floorSmoke, floorSmokeProviderToo } from "./scenarios.js";

const t0 = performance.now();
const say = (m: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(1).padStart(5)} s] ${m}`);
const ctx = { full: false, say };
floorSmoke(ctx)
  .then((r) => {
    say(`floor smoke: ${r.updates} waited updates at ${r.perSec}/s, all applied and matched`);
    return floorSmokeProviderToo(ctx);
  })
  .then(
    (r) => {
      say(`floor smoke, with the provider message: ${r.updates} waited updates (two results each) at ${r.perSec}/s, all applied and matched`);
      process.exit(0);
    },
    (err: unknown) => {
      console.error(`floor smoke FAILED: ${(err as Error).message}`);
      process.exit(1);
    },
  );
