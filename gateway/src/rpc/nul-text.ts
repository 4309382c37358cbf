// Finds the first value of a request message the gateway refuses, and names its field:
// - text holding U+0000: PostgreSQL cannot store NUL in text or JSON columns, so such a request
//   would fail deep in the store as if the database were down;
// - text holding an unpaired surrogate: no UTF-8 encodes one, so it is not text a `string` field
//   may carry. A JSON request gets one from an escape ("\ud800") or from bytes that are not UTF-8
//   (json-text.ts escapes those so that the field can be named); stored, it would silently become
//   U+FFFD;
// - a google.protobuf.Duration or Timestamp outside the range its definition allows (nanos of
//   2,000,000,000, say), which every reader would interpret differently.
// Each is refused up front, naming the field, on every backend alike.

/** `settingKey` → `setting_key`, the name a caller sees in the .proto file. */
function snake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/**
 * How deep the walks over decoded messages go: above the nesting any request decodes with
 * (MAX_NESTING in wire-scan.ts and json-text.ts), so a request is always walked whole.
 */
export const WALK_DEPTH = 256;

const wellFormed = (String.prototype as unknown as { isWellFormed?: () => boolean }).isWellFormed;
const LONE_SURROGATE = /\p{Cs}/u;

/** Whether `s` has no unpaired surrogate (what every UTF-8 string decodes to). */
export function isWellFormedText(s: string): boolean {
  return wellFormed ? wellFormed.call(s) : !LONE_SURROGATE.test(s);
}

const DURATION = "google.protobuf.Duration";
const TIMESTAMP = "google.protobuf.Timestamp";
/** The well-known types whose values have a range. */
export const TIME_TYPES: ReadonlySet<string> = new Set([DURATION, TIMESTAMP]);

/** ±10,000 years, duration.proto's range. */
const MAX_DURATION_SECONDS = 315_576_000_000n;
/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, timestamp.proto's range. */
const MIN_TIMESTAMP_SECONDS = -62_135_596_800n;
const MAX_TIMESTAMP_SECONDS = 253_402_300_799n;
const MAX_NANOS = 999_999_999;

/** Why a Duration or Timestamp (`typeName`) is out of range, or undefined when it is valid. */
export function timeValueFault(typeName: string, m: Record<string, unknown>): string | undefined {
  const seconds = typeof m.seconds === "bigint" ? m.seconds : BigInt((m.seconds as number | string | undefined) ?? 0);
  const nanos = typeof m.nanos === "number" ? m.nanos : 0;
  const got = `(seconds ${seconds}, nanos ${nanos})`;
  if (typeName === DURATION) {
    if (seconds > MAX_DURATION_SECONDS || seconds < -MAX_DURATION_SECONDS) return `seconds must be within ±315,576,000,000 ${got}`;
    if (nanos > MAX_NANOS || nanos < -MAX_NANOS) return `nanos must be within ±999,999,999 ${got}`;
    if ((seconds > 0n && nanos < 0) || (seconds < 0n && nanos > 0)) return `nanos must have the sign of seconds ${got}`;
    return undefined;
  }
  if (typeName === TIMESTAMP) {
    if (seconds < MIN_TIMESTAMP_SECONDS || seconds > MAX_TIMESTAMP_SECONDS) return `seconds must be within years 1 to 9999 ${got}`;
    if (nanos < 0 || nanos > MAX_NANOS) return `nanos must be within 0 to 999,999,999 ${got}`;
  }
  return undefined;
}

const NUL = "must not contain NUL characters (U+0000)";

function textFault(s: string, nulOnly: boolean): string | undefined {
  if (s.includes("\u0000")) return NUL;
  if (!nulOnly && !isWellFormedText(s)) return "must be valid UTF-8 (it holds bytes that are not UTF-8, or an escape of an unpaired surrogate)";
  return undefined;
}

/**
 * The path of the first string (field value, map key or map value) that contains U+0000, e.g.
 * `annotations["example.com/why"]`, or undefined when there is none. Walks the plain objects
 * protobuf-es messages are; bytes fields are skipped (they may hold anything).
 */
export function findNulText(value: unknown): string | undefined {
  return walk(value, "", 0, true)?.path;
}

/**
 * The first value below `value` (a decoded message) that the gateway refuses, with its path and
 * why, e.g. `{ path: "wait_timeout", reason: "nanos must be …" }`; undefined when there is none.
 */
export function findInvalidValue(value: unknown): { readonly path: string; readonly reason: string } | undefined {
  return walk(value, "", 0, false);
}

/** `nulOnly`: look for NUL text alone. */
function walk(value: unknown, path: string, depth: number, nulOnly: boolean): { path: string; reason: string } | undefined {
  if (depth > WALK_DEPTH) return undefined;
  if (typeof value === "string") {
    const reason = textFault(value, nulOnly);
    return reason ? { path: path || "(message)", reason } : undefined;
  }
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = walk(value[i], `${path}[${i}]`, depth + 1, nulOnly);
      if (found) return found;
    }
    return undefined;
  }
  const record = value as Record<string, unknown>;
  const typeName = record.$typeName;
  const isMessage = typeof typeName === "string";
  if (isMessage && !nulOnly && TIME_TYPES.has(typeName)) {
    const reason = timeValueFault(typeName, record);
    return reason ? { path: path || "(message)", reason: `is not a valid ${typeName.slice("google.protobuf.".length)}: ${reason}` } : undefined;
  }
  for (const [key, v] of Object.entries(record)) {
    if (key === "$typeName" || key === "$unknown") continue;
    if (isMessage) {
      // A oneof is `{ case, value }` under the oneof's name; callers know the case's field name.
      const oneof = isOneof(v) ? v : undefined;
      const found = oneof ? walk(oneof.value, join(path, snake(oneof.case)), depth + 1, nulOnly) : walk(v, join(path, snake(key)), depth + 1, nulOnly);
      if (found) return found;
    } else {
      // A map or a Struct: its keys are caller text too.
      const at = `${path}[${JSON.stringify(key)}]`;
      const reason = textFault(key, nulOnly);
      if (reason) return { path: at, reason: reason === NUL ? reason : `key ${reason}` };
      const found = walk(v, at, depth + 1, nulOnly);
      if (found) return found;
    }
  }
  return undefined;
}

function isOneof(v: unknown): v is { case: string; value: unknown } {
  return typeof v === "object" && v !== null && !Array.isArray(v) && !("$typeName" in v) && typeof (v as { case?: unknown }).case === "string";
}

function join(path: string, field: string): string {
  return path === "" ? field : `${path}.${field}`;
}
