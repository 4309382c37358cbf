// The floor stack's self-check, on its own: 64 sessions, 600 waited updates and 20 sequential
// ones through the floor gateway and supervisor; exits 1 on any lost, wrong or unmatched result.
// `npm run bench` runs the same check first (step floor/smoke).
//   node --import tsx bench/floor/smoke.ts

import { floorSmoke } from "./scenarios.js";

const t0 = performance.now();
const say = (m: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(1).padStart(5)} s] ${m}`);
floorSmoke({ full: false, say }).then(
  (r) => {
    say(`floor smoke: ${r.updates} waited updates at ${r.perSec}/s, all applied and matched`);
    process.exit(0);
  },
  (err: unknown) => {
    console.error(`floor smoke FAILED: ${(err as Error).message}`);
    process.exit(1);
  },
);
