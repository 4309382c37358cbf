// The cost of TLS: the probe shape (bench/scenarios/probe.ts) on SQLite with the gateway serving
// HTTPS (a test CA; clients verify it through the SDK's `tls.ca`, supervisors through --ca)
// against the same shape in plaintext, back to back in one run. Quick runs alternate plain, TLS;
// full runs plain, TLS, TLS, plain, so that neither side always runs on a warmer machine. The
// ratio is TLS ÷ plaintext (not a floor: the floor has no TLS); its medians lead the report.

import { median } from "../lib/stats.js";
import type { Context } from "./common.js";
import { probeScenario, type ProbeResult } from "./probe.js";

export interface TlsResult {
  readonly plain: ProbeResult[];
  readonly tls: ProbeResult[];
}

/** Runs the pairs through `step` (the runner's: settles the machine, records failures and load). */
export async function tlsScenario(ctx: Context, ops: number, step: (name: string, fn: () => Promise<void>) => Promise<void>): Promise<TlsResult> {
  const out: TlsResult = { plain: [], tls: [] };
  const order = ctx.full ? [false, true, true, false] : [false, true];
  for (const tls of order) {
    await step(`tls/${tls ? "https" : "plaintext"}`, async () => {
      (tls ? out.tls : out.plain).push(await probeScenario(ctx, "sqlite", ops, { tls }));
    });
  }
  return out;
}

export interface TlsRatio {
  readonly measure: string;
  /** TLS ÷ plaintext. */
  readonly ratio: number;
  readonly tls: number;
  readonly plain: number;
  readonly unit: string;
}

/** TLS ÷ plaintext for each measure, from the medians of each side; empty until both sides ran. */
export function tlsRatios(r: TlsResult | undefined): TlsRatio[] {
  if (!r || r.plain.length === 0 || r.tls.length === 0) return [];
  const rows: [string, (p: ProbeResult) => number, string][] = [
    ["Waited updates/s", (p) => p.completedPerSec, "/s"],
    ["Gateway CPU per update", (p) => p.cpuMsPerOp.gateway, " ms"],
    ["Supervisor CPU per update", (p) => p.cpuMsPerOp.supervisors, " ms"],
    ["Client (SDK) CPU per update", (p) => p.cpuMsPerOp.clients, " ms"],
    ["Latency p50", (p) => p.latencyMs.p50, " ms"],
    ["Latency p99", (p) => p.latencyMs.p99, " ms"],
  ];
  return rows.map(([measure, of, unit]) => {
    const tls = median(r.tls.map(of));
    const plain = median(r.plain.map(of));
    return { measure, ratio: tls / plain, tls, plain, unit };
  });
}

const fmt = (v: number) => (v >= 100 ? String(Math.round(v)) : String(Math.round(v * 1000) / 1000));

/** The report's section (markdown lines). */
export function renderTls(r: TlsResult | undefined): string[] {
  const rows = tlsRatios(r);
  if (!r || rows.length === 0) return [];
  const runs = `${r.plain.length} plaintext and ${r.tls.length} TLS run(s) of ${r.tls[0]!.operations} waited updates each`;
  return [
    "## TLS: the probe shape over HTTPS ÷ the same in plaintext (SQLite, back to back)",
    "",
    `The gateway serves HTTPS (--tls-cert/--tls-key, ECDSA P-256 test certificate; ALPN h2); SDK clients verify it with \`tls.ca\`, supervisors with --ca; ${runs}, medians. Above 1× means TLS costs more; for updates/s, below 1× means fewer.`,
    "",
    "| measure | TLS ÷ plaintext | TLS | plaintext |",
    "| --- | --- | --- | --- |",
    ...rows.map((x) => `| ${x.measure} | **${x.ratio.toFixed(2)}×** | ${fmt(x.tls)}${x.unit} | ${fmt(x.plain)}${x.unit} |`),
    "",
  ];
}
