// A scan of a request's binary encoding before protobuf-es decodes it, for what decoding cannot
// be trusted with: text that is not UTF-8 (fromBinary replaces it with U+FFFD without a word, so
// the gateway would store something the caller never sent) and nesting deep enough to exhaust
// the stack (fromBinary recurses once per nested message and once per unknown group, so 500,000
// nested groups in a 2 MB body ended in "Maximum call stack size exceeded"). It walks the bytes
// exactly as fromBinary reads them (same reader, same field-kind decisions, including its
// leniencies), so that it refuses only what fromBinary would misread or fail on, and names the
// field. Its own recursion is bounded by MAX_NESTING; unknown groups are skipped iteratively.

import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";
import { isUtf8 } from "node:buffer";

/**
 * How deep a request may nest: messages within messages, plus unknown groups within groups. Map
 * entries and google.protobuf.Value do not count (an entry is an encoding detail, and a Value only
 * wraps the Struct or ListValue that counts), so a Struct counts as deep as its JSON text.
 */
export const MAX_NESTING = 100;

export type WireFault =
  | { readonly kind: "utf8"; readonly path: string }
  | { readonly kind: "depth"; readonly path: string }
  | { readonly kind: "malformed"; readonly path: string; readonly reason: string };

/** Thrown inside the walk once a fault is found; caught by scanWire. */
class Found {
  constructor(readonly fault: WireFault) {}
}

/** The fields of each type by number, built once per type. */
const byNumber = new WeakMap<DescMessage, Map<number, DescField>>();

function fieldsOf(desc: DescMessage): Map<number, DescField> {
  let m = byNumber.get(desc);
  if (m === undefined) {
    m = new Map(desc.fields.map((f) => [f.number, f]));
    byNumber.set(desc, m);
  }
  return m;
}

/** Whether a message of `desc` adds a level of nesting (see MAX_NESTING). */
function counts(desc: DescMessage): boolean {
  return desc.typeName !== "google.protobuf.Value";
}

interface Walk {
  readonly reader: BinaryReader;
  /** Field path segments to the current position (`policy`, `network_policies["x"]`, `[2]`). */
  readonly path: string[];
}

function pathOf(w: Walk, last?: string): string {
  const parts = last === undefined ? w.path : [...w.path, last];
  let out = "";
  for (const p of parts) out += out === "" || p.startsWith("[") ? p : `.${p}`;
  return out === "" ? "(message)" : out;
}

/**
 * The first fault in `bytes`, a binary `desc` message, or undefined when fromBinary reads it
 * faithfully. A "malformed" fault is an encoding fromBinary would also fail on.
 */
export function scanWire(desc: DescMessage, bytes: Uint8Array, maxNesting = MAX_NESTING): WireFault | undefined {
  const w: Walk = { reader: new BinaryReader(bytes), path: [] };
  try {
    readMessage(w, desc, false, bytes.byteLength, 0, maxNesting);
    return undefined;
  } catch (err) {
    if (err instanceof Found) return err.fault;
    return { kind: "malformed", path: pathOf(w), reason: err instanceof Error ? err.message : String(err) };
  }
}

/** fromBinary's readMessage: until `end` (a length) or the matching end-group tag. */
function readMessage(w: Walk, desc: DescMessage, delimited: boolean, lengthOrFieldNo: number, depth: number, max: number): void {
  const r = w.reader;
  const end = delimited ? r.len : r.pos + lengthOrFieldNo;
  const fields = fieldsOf(desc);
  /** Elements seen so far of each repeated field, for the path. */
  let seen: Map<number, number> | undefined;
  let fieldNo = 0;
  let wireType: WireType = WireType.Varint;
  while (r.pos < end) {
    [fieldNo, wireType] = r.tag();
    if (delimited && wireType === WireType.EndGroup) break;
    const field = fields.get(fieldNo);
    if (field === undefined) {
      skipUnknown(w, wireType, fieldNo, depth, max);
      continue;
    }
    if (field.fieldKind === "list") {
      seen ??= new Map();
      const index = seen.get(fieldNo) ?? 0;
      seen.set(fieldNo, readList(w, field, wireType, index, depth, max));
      continue;
    }
    w.path.push(field.name);
    readField(w, field, depth, max);
    w.path.pop();
  }
  if (delimited && (wireType !== WireType.EndGroup || fieldNo !== lengthOrFieldNo)) throw new Error("invalid end group tag");
}

function readField(w: Walk, field: DescField, depth: number, max: number): void {
  switch (field.fieldKind) {
    case "scalar":
      readScalar(w, field.scalar);
      return;
    case "enum":
      w.reader.int32();
      return;
    case "message":
      readMessageField(w, field, field.message, depth, max);
      return;
    case "map":
      readMapEntry(w, field, depth, max);
      return;
    case "list":
      // Handled by the caller, which knows the element's index.
      return;
  }
}

