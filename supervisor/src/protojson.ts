// Proto JSON of a message, as `toJson(schema, message)` with its default options returns it, from
// a writer compiled once per message type: the generic serializer walks every message through a
// reflection object (`sortedFields`, `isSet`, `get` per field), which was most of the cost of
// putting a received policy in proto JSON. Field kinds the compiled writer does not handle (64-bit
// integers, bytes, floating point, oneofs, well-known types in fields) are left to `toJson` for the
// message that has them, so the output is the same value, with the same key order, for every message.

import { ScalarType, toJson, type DescEnum, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";

type Writer = (m: Record<string, unknown>) => JsonValue;

const writers = new Map<DescMessage, Writer>();

/** `toJson(desc, message)` (default options), through a writer compiled for `desc`. */
export function messageToJson(desc: DescMessage, message: object): JsonValue {
  return writerOf(desc)(message as Record<string, unknown>);
}

function writerOf(desc: DescMessage): Writer {
  let w = writers.get(desc);
  if (w === undefined) {
    // Set before compiling, so a recursive message type refers to itself through the map.
    const generic: Writer = (m) => toJson(desc, m as never);
    writers.set(desc, generic);
    w = compile(desc) ?? generic;
    writers.set(desc, w);
  }
  return w;
}

const INT32_KINDS = new Set<ScalarType>([ScalarType.INT32, ScalarType.UINT32, ScalarType.SINT32, ScalarType.FIXED32, ScalarType.SFIXED32]);

type Part = (m: Record<string, unknown>, out: Record<string, JsonValue>) => void;

function compile(desc: DescMessage): Writer | undefined {
  if (desc.typeName.startsWith("google.protobuf.") || desc.oneofs.length > 0) return undefined;
  const parts: Part[] = [];
  // toJson writes the fields in field-number order.
  for (const f of [...desc.fields].sort((a, b) => a.number - b.number)) {
    const part = fieldPart(f);
    if (part === undefined) return undefined;
    parts.push(part);
  }
  return (m) => {
    const out: Record<string, JsonValue> = {};
    for (let i = 0; i < parts.length; i++) parts[i]!(m, out);
    return out;
  };
}

function scalarOk(t: ScalarType): boolean {
  return t === ScalarType.STRING || t === ScalarType.BOOL || INT32_KINDS.has(t);
}

function enumName(e: DescEnum): (v: number) => JsonValue {
  if (e.typeName === "google.protobuf.NullValue") return () => null;
  // An unknown value is written as its number, as toJson does.
  return (v) => e.value[v]?.name ?? v;
}

/** Writes one field into the JSON object when it is set (toJson's isSet), or undefined when unsupported. */
function fieldPart(f: DescField): Part | undefined {
  const key = f.localName;
  const json = f.jsonName;
  // Explicit presence: set when present; implicit: set when not the zero value.
  const explicit = f.presence === 1;
  if (f.presence === 3) return undefined; // legacy required: leave its checks to toJson
  switch (f.fieldKind) {
    case "scalar": {
      if (!scalarOk(f.scalar)) return undefined;
      const zero = f.scalar === ScalarType.STRING ? "" : f.scalar === ScalarType.BOOL ? false : 0;
      if (explicit)
        return (m, out) => {
          const v = m[key];
          if (v !== undefined) out[json] = v as JsonValue;
        };
      return (m, out) => {
        const v = m[key];
        if (v !== zero && v !== undefined) out[json] = v as JsonValue;
      };
    }
    case "enum": {
      const name = enumName(f.enum);
      if (explicit)
        return (m, out) => {
          const v = m[key];
          if (v !== undefined) out[json] = name(v as number);
        };
      return (m, out) => {
        const v = m[key];
        if (v !== 0 && v !== undefined) out[json] = name(v as number);
      };
    }
    case "message": {
      // A well-known type in a field is held in its JSON-like form (a Struct as a JSON object,
      // a wrapper as its value): the message that has one is left to toJson.
      if (f.message.typeName.startsWith("google.protobuf.")) return undefined;
      const sub = f.message;
      return (m, out) => {
        const v = m[key];
        if (v !== undefined) out[json] = writerOf(sub)(v as Record<string, unknown>);
      };
    }
    case "list": {
      const item = itemWriter(f.listKind, f.listKind === "scalar" ? f.scalar : undefined, f.listKind === "enum" ? f.enum : undefined, f.listKind === "message" ? f.message : undefined);
      if (item === undefined) return undefined;
      return (m, out) => {
        const v = m[key] as unknown[] | undefined;
        if (v === undefined || v.length === 0) return;
        const arr: JsonValue[] = new Array(v.length);
        for (let i = 0; i < v.length; i++) arr[i] = item(v[i]);
        out[json] = arr;
      };
    }
    case "map": {
      // toJson writes a map's keys as they come out of the object; only string keys are handled here.
      if (f.mapKey !== ScalarType.STRING) return undefined;
      const item = itemWriter(f.mapKind, f.mapKind === "scalar" ? f.scalar : undefined, f.mapKind === "enum" ? f.enum : undefined, f.mapKind === "message" ? f.message : undefined);
      if (item === undefined) return undefined;
      return (m, out) => {
        const v = m[key] as Record<string, unknown> | undefined;
        if (v === undefined) return;
        let obj: Record<string, JsonValue> | undefined;
        for (const k in v) {
          if (!Object.prototype.hasOwnProperty.call(v, k)) continue;
          (obj ??= {})[k] = item(v[k]);
        }
        if (obj !== undefined) out[json] = obj;
      };
    }
  }
}

function itemWriter(kind: "scalar" | "enum" | "message", scalar: ScalarType | undefined, e: DescEnum | undefined, msg: DescMessage | undefined): ((v: unknown) => JsonValue) | undefined {
  if (kind === "message" && msg!.typeName.startsWith("google.protobuf.")) return undefined;
  if (kind === "scalar") return scalarOk(scalar!) ? (v) => v as JsonValue : undefined;
  if (kind === "enum") {
    const name = enumName(e!);
    return (v) => name(v as number);
  }
  return (v) => writerOf(msg!)(v as Record<string, unknown>);
}
