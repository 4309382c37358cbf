// Scratch: top self time and a split by package of CPU profiles (mapped to TypeScript).
//   node --import tsx bench/scratch/top.ts N file.cpuprofile...
import { topSelfTime } from "../lib/profile.js";
const [n, ...files] = process.argv.slice(2);
const all = topSelfTime(files, 100000);
const total = all.reduce((a, e) => a + e.selfMs, 0);
for (const e of all.slice(0, Number(n))) console.log(`${e.percent.toFixed(1).padStart(5)}% ${String(e.selfMs).padStart(6)} ms  ${e.fn}`);
const cat = new Map<string, number>();
for (const e of all) {
  const m = /\((.*?)(:\d+)?\)$/.exec(e.fn)?.[1] ?? e.fn;
  const k = m.startsWith("@") ? m.split("/").slice(0, 2).join("/") : m.startsWith("node:") ? "node:" + (m.split(":")[1] ?? "").split("/")[0] : /^(gateway|supervisor|src|bench|cli)\//.test(m) ? m.split("/").slice(0, 2).join("/") : e.fn.startsWith("(") ? e.fn.split(" ")[0]! : m.split("/")[0]!;
  cat.set(k, (cat.get(k) ?? 0) + e.selfMs);
}
console.log(`--- by package (total ${total} ms)`);
for (const [k, v] of [...cat].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${((100 * v) / total).toFixed(1).padStart(5)}% ${String(v).padStart(6)} ms  ${k}`);
