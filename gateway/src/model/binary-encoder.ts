// The binary encoding of a message, byte for byte what `toBinary(desc, message)` writes, from an
// encoder compiled once per message type that writes into one reused buffer. toBinary walks every
// message through protobuf-es reflection and its BinaryWriter (a TextEncoder call per string, a
// chunk list per nested message, a copy to join them): for the policy a waited update stores, it
// cost more than the update's SQL. Fields go in field-number order, each when set by toBinary's
// rule, then the unknown fields as they came. Whatever this does not handle (groups, proto2
// required fields, maps with keys other than strings, well-known types held in a JSON-like form)
// and any value toBinary would check and might refuse (an int32 out of range, say) is left to
// toBinary itself, so the result, or the error, is always toBinary's.

import { ScalarType, toBinary, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { heldAsMessage, implicitZero, perMessageType } from "./per-message-type.js";

/** A value the fast path does not write; toBinary encodes the whole message instead. */
const FALLBACK = Symbol("fallback");

/** The output buffer: grown as needed, reused across calls (encoding is synchronous). */
let buf = Buffer.allocUnsafe(4096);
let pos = 0;

function ensure(n: number): void {
  if (pos + n <= buf.length) return;
  const next = Buffer.allocUnsafe(Math.max(buf.length * 2, pos + n));
  buf.copy(next, 0, 0, pos);
  buf = next;
}

/** A varint of a non-negative integer below 2^32. */
function varint32(v: number): void {
  ensure(5);
  while (v > 0x7f) {
    buf[pos++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[pos++] = v;
}

/** A varint of a 64-bit value given as its low and high 32 bits (unsigned). */
function varint64(lo: number, hi: number): void {
  ensure(10);
  while (hi !== 0 || lo > 0x7f) {
    buf[pos++] = (lo & 0x7f) | 0x80;
    lo = ((lo >>> 7) | (hi << 25)) >>> 0;
    hi >>>= 7;
  }
  buf[pos++] = lo;
}

function varintSize(v: number): number {
  return v < 0x80 ? 1 : v < 0x4000 ? 2 : v < 0x200000 ? 3 : v < 0x10000000 ? 4 : 5;
}

const U64 = (1n << 64n) - 1n;

function bigintOf(v: unknown, min: bigint, max: bigint): bigint {
  let b: bigint;
  if (typeof v === "bigint") b = v;
  else if (typeof v === "string" && /^-?[0-9]+$/.test(v)) b = BigInt(v);
  else if (typeof v === "number" && Number.isSafeInteger(v)) b = BigInt(v);
  else throw FALLBACK;
  if (b < min || b > max) throw FALLBACK;
  return b;
}

function putU64(b: bigint): void {
  // Revisions and versions are small: one Number conversion instead of masks and shifts.
  if (b >= 0n && b <= 0xffffffffn) return varint32(Number(b));
  const u = b & U64;
  varint64(Number(u & 0xffffffffn), Number(u >> 32n));
}

function int32Of(v: unknown): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v > 0x7fffffff || v < -0x80000000) throw FALLBACK;
  return v;
}

function uint32Of(v: unknown): number {
  if (typeof v !== "number" || !Number.isInteger(v) || v > 0xffffffff || v < 0) throw FALLBACK;
  return v;
}

type Put = (v: unknown) => void;

/** How one scalar value is written (after its tag), and its wire type. */
function scalarPut(t: ScalarType): { put: Put; wire: number } | undefined {
  switch (t) {
    case ScalarType.STRING:
      return {
        wire: 2,
        put: (v) => {
          if (typeof v !== "string") throw FALLBACK;
          // Lone surrogates become U+FFFD in both this and TextEncoder.
          const n = Buffer.byteLength(v, "utf8");
          varint32(n);
          ensure(n);
          pos += buf.write(v, pos, n, "utf8");
        },
      };
    case ScalarType.BYTES:
      return {
        wire: 2,
        put: (v) => {
          if (!(v instanceof Uint8Array)) throw FALLBACK;
          varint32(v.length);
          raw(v);
        },
      };
    case ScalarType.BOOL:
      return {
        wire: 0,
        put: (v) => {
          ensure(1);
          buf[pos++] = v ? 1 : 0;
        },
      };
    case ScalarType.INT32:
      return {
        wire: 0,
        put: (v) => {
          const n = int32Of(v);
          // Negative int32 is sign-extended to ten bytes.
          if (n >= 0) varint32(n);
          else varint64(n >>> 0, 0xffffffff);
        },
      };
    case ScalarType.UINT32:
      return { wire: 0, put: (v) => varint32(uint32Of(v)) };
    case ScalarType.SINT32:
      return {
        wire: 0,
        put: (v) => {
          const n = int32Of(v);
          varint32(((n << 1) ^ (n >> 31)) >>> 0);
        },
      };
    case ScalarType.INT64:
      return { wire: 0, put: (v) => putU64(bigintOf(v, -(1n << 63n), (1n << 63n) - 1n)) };
    case ScalarType.UINT64:
      return { wire: 0, put: (v) => putU64(bigintOf(v, 0n, U64)) };
    case ScalarType.SINT64:
      return {
        wire: 0,
        put: (v) => {
          const b = bigintOf(v, -(1n << 63n), (1n << 63n) - 1n);
          putU64(b >= 0n ? b << 1n : ((-b) << 1n) - 1n);
        },
      };
    case ScalarType.FIXED32:
      return {
        wire: 5,
        put: (v) => {
          ensure(4);
          pos = buf.writeUInt32LE(uint32Of(v), pos);
        },
      };
    case ScalarType.SFIXED32:
      return {
        wire: 5,
        put: (v) => {
          ensure(4);
          pos = buf.writeInt32LE(int32Of(v), pos);
        },
      };
    case ScalarType.FIXED64:
      return {
        wire: 1,
        put: (v) => {
          ensure(8);
          pos = buf.writeBigUInt64LE(bigintOf(v, 0n, U64), pos);
        },
      };
    case ScalarType.SFIXED64:
      return {
        wire: 1,
        put: (v) => {
          ensure(8);
          pos = buf.writeBigInt64LE(bigintOf(v, -(1n << 63n), (1n << 63n) - 1n), pos);
        },
      };
    case ScalarType.DOUBLE:
      return {
        wire: 1,
        put: (v) => {
          if (typeof v !== "number") throw FALLBACK;
          ensure(8);
          pos = buf.writeDoubleLE(v, pos);
        },
      };
    // float: toBinary checks the float32 range; left to it.
    default:
      return undefined;
  }
}

type Encoder = (m: Record<string, unknown>) => void;

/** `toBinary(desc, message)`, through an encoder compiled for `desc`. */
export function encodeMessage(desc: DescMessage, message: object): Uint8Array {
  pos = 0;
  try {
    encoderOf(desc)(message as Record<string, unknown>);
  } catch (err) {
    if (err !== FALLBACK) throw err;
    return toBinary(desc, message as never);
  }
  const out = new Uint8Array(pos);
  out.set(buf.subarray(0, pos));
  // A rare large message does not keep its buffer.
  if (buf.length > 1 << 20) buf = Buffer.allocUnsafe(4096);
  return out;
}

/** The compiled encoder of `desc`, or one that writes toBinary's bytes for a type it cannot compile. */
const encoderOf = perMessageType<Encoder>((desc) => compile(desc) ?? ((m) => raw(toBinary(desc, m as never))));

function raw(bytes: Uint8Array): void {
  ensure(bytes.length);
  buf.set(bytes, pos);
  pos += bytes.length;
}

function compile(desc: DescMessage): Encoder | undefined {
  const parts: Encoder[] = [];
  for (const f of [...desc.fields].sort((a, b) => a.number - b.number)) {
    const part = fieldEncoder(f);
    if (part === undefined) return undefined;
    parts.push(part);
  }
  return (m) => {
    for (let i = 0; i < parts.length; i++) parts[i]!(m);
    const unknown = m.$unknown as { no: number; wireType: number; data: Uint8Array }[] | undefined;
    if (unknown === undefined) return;
    for (const u of unknown) {
      varint32(((u.no << 3) | u.wireType) >>> 0);
      raw(u.data);
    }
  };
}

/** A message field's encoder; none for a type held in a JSON-like form (its message is left to toBinary). */
function messageEncoder(sub: DescMessage): Encoder | undefined {
  return heldAsMessage(sub) ? encoderOf(sub) : undefined;
}

/** Writes `tag`, then `sub`'s encoding with its length in front (usually one byte, shifted when not). */
function delimited(tag: number, sub: Encoder, v: Record<string, unknown>): void {
  varint32(tag);
  ensure(1);
  const start = pos++;
  sub(v);
  const len = pos - start - 1;
  if (len < 0x80) {
    buf[start] = len;
    return;
  }
  const n = varintSize(len);
  ensure(n - 1);
  buf.copy(buf, start + n, start + 1, pos);
  const end = pos + n - 1;
  pos = start;
  varint32(len);
  pos = end;
}

const tagOf = (no: number, wire: number) => ((no << 3) | wire) >>> 0;

function fieldEncoder(f: DescField): Encoder | undefined {
  if (f.presence === 3) return undefined; // legacy required: leave its checks to toBinary
  const name = f.localName;
  const no = f.number;
  switch (f.fieldKind) {
    case "scalar":
    case "enum":
    case "message": {
      let put: Put;
      const scalar = f.fieldKind === "scalar" ? f.scalar : ScalarType.INT32;
      if (f.fieldKind === "message") {
        const sub = messageEncoder(f.message);
        if (sub === undefined || f.delimitedEncoding) return undefined;
        const tag = tagOf(no, 2);
        put = (v) => delimited(tag, sub, v as Record<string, unknown>);
      } else {
        const s = scalarPut(scalar);
        if (s === undefined) return undefined;
        const tag = tagOf(no, s.wire);
        put = (v) => {
          varint32(tag);
          s.put(v);
        };
      }
      if (f.oneof !== undefined) {
        const oneof = f.oneof.localName;
        return (m) => {
          const o = m[oneof] as { case?: string; value?: unknown } | undefined;
          if (o?.case === name) put(o.value);
        };
      }
      if (f.fieldKind === "message" || f.presence !== 2) {
        // Explicit presence: set when an own property holds a value (proto2 defaults live on the prototype).
        return (m) => {
          const v = m[name];
          if (v !== undefined && Object.prototype.hasOwnProperty.call(m, name)) put(v);
        };
      }
      const isZero = implicitZero(f);
      return (m) => {
        const v = m[name];
        if (!isZero(v)) put(v);
      };
    }
    case "list":
      return f.presence === 2 ? listEncoder(f) : undefined;
    case "map":
      return f.presence === 2 ? mapEncoder(f) : undefined;
  }
}

/** A repeated field: each message (or unpacked scalar) with its own tag, packed scalars in one. */
function listEncoder(f: DescField & { fieldKind: "list" }): Encoder | undefined {
  const name = f.localName;
  if (f.listKind === "message") {
    const sub = messageEncoder(f.message);
    if (sub === undefined || f.delimitedEncoding) return undefined;
    const tag = tagOf(f.number, 2);
    return (m) => {
      const list = m[name] as Record<string, unknown>[];
      for (let i = 0; i < list.length; i++) delimited(tag, sub, list[i]!);
    };
  }
  const s = scalarPut(f.listKind === "scalar" ? f.scalar : ScalarType.INT32);
  if (s === undefined) return undefined;
  if (f.packed) {
    const tag = tagOf(f.number, 2);
    const items: Encoder = (m) => {
      const list = m[name] as unknown[];
      for (let i = 0; i < list.length; i++) s.put(list[i]);
    };
    return (m) => {
      if ((m[name] as unknown[]).length > 0) delimited(tag, items, m);
    };
  }
  const tag = tagOf(f.number, s.wire);
  return (m) => {
    const list = m[name] as unknown[];
    for (let i = 0; i < list.length; i++) {
      varint32(tag);
      s.put(list[i]);
    }
  };
}

/** A map<string, V>: one entry message per key, key and value always written, in the object's order. */
function mapEncoder(f: DescField & { fieldKind: "map" }): Encoder | undefined {
  if (f.mapKey !== ScalarType.STRING) return undefined;
  const name = f.localName;
  const key = scalarPut(ScalarType.STRING)!;
  let value: Put;
  if (f.mapKind === "message") {
    const sub = messageEncoder(f.message);
    if (sub === undefined) return undefined;
    value = (v) => delimited(tagOf(2, 2), sub, v as Record<string, unknown>);
  } else {
    const s = scalarPut(f.mapKind === "scalar" ? f.scalar : ScalarType.INT32);
    if (s === undefined) return undefined;
    const tag = tagOf(2, s.wire);
    value = (v) => {
      varint32(tag);
      s.put(v);
    };
  }
  const entryTag = tagOf(f.number, 2);
  let entry: [string, unknown] = ["", undefined];
  const writeEntry: Encoder = () => {
    varint32(tagOf(1, 2));
    key.put(entry[0]);
    value(entry[1]);
  };
  return (m) => {
    // Object.entries order, as toBinary iterates a map.
    for (const e of Object.entries(m[name] as Record<string, unknown>)) {
      entry = e;
      delimited(entryTag, writeEntry, m);
    }
  };
}
