// Scratch: an A/B of two variants of the stack on the quick probe (bench/probe.ts), in ABBA order
// so that each variant runs first of a pair as often as second. On this shared machine the run
// order alone moved the gateway's CPU per update by 5-14% (2026-12-02: an experiment read as a
// saving when it ran second and as a loss when it ran first), so a one-pair A/B says nothing.
// A variant is a list of environment assignments, which the probe's processes inherit.
//   node --import tsx bench/scratch/ab.ts "OSC_X=0" "OSC_X=1" [quads=2] [N=3000]
import { spawnSync } from "node:child_process";

const [a = "", b = "", quadsArg = "2", nArg = "3000"] = process.argv.slice(2);
const quads = Number(quadsArg);
const envOf = (v: string) => Object.fromEntries(v.split(/\s+/).filter((x) => x.includes("=")).map((x) => [x.slice(0, x.indexOf("=")), x.slice(x.indexOf("=") + 1)]));

interface Reading { readonly perSec: number; readonly gateway: number; readonly supervisor: number; readonly client: number }

function probe(variant: string): Reading {
  const r = spawnSync(process.execPath, ["--import", "tsx", "bench/probe.ts", "sqlite", nArg, "32"], { env: { ...process.env, ...envOf(variant) }, encoding: "utf8" });
  const out = `${r.stdout}${r.stderr}`;
  const num = (re: RegExp) => {
    const m = re.exec(out);
    if (!m) throw new Error(`probe (${variant || "no env"}) printed no ${re}:\n${out.slice(-2000)}`);
    return Number(m[1]);
  };
  return {
    perSec: num(/= (\d+)\/s/),
    gateway: num(/gateway CPU ms\/op ([\d.]+)/),
    supervisor: num(/supervisor CPU ms\/op ([\d.]+)/),
    client: num(/client CPU ms\/op ([\d.]+)/),
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const runs: Record<"A" | "B", Reading[]> = { A: [], B: [] };
for (let q = 0; q < quads; q++) {
  for (const which of ["A", "B", "B", "A"] as const) {
    const r = probe(which === "A" ? a : b);
    runs[which].push(r);
    console.log(`${which} ${r.perSec}/s  gateway ${r.gateway}  supervisor ${r.supervisor}  client ${r.client} ms/op`);
  }
}
for (const key of ["perSec", "gateway", "supervisor", "client"] as const) {
  const ma = median(runs.A.map((r) => r[key]));
  const mb = median(runs.B.map((r) => r[key]));
  console.log(`${key.padEnd(10)} median A ${ma.toFixed(3)}  B ${mb.toFixed(3)}  B/A ${(mb / ma).toFixed(3)}`);
}
