// One style for the values every command prints as text: versions `v2`, durations `950ms` /
// `31.8s` / `2m05s`, hashes shortened to `sha256:6cebb638b742…`, times in ISO 8601. JSON and YAML
// keep the plain values (numbers, milliseconds, the full hash).

/** `v2`; `-` for 0 (no version). */
export function formatVersion(version: number): string {
  return version > 0 ? `v${version}` : "-";
}

/** `950ms` below a second, `31.8s` below a minute, then `2m05s` and `1h02m`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return "no limit";
  if (Math.round(ms) < 1_000) return `${Math.max(0, Math.round(ms))}ms`;
  if (Math.round(ms / 100) < 600) return `${(Math.round(ms / 100) / 10).toFixed(1)}s`;
  const s = Math.round(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3_600)}h${String(Math.floor((s % 3_600) / 60)).padStart(2, "0")}m`;
}

/** A policy hash for text: `sha256:` and the first 12 hex digits (the JSON has it whole). */
export function shortHash(hash: string): string {
  if (hash === "") return "-";
  const m = /^(?:(\w+):)?([0-9a-f]+)$/i.exec(hash);
  if (!m) return hash.length > 20 ? `${hash.slice(0, 19)}…` : hash;
  const digits = m[2]!;
  return `${m[1] ?? "sha256"}:${digits.length > 12 ? `${digits.slice(0, 12)}…` : digits}`;
}

/** A time for text: ISO 8601 in UTC, as JSON has it; `-` when absent. */
export function formatTime(at: Date | undefined): string {
  return at === undefined ? "-" : at.toISOString();
}
