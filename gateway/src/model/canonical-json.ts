// Canonical proto-JSON text of a message: `canonicalJson(toJson(desc, message))` (object keys
// sorted at every level, unset fields left out), written straight to text by a writer compiled
// once per message type. The generic path walks each message through protobuf-es reflection and
// builds a JSON tree only to sort and print it; every waited update hashes its request and its
// policy this way (the request fingerprint and the policy hash), so that walk was a measurable
// share of the gateway's CPU per update. A message type with a field kind the writer does not
// handle (bytes, floating point, maps with non-string keys, well-known types) is written by the
// generic path, so the text is the same for every message.

import { ScalarType, toJson, type DescEnum, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { heldAsMessage, implicitZero, perMessageType } from "./per-message-type.js";

/** Objects of the message tree whose canonical text is already known, written in their place. */
export type RawTexts = ReadonlyMap<object, string>;

type Writer = (m: Record<string, unknown>, raw: RawTexts | undefined) => string;

/** `canonicalJson(toJson(desc, message))`; `raw` replaces the text of messages it holds. */
export function canonicalMessageJson(desc: DescMessage, message: object, raw?: RawTexts): string {
  return writerOf(desc)(message as Record<string, unknown>, raw);
}

/** The compiled writer of `desc`, or the generic path for a type it cannot compile. */
const writerOf = perMessageType<Writer>((desc) => compile(desc) ?? ((m) => canonicalJson(toJson(desc, m as never))));

/**
 * JSON text with object keys sorted at every level (code-unit order, as `Array.prototype.sort`).
 * `raw` maps objects of `value` to text already canonical, written in their place.
 */
export function canonicalJson(value: JsonValue, raw?: RawTexts): string {
  if (Array.isArray(value)) {
    let s = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) s += ",";
      s += canonicalJson(value[i]!, raw);
    }
    return s + "]";
  }
  if (value !== null && typeof value === "object") {
    const text = raw?.get(value);
    if (text !== undefined) return text;
    const keys = Object.keys(value).sort();
    let s = "{";
    for (let i = 0; i < keys.length; i++) {
      if (i > 0) s += ",";
      s += `${JSON.stringify(keys[i])}:${canonicalJson((value as Record<string, JsonValue>)[keys[i]!]!, raw)}`;
    }
    return s + "}";
  }
  return JSON.stringify(value);
}

/** Text of one field's value when set (toJson's rule), else undefined. */
type Part = (m: Record<string, unknown>, raw: RawTexts | undefined) => string | undefined;
/** Text of one value of a kind (a list item, a map value, a singular field's set value). */
type Value = (v: unknown, raw: RawTexts | undefined) => string;

