// How long something took, as text, for the command line and the dashboard alike (issue 30,
// item 9: one rule everywhere, and never a misleading "0.0s"): `240ms` below a second, `31.8s`
// with one decimal from one second, `2m05s` from a minute, `1h02m` from an hour. Plain
// TypeScript without Node or DOM APIs.

/** `950ms` below a second, `31.8s` below a minute, then `2m05s` and `1h02m`; `no limit` for Infinity. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return "no limit";
  if (Math.round(ms) < 1_000) return `${Math.max(0, Math.round(ms))}ms`;
  if (Math.round(ms / 100) < 600) return `${(Math.round(ms / 100) / 10).toFixed(1)}s`;
  const s = Math.round(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3_600)}h${String(Math.floor((s % 3_600) / 60)).padStart(2, "0")}m`;
}
