// Random protobuf-es messages of any type, driven by its descriptor and a seed, for property
// tests of code that must treat every message as protobuf-es itself does.

import { create, ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";

/** A small deterministic PRNG, so that fast-check's seed decides the whole message. */
export function rng(seed: number) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

const TEXTS = ["", "a", "zz", "10", "2", "é", "💥", "a\"b", "\\", "ß", "Z", "_x", "line\nbreak", "nul\u0000inside"];

/** A message of `desc` with a random subset of its fields set (nested to `depth`), held as protobuf-es holds it. */
export function randomMessage(desc: DescMessage, r: () => number, depth: number): Record<string, unknown> {
  const init: Record<string, unknown> = {};
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const scalar = (t: ScalarType): unknown => {
    switch (t) {
      case ScalarType.STRING:
        return pick(TEXTS);
      case ScalarType.BOOL:
        return r() < 0.5;
      case ScalarType.INT64:
      case ScalarType.SINT64:
      case ScalarType.SFIXED64:
        return pick([0n, 1n, -1n, 2n ** 63n - 1n, -(2n ** 63n)]);
      case ScalarType.UINT64:
      case ScalarType.FIXED64:
        return pick([0n, 1n, 2n ** 64n - 1n]);
      case ScalarType.INT32:
      case ScalarType.SINT32:
      case ScalarType.SFIXED32:
        return pick([0, 1, -1, 2 ** 31 - 1, -(2 ** 31)]);
      case ScalarType.UINT32:
      case ScalarType.FIXED32:
        return pick([0, 1, 2 ** 32 - 1]);
      case ScalarType.BYTES:
        return new Uint8Array([0, 255, 7].slice(0, Math.floor(r() * 4)));
      default:
        return pick([0, 1.5, -2.25]);
    }
  };
  const value = (f: DescField, kind: "scalar" | "enum" | "message"): unknown => {
    if (kind === "scalar") return scalar((f as { scalar: ScalarType }).scalar);
    if (kind === "enum") {
      const e = (f as { enum: { values: { number: number }[] } }).enum;
      // Now and then a number the enum does not name (toJson writes it as a number).
      return r() < 0.1 ? 99 : pick(e.values).number;
    }
    const m = (f as { message: DescMessage }).message;
    if (m.typeName === "google.protobuf.Duration") return { $typeName: m.typeName, seconds: pick([0n, 5n]), nanos: pick([0, 500_000_000]) };
    if (m.typeName === "google.protobuf.Struct") return { a: pick(TEXTS), n: 1.5, nested: { z: null, list: [true, "x"] } };
    if (m.typeName.startsWith("google.protobuf.")) return undefined;
    return depth > 0 ? create(m, randomMessage(m, r, depth - 1) as never) : create(m);
  };
  for (const f of desc.fields) {
    if (r() < 0.4) continue;
    if (f.oneof) {
      if (init[f.oneof.localName] === undefined && r() < 0.5) {
        const v = value(f, f.fieldKind as "scalar" | "enum" | "message");
        if (v !== undefined) init[f.oneof.localName] = { case: f.localName, value: v };
      }
      continue;
    }
    let v: unknown;
    if (f.fieldKind === "list") v = Array.from({ length: Math.floor(r() * 3) }, () => value(f, f.listKind)).filter((x) => x !== undefined);
    else if (f.fieldKind === "map") {
      const o: Record<string, unknown> = {};
      for (let i = Math.floor(r() * 4); i > 0; i--) {
        const x = value(f, f.mapKind);
        if (x !== undefined) o[f.mapKey === ScalarType.STRING ? pick(TEXTS) : String(Math.floor(r() * 20))] = x;
      }
      v = o;
    } else v = value(f, f.fieldKind);
    if (v !== undefined) init[f.localName] = v;
  }
  return init;
}

