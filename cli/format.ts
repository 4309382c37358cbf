// One style for the values every command prints as text: versions `v2`, durations `950ms` /
// `31.8s` / `2m05s`, hashes shortened to `sha256:6cebb638b742…`, times as an AGE (`12s`, `5m`,
// `3d`, as kubectl prints them) in tables and in ISO 8601 with `-o wide`, ids shortened to their
// first 8 characters in tables. JSON and YAML keep the plain values (numbers, milliseconds, the
// full hash, the full id, ISO times).

/** `v2`; `-` for 0 (no version). */
export function formatVersion(version: number): string {
  return version > 0 ? `v${version}` : "-";
}

/** `950ms` below a second, `31.8s` below a minute, then `2m05s` and `1h02m` (shared with the dashboard). */
export { formatDuration } from "../shared/duration.js";

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

/**
 * How long ago `at` was, in at most two units and a few characters, as kubectl's AGE column:
 * `45s`, `3m20s`, `25m`, `5h10m`, `20h`, `3d4h`, `40d`, `2y100d`, `12y`; `-` when absent.
 */
export function formatAge(at: Date | undefined, now: number = Date.now()): string {
  if (at === undefined) return "-";
  const s = Math.max(0, Math.floor((now - at.getTime()) / 1_000));
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  const d = Math.floor(h / 24);
  const y = Math.floor(d / 365);
  if (s < 120) return `${s}s`;
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (h < 3) return `${m}m`;
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  if (d < 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  if (y < 8) return d % 365 === 0 ? `${y}y` : `${y}y${d % 365}d`;
  return `${y}y`;
}

/** An id for a table: its first 8 characters (a UUID's first group); whole with `-o wide`, JSON and YAML. */
export function shortId(id: string, wide = false): string {
  return wide || id.length <= 8 ? id : id.slice(0, 8);
}

/** A time of day for lines printed as things happen (`--watch`): `14:03:07`, local time. */
export function formatClock(at: Date): string {
  return [at.getHours(), at.getMinutes(), at.getSeconds()].map((n) => String(n).padStart(2, "0")).join(":");
}

/** `1 sandbox`, `2 sandboxes`: a count and its noun, singular for exactly one. */
export function countOf(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
