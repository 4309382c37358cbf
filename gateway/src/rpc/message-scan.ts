// One walk over a message for what the RPC edge and the delivery check: whether any value is one
// the gateway must refuse (text holding U+0000 or an unpaired surrogate, a Duration or Timestamp
// out of its range; findInvalidValue, in nul-text.ts, then names the field), and an upper bound on the size of
// its binary encoding, never below `toBinary(...).length`, so that a message under a limit by
// the bound needs no encoding to tell. Compiled once per message type: a walk over every property
// of every message, set or not (a network endpoint has 26), was about 1.5% of the gateway's CPU
// per waited update; this visits only the fields that can hold text, bytes or more messages, and
// counts the others by a constant per type.

import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { heldAsMessage, perMessageType } from "../model/per-message-type.js";
import { isWellFormedText, timeValueFault, TIME_TYPES, WALK_DEPTH } from "./nul-text.js";

/** More than a tag and a length take (5 bytes each at most). */
const FIELD_OVERHEAD = 16;
/** A scalar field: its tag and its value (a 10-byte varint at most). */
const SCALAR_BOUND = FIELD_OVERHEAD + 10;
/** Deeper than any request decodes (MAX_NESTING); deeper input gets no bound (the caller encodes it). */
const MAX_DEPTH = WALK_DEPTH;

interface State {
  nul: boolean;
  /** A value to refuse: NUL or an unpaired surrogate in text, a Duration or Timestamp out of range. */
  invalid: boolean;
  size: number;
}

type Scanner = (m: Record<string, unknown>, st: State, depth: number) => void;
type ValueScan = (v: unknown, st: State, depth: number) => void;

/**
 * NUL anywhere in the text of `message` (a `desc` message), whether any value is invalid (NUL
 * included), and a bound on its encoded size.
 */
export function scanMessage(desc: DescMessage, message: object): { readonly nul: boolean; readonly invalid: boolean; readonly sizeBound: number } {
  const st: State = { nul: false, invalid: false, size: 0 };
  scannerOf(desc)(message as Record<string, unknown>, st, 0);
  return { nul: st.nul, invalid: st.invalid, sizeBound: st.size };
}

const scannerOf = perMessageType<Scanner>((desc) => compile(desc));

function compile(desc: DescMessage): Scanner {
  // Scalars (numbers, bools, enums) take a bounded size whether set or not and hold no text.
  let fixed = FIELD_OVERHEAD;
  const parts: ((m: Record<string, unknown>, st: State, depth: number) => void)[] = [];
  for (const f of desc.fields) {
    const part = fieldScan(f);
    if (part === undefined) fixed += SCALAR_BOUND;
    else parts.push(part);
  }
  const time = TIME_TYPES.has(desc.typeName);
  return (m, st, depth) => {
    if (depth > MAX_DEPTH) {
      st.size = Infinity;
      return;
    }
    if (time && timeValueFault(desc.typeName, m) !== undefined) st.invalid = true;
    st.size += fixed;
    for (let i = 0; i < parts.length; i++) parts[i]!(m, st, depth);
    const unknown = m.$unknown as { data: Uint8Array }[] | undefined;
    if (unknown !== undefined) for (const u of unknown) st.size += FIELD_OVERHEAD + u.data.length;
  };
}

function text(v: unknown, st: State): void {
  if (typeof v !== "string") {
    st.size += SCALAR_BOUND;
    return;
  }
  st.size += FIELD_OVERHEAD + 3 * v.length;
  if (!st.nul && v.includes("\u0000")) st.nul = st.invalid = true;
  if (!st.invalid && !isWellFormedText(v)) st.invalid = true;
}

/** A map or Struct key: caller text too. */
function keyText(k: string, st: State): void {
  if (!st.nul && k.includes("\u0000")) st.nul = st.invalid = true;
  if (!st.invalid && !isWellFormedText(k)) st.invalid = true;
}

