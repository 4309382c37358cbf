// Scratch: what an enabled AsyncLocalStorage costs every promise of the process on this Node.
// Node 20 propagates the store through promise hooks: once any instance has run(), each promise
// created until it is disabled goes through a JavaScript init hook and carries extra fields.
//   node bench/scratch/als-promise-cost.mjs          (no AsyncLocalStorage)
//   ALS=1 node bench/scratch/als-promise-cost.mjs    (one enabled instance, never read)
import { AsyncLocalStorage } from "node:async_hooks";

if (process.env.ALS) new AsyncLocalStorage().run({}, () => undefined);

async function step(i) {
  await null;
  return i;
}
async function loop(n) {
  let sum = 0;
  for (let i = 0; i < n; i++) sum += await step(i);
  return sum;
}

const N = 2_000_000;
await loop(100_000); // warm-up
const cpu0 = process.cpuUsage();
const t0 = performance.now();
await loop(N);
const cpu = process.cpuUsage(cpu0);
console.log(
  `${process.env.ALS ? "AsyncLocalStorage enabled" : "no AsyncLocalStorage"}: ${(((performance.now() - t0) * 1e6) / N).toFixed(0)} ns wall, ${(((cpu.user + cpu.system) * 1e3) / N).toFixed(0)} ns CPU per awaited async call`,
);
