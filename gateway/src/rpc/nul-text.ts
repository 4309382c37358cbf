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

/** More than any one value adds to a binary encoding besides its own bytes (tag and length, 5 each at most). */
const FIELD_OVERHEAD = 16;

/**
 * One walk over a request message for what the RPC edge checks: whether any text contains
 * U+0000, and an upper bound on the size of its binary encoding. The bound counts every field
 * the message object holds, set or not, each string at 3 bytes per UTF-16 unit, each number at a
 * full varint, unknown fields at their bytes, plus FIELD_OVERHEAD per value: never less than
 * `toBinary(...).length`, so a message under the limit by this bound needs no encoding to tell.
 */
export function scanRequest(value: unknown): { readonly nul: boolean; readonly sizeBound: number } {
  const state = { nul: false, size: 0 };
  scan(value, 0, state);
  return { nul: state.nul, sizeBound: state.size };
}

function scan(value: unknown, depth: number, st: { nul: boolean; size: number }): void {
  st.size += FIELD_OVERHEAD;
  switch (typeof value) {
    case "string":
      st.size += 3 * value.length;
      if (!st.nul && value.includes("\u0000")) st.nul = true;
      return;
    case "number":
    case "bigint":
    case "boolean":
      st.size += 10;
      return;
    case "object":
      break;
    default:
      return;
  }
  if (value === null) return;
  if (value instanceof Uint8Array) {
    st.size += value.length;
    return;
  }
  if (depth > MAX_DEPTH) {
    // Deeper than any walk here goes: no bound, the caller encodes it to know.
    st.size = Infinity;
    return;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) scan(value[i], depth + 1, st);
    return;
  }
  const record = value as Record<string, unknown>;
  const isMessage = typeof record.$typeName === "string";
  const keys = Object.keys(record);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    if (key === "$typeName") continue;
    const v = record[key];
    if (key === "$unknown" && isMessage) {
      // Unknown fields are written back as they came: their bytes count, not as text.
      if (Array.isArray(v)) for (const u of v as { data?: unknown }[]) scan(u?.data, depth + 1, st);
      continue;
    }
    if (!isMessage) {
      // A map entry (or a oneof's case/value pair): the key is caller text too.
      // (10 more: an integer key "-1" is a 10-byte varint.)
      st.size += FIELD_OVERHEAD + 10 + 3 * key.length;
      if (!st.nul && key.includes("\u0000")) st.nul = true;
    }
    scan(v, depth + 1, st);
  }
}