const INT32 = new Set<ScalarType>([ScalarType.INT32, ScalarType.UINT32, ScalarType.SINT32, ScalarType.FIXED32, ScalarType.SFIXED32]);
const INT64 = new Set<ScalarType>([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

function compile(desc: DescMessage): Writer | undefined {
  if (desc.typeName.startsWith("google.protobuf.")) return undefined;
  const fields: { name: string; part: Part }[] = [];
  for (const f of desc.fields) {
    const part = fieldPart(f);
    if (part === undefined) return undefined;
    fields.push({ name: f.jsonName, part });
  }
  // The canonical order is that of the JSON names (code units), whatever the field numbers.
  fields.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const keys = fields.map((f) => JSON.stringify(f.name));
  const parts = fields.map((f) => f.part);
  return (m, raw) => {
    const known = raw?.get(m);
    if (known !== undefined) return known;
    let s = "";
    for (let i = 0; i < parts.length; i++) {
      const v = parts[i]!(m, raw);
      if (v !== undefined) s += `${s === "" ? "" : ","}${keys[i]}:${v}`;
    }
    return `{${s}}`;
  };
}

function enumText(e: DescEnum): Value {
  if (e.typeName === "google.protobuf.NullValue") return () => "null";
  // An unknown value is written as its number, as toJson does.
  return (v) => {
    const name = e.value[v as number]?.name;
    return name === undefined ? String(v) : JSON.stringify(name);
  };
}

/** The writer of one value of a kind, or undefined when that kind is left to toJson. */
function valueOf(kind: "scalar" | "enum" | "message", scalar: ScalarType | undefined, e: DescEnum | undefined, msg: DescMessage | undefined): Value | undefined {
  switch (kind) {
    case "scalar":
      if (scalar === ScalarType.STRING) return (v) => JSON.stringify(v);
      if (scalar === ScalarType.BOOL) return (v) => (v ? "true" : "false");
      if (INT32.has(scalar!)) return (v) => String(v);
      // 64-bit integers are decimal strings in proto JSON.
      if (INT64.has(scalar!)) return (v) => `"${String(v)}"`;
      return undefined;
    case "enum":
      return enumText(e!);
    case "message":
      if (msg!.typeName.startsWith("google.protobuf.")) {
        // Held as messages, with JSON forms of their own (a duration as "1.5s"). Wrappers and
        // Struct, Value and ListValue are held in a JSON-like form instead: left to toJson.
        if (!heldAsMessage(msg!)) return undefined;
        return (v) => canonicalJson(toJson(msg!, v as never));
      }
      return (v, raw) => writerOf(msg!)(v as Record<string, unknown>, raw);
  }
}

function fieldPart(f: DescField): Part | undefined {
  if (f.presence === 3) return undefined; // legacy required: leave its checks to toJson
  const key = f.localName;
  switch (f.fieldKind) {
    case "scalar":
    case "enum":
    case "message": {
      const value = valueOf(f.fieldKind, f.fieldKind === "scalar" ? f.scalar : undefined, f.fieldKind === "enum" ? f.enum : undefined, f.fieldKind === "message" ? f.message : undefined);
      if (value === undefined) return undefined;
      if (f.oneof !== undefined) {
        // A oneof is `{ case, value }` under the oneof's name; the chosen field is always written.
        const oneof = f.oneof.localName;
        return (m, raw) => {
          const o = m[oneof] as { case?: string; value?: unknown } | undefined;
          return o?.case === key ? value(o.value, raw) : undefined;
        };
      }
      // Explicit presence (messages, `optional`): written whenever present.
      if (f.fieldKind === "message" || f.presence === 1) {
        return (m, raw) => {
          const v = m[key];
          return v === undefined ? undefined : value(v, raw);
        };
      }
      // Implicit presence: left out at its zero value.
      const isZero = implicitZero(f);
      return (m, raw) => {
        const v = m[key];
        return v === undefined || isZero(v) ? undefined : value(v, raw);
      };
    }
    case "list": {
      const item = valueOf(f.listKind, f.listKind === "scalar" ? f.scalar : undefined, f.listKind === "enum" ? f.enum : undefined, f.listKind === "message" ? f.message : undefined);
      if (item === undefined) return undefined;
      return (m, raw) => {
        const v = m[key] as unknown[] | undefined;
        if (v === undefined || v.length === 0) return undefined;
        let s = "[";
        for (let i = 0; i < v.length; i++) s += (i === 0 ? "" : ",") + item(v[i], raw);
        return `${s}]`;
      };
    }
    case "map": {
      if (f.mapKey !== ScalarType.STRING) return undefined;
      const item = valueOf(f.mapKind, f.mapKind === "scalar" ? f.scalar : undefined, f.mapKind === "enum" ? f.enum : undefined, f.mapKind === "message" ? f.message : undefined);
      if (item === undefined) return undefined;
      return (m, raw) => {
        const v = m[key] as Record<string, unknown> | undefined;
        if (v === undefined) return undefined;
        const keys = Object.keys(v);
        if (keys.length === 0) return undefined;
        keys.sort();
        let s = "{";
        for (let i = 0; i < keys.length; i++) s += `${i === 0 ? "" : ","}${JSON.stringify(keys[i])}:${item(v[keys[i]!], raw)}`;
        return `${s}}`;
      };
    }
  }
}