/** One element (or one packed run) of a repeated field; returns the count of elements seen after it. */
function readList(w: Walk, field: DescField & { fieldKind: "list" }, wireType: WireType, index: number, depth: number, max: number): number {
  const r = w.reader;
  if (field.listKind === "message") {
    w.path.push(field.name, `[${index}]`);
    readMessageField(w, field, field.message, depth, max);
    w.path.length -= 2;
    return index + 1;
  }
  const scalar = field.listKind === "scalar" ? field.scalar : ScalarType.INT32;
  const packed = wireType === WireType.LengthDelimited && scalar !== ScalarType.STRING && scalar !== ScalarType.BYTES;
  if (!packed) {
    w.path.push(field.name, `[${index}]`);
    readScalar(w, scalar);
    w.path.length -= 2;
    return index + 1;
  }
  const e = r.uint32() + r.pos;
  let n = index;
  while (r.pos < e) {
    readScalar(w, scalar);
    n++;
  }
  return n;
}

function readMessageField(w: Walk, field: DescField, message: DescMessage, depth: number, max: number): void {
  const next = counts(message) ? depth + 1 : depth;
  if (next > max) throw new Found({ kind: "depth", path: pathOf(w) });
  // Group encoding (proto2 groups, editions' DELIMITED): a message ended by an end-group tag.
  const delimited = (field as { readonly delimitedEncoding?: boolean }).delimitedEncoding === true;
  readMessage(w, message, delimited, delimited ? field.number : w.reader.uint32(), next, max);
}

/** fromBinary's readMapEntry, including that it ignores (and does not skip) other field numbers. */
function readMapEntry(w: Walk, field: DescField & { fieldKind: "map" }, depth: number, max: number): void {
  const r = w.reader;
  const len = r.uint32();
  const end = r.pos + len;
  const name = w.path.pop()!;
  let key: string | undefined;
  while (r.pos < end) {
    const [fieldNo] = r.tag();
    if (fieldNo === 1) {
      if (field.mapKey === ScalarType.STRING) {
        const bytes = r.bytes();
        if (!isUtf8(bytes)) throw new Found({ kind: "utf8", path: pathOf(w, `${name}[(key)]`) });
        key = Buffer.from(bytes).toString("utf8");
      } else {
        key = String(scalarValue(r, field.mapKey));
      }
    } else if (fieldNo === 2) {
      w.path.push(`${name}[${key === undefined ? "(key)" : JSON.stringify(key)}]`);
      switch (field.mapKind) {
        case "scalar":
          readScalar(w, field.scalar);
          break;
        case "enum":
          r.int32();
          break;
        case "message":
          readMessageField(w, field, field.message, depth, max);
          break;
      }
      w.path.pop();
    }
  }
  w.path.push(name);
}

function readScalar(w: Walk, type: ScalarType): void {
  if (type !== ScalarType.STRING) {
    scalarValue(w.reader, type);
    return;
  }
  if (!isUtf8(w.reader.bytes())) throw new Found({ kind: "utf8", path: pathOf(w) });
}

/** Reads a scalar as fromBinary's readScalar does (same reader call, same bounds checks). */
function scalarValue(r: BinaryReader, type: ScalarType): unknown {
  switch (type) {
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return r.bytes();
    case ScalarType.BOOL:
      return r.bool();
    case ScalarType.DOUBLE:
      return r.double();
    case ScalarType.FLOAT:
      return r.float();
    case ScalarType.INT32:
      return r.int32();
    case ScalarType.INT64:
      return r.int64();
    case ScalarType.UINT64:
      return r.uint64();
    case ScalarType.FIXED64:
      return r.fixed64();
    case ScalarType.FIXED32:
      return r.fixed32();
    case ScalarType.SFIXED32:
      return r.sfixed32();
    case ScalarType.SFIXED64:
      return r.sfixed64();
    case ScalarType.SINT64:
      return r.sint64();
    case ScalarType.UINT32:
      return r.uint32();
    case ScalarType.SINT32:
      return r.sint32();
  }
}

/**
 * An unknown field, as BinaryReader.skip reads it, but without recursion: a group's nested groups
 * are counted and refused beyond the nesting limit, and each end-group tag must match its start.
 */
function skipUnknown(w: Walk, wireType: WireType, fieldNo: number, depth: number, max: number): void {
  const r = w.reader;
  if (wireType !== WireType.StartGroup) {
    r.skip(wireType, fieldNo);
    return;
  }
  const open = [fieldNo];
  while (open.length > 0) {
    if (depth + open.length > max) throw new Found({ kind: "depth", path: pathOf(w, `(unknown field ${fieldNo})`) });
    const [fn, wt] = r.tag();
    if (wt === WireType.EndGroup) {
      if (fn !== open[open.length - 1]) throw new Error("invalid end group tag");
      open.pop();
    } else if (wt === WireType.StartGroup) {
      open.push(fn);
    } else {
      r.skip(wt, fn);
    }
  }
  // BinaryReader.skip's own bounds check after a group.
  if (r.pos > r.len) throw new RangeError("premature EOF");
}
