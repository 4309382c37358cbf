// Finds a NUL character (U+0000) anywhere in the text of a request message. PostgreSQL cannot
// store NUL in text or JSON columns, so such a request would fail deep in the store as if the
// database were down; it is rejected up front instead, naming the field, on every backend alike.

/** `settingKey` → `setting_key`, the name a caller sees in the .proto file. */
function snake(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** Protobuf messages nest only so deep in practice; deeper input is the decoder's concern. */
const MAX_DEPTH = 64;

/**
 * The path of the first string (field value, map key or map value) that contains U+0000, e.g.
 * `annotations["example.com/why"]`, or undefined when there is none. Walks the plain objects
 * protobuf-es messages are; bytes fields are skipped (they may hold anything).
 */
export function findNulText(value: unknown, path = "", depth = 0): string | undefined {
  // Almost every message has no NUL: a scan that builds no field paths settles that first.
  if (depth === 0 && !hasNul(value, 0)) return undefined;
  return pathOfNul(value, path, depth);
}

/** Whether any string (value, map key or map value) below `value` contains U+0000; same walk as below. */
function hasNul(value: unknown, depth: number): boolean {
  if (depth > MAX_DEPTH) return false;
  if (typeof value === "string") return value.includes("\u0000");
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return false;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) if (hasNul(value[i], depth + 1)) return true;
    return false;
  }
  const record = value as Record<string, unknown>;
  const isMessage = typeof record.$typeName === "string";
  const keys = Object.keys(record);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (key === "$typeName" || key === "$unknown") continue;
    const v = record[key];
    if (isMessage) {
      if (hasNul(isOneof(v) ? v.value : v, depth + 1)) return true;
    } else if (key.includes("\u0000") || hasNul(v, depth + 1)) {
      return true;
    }
  }
  return false;
}

function pathOfNul(value: unknown, path: string, depth: number): string | undefined {
  if (depth > MAX_DEPTH) return undefined;
  if (typeof value === "string") return value.includes("\u0000") ? path || "(message)" : undefined;
  if (value === null || typeof value !== "object" || value instanceof Uint8Array) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = pathOfNul(value[i], `${path}[${i}]`, depth + 1);
      if (found) return found;
    }
    return undefined;
  }
  const record = value as Record<string, unknown>;
  const isMessage = typeof record.$typeName === "string";
  for (const [key, v] of Object.entries(record)) {
    if (key === "$typeName" || key === "$unknown") continue;
    if (isMessage) {
      // A oneof is `{ case, value }` under the oneof's name; callers know the case's field name.
      const oneof = isOneof(v) ? v : undefined;
      const found = oneof
        ? pathOfNul(oneof.value, join(path, snake(oneof.case)), depth + 1)
        : pathOfNul(v, join(path, snake(key)), depth + 1);
      if (found) return found;
    } else {
      // A map: its keys are caller text too.
      const at = `${path}[${JSON.stringify(key)}]`;
      if (key.includes("\u0000")) return at;
      const found = pathOfNul(v, at, depth + 1);
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
