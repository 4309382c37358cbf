// Scratch: self time by function of two CPU profiles side by side (ours, then the floor's), largest
// difference first, file lines dropped so that one function's lines add up.
//   node --import tsx bench/scratch/selfdiff.ts ours.cpuprofile floor.cpuprofile [N=40]
import { topSelfTime } from "../lib/profile.js";
const [a, b, n] = process.argv.slice(2) as [string, string, string?];
const strip = (s: string) => s.replace(new RegExp(":[0-9]+[)]$"), ")");
const sum = (f: string) => { const m = new Map<string, number>(); for (const e of topSelfTime([f], 100000)) m.set(strip(e.fn), (m.get(strip(e.fn)) ?? 0) + e.selfMs); return m; };
const A = sum(a); const B = sum(b);
const keys = new Set([...A.keys(), ...B.keys()]);
const rows = [...keys].map((k) => ({ k, d: (A.get(k) ?? 0) - (B.get(k) ?? 0), a: A.get(k) ?? 0, b: B.get(k) ?? 0 })).sort((x, y) => y.d - x.d);
for (const r of rows.slice(0, Number(n ?? 40))) console.log(String(r.d).padStart(6), String(r.a).padStart(6), String(r.b).padStart(6), r.k);
