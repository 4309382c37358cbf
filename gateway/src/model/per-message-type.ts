// What the code compiled per message type from descriptors shares (binary-encoder.ts,
// canonical-json.ts, rpc/message-scan.ts): a cache that compiles each type once, recursive types
// included, and the protobuf-es rules they must follow exactly: which well-known types a message
// holds as messages, and which implicit-presence values count as unset.

import { ScalarType, type DescField, type DescMessage } from "@bufbuild/protobuf";

/**
 * `build(desc)` once per message type. A recursive type meets itself while it is being built:
 * it gets a forwarder to the function being built, which is called only once that is done.
 */
export function perMessageType<F extends (...args: never[]) => unknown>(build: (desc: DescMessage) => F): (desc: DescMessage) => F {
  const built = new Map<DescMessage, F>();
  return (desc) => {
    let f = built.get(desc);
    if (f === undefined) {
      let done: F | undefined;
      built.set(desc, ((...args: Parameters<F>) => done!(...args)) as F);
      done = build(desc);
      built.set(desc, done);
      f = done;
    }
    return f;
  };
}

/**
 * Well-known types a field holds as messages. Wrappers, Struct, Value and ListValue are held in a
 * JSON-like form instead (a Struct as a plain object), which only protobuf-es itself converts.
 */
const HELD_AS_MESSAGES = new Set(["google.protobuf.Duration", "google.protobuf.Timestamp", "google.protobuf.FieldMask", "google.protobuf.Any", "google.protobuf.Empty"]);

/** Whether a field of type `desc` holds a message object (every type but the JSON-like well-known ones). */
export function heldAsMessage(desc: DescMessage): boolean {
  return !desc.typeName.startsWith("google.protobuf.") || HELD_AS_MESSAGES.has(desc.typeName);
}

/**
 * protobuf-es's rule for a singular scalar or enum field with implicit presence: set unless it
 * holds its zero value (toBinary leaves it out, and so does toJson by default).
 */
export function implicitZero(f: DescField & { fieldKind: "scalar" | "enum" }): (v: unknown) => boolean {
  if (f.fieldKind === "enum") {
    const zero = f.enum.values[0]!.number;
    return (v) => v === zero;
  }
  switch (f.scalar) {
    case ScalarType.BOOL:
      return (v) => v === false;
    case ScalarType.STRING:
      return (v) => v === "";
    case ScalarType.BYTES:
      return (v) => v instanceof Uint8Array && v.byteLength === 0;
    default:
      // Loose, as protobuf-es: 0, -0, 0n and "0" (a 64-bit integer held as a string) alike.
      return (v) => v == 0;
  }
}