/** How one value of a kind is scanned; undefined for scalars other than string and bytes. */
function valueScan(kind: "scalar" | "enum" | "message", scalar: ScalarType | undefined, msg: DescMessage | undefined): ValueScan | undefined {
  if (kind === "message") {
    const sub = msg!;
    // A wrapper, Struct, Value or ListValue is held in a JSON-like form (a Struct as a plain
    // object): scanned as JSON, whose text bounds its encoding.
    if (!heldAsMessage(sub)) {
      return (v, st, depth) => {
        st.size += FIELD_OVERHEAD;
        jsonScan(v, st, depth + 1);
      };
    }
    return (v, st, depth) => scannerOf(sub)(v as Record<string, unknown>, st, depth + 1);
  }
  if (kind === "scalar" && scalar === ScalarType.STRING) return (v, st) => text(v, st);
  if (kind === "scalar" && scalar === ScalarType.BYTES) return (v, st) => void (st.size += FIELD_OVERHEAD + (v instanceof Uint8Array ? v.length : 0));
  return undefined;
}

/**
 * A JSON-like value: its text checked for NUL (keys too, as the generic scan does), and three
 * times its JSON length, with 26 for each number, bool or null, bounding its encoding.
 */
function jsonScan(v: unknown, st: State, depth: number): void {
  if (depth > MAX_DEPTH) {
    st.size = Infinity;
    return;
  }
  if (typeof v === "string") {
    text(v, st);
    return;
  }
  if (v === null || typeof v !== "object") {
    st.size += SCALAR_BOUND;
    return;
  }
  if (v instanceof Uint8Array) {
    st.size += FIELD_OVERHEAD + v.length;
    return;
  }
  st.size += FIELD_OVERHEAD;
  if (Array.isArray(v)) {
    for (const x of v) jsonScan(x, st, depth + 1);
    return;
  }
  for (const [k, x] of Object.entries(v)) {
    st.size += FIELD_OVERHEAD + FIELD_OVERHEAD + 3 * k.length;
    keyText(k, st);
    jsonScan(x, st, depth + 1);
  }
}

function fieldScan(f: DescField): ((m: Record<string, unknown>, st: State, depth: number) => void) | undefined {
  const name = f.localName;
  switch (f.fieldKind) {
    case "scalar":
    case "enum":
    case "message": {
      const scan = valueScan(f.fieldKind, f.fieldKind === "scalar" ? f.scalar : undefined, f.fieldKind === "message" ? f.message : undefined);
      if (f.oneof !== undefined) {
        // One slot for the whole oneof would do; a part per member keeps the bound simple.
        const oneof = f.oneof.localName;
        return (m, st, depth) => {
          const o = m[oneof] as { case?: string; value?: unknown } | undefined;
          if (o?.case !== name) return;
          if (scan === undefined) st.size += SCALAR_BOUND;
          else scan(o.value, st, depth);
        };
      }
      if (scan === undefined) return undefined;
      return (m, st, depth) => {
        const v = m[name];
        if (v !== undefined) scan(v, st, depth);
      };
    }
    case "list": {
      const scan = valueScan(f.listKind, f.listKind === "scalar" ? f.scalar : undefined, f.listKind === "message" ? f.message : undefined);
      return (m, st, depth) => {
        const list = m[name] as unknown[] | undefined;
        if (list === undefined) return;
        st.size += FIELD_OVERHEAD;
        if (scan === undefined) st.size += SCALAR_BOUND * list.length;
        else for (let i = 0; i < list.length; i++) scan(list[i], st, depth);
      };
    }
    case "map": {
      const scan = valueScan(f.mapKind, f.mapKind === "scalar" ? f.scalar : undefined, f.mapKind === "message" ? f.message : undefined);
      return (m, st, depth) => {
        const map = m[name] as Record<string, unknown> | undefined;
        if (map === undefined) return;
        for (const k in map) {
          if (!Object.prototype.hasOwnProperty.call(map, k)) continue;
          // The entry, its key (an integer key "-1" is a 10-byte varint) and its value.
          st.size += FIELD_OVERHEAD + FIELD_OVERHEAD + 10 + 3 * k.length;
          keyText(k, st);
          const v = map[k];
          if (scan === undefined) st.size += SCALAR_BOUND;
          else scan(v, st, depth);
        }
      };
    }
  }
}
