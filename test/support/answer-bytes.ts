// Answers written byte by byte, for tests of how clients read them: Connect and gRPC-Web envelope
// headers, a GetSandbox answer of an exact encoded size, a watch message, gRPC-Web's OK trailers.

import { create, toBinary } from "@bufbuild/protobuf";
import { SandboxResponseSchema, WatchConfigUpdateOperationsResponseSchema } from "openshell-config/raw";

/** A 5-byte envelope header: `flags`, then `length` big-endian. */
export function header(length: number, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(length, 1);
  return head;
}

/** A GetSandbox answer whose encoding is exactly `size` bytes (at least 8). */
export function sandboxAnswer(size: number): Buffer {
  for (let n = size; n >= 0; n--) {
    const bytes = toBinary(SandboxResponseSchema, create(SandboxResponseSchema, { sandbox: { hostKeyFingerprint: "f".repeat(n) } }));
    if (bytes.length === size) return Buffer.from(bytes);
  }
  throw new Error(`no answer of ${size} bytes`);
}

/** One stream envelope holding a watch response for `operationId`. */
export function watchEnvelope(operationId: string): Buffer {
  const data = toBinary(WatchConfigUpdateOperationsResponseSchema, create(WatchConfigUpdateOperationsResponseSchema, { operation: { operationId } }));
  return Buffer.concat([header(data.length), data]);
}

/** gRPC-Web's trailers envelope for status 0. */
export const GRPC_WEB_OK = Buffer.concat([header(16, 0x80), Buffer.from("grpc-status: 0\r\n")]);
