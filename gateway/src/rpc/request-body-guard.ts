// Checks every binary request message (Connect, gRPC, gRPC-Web) before connect hands it to
// protobuf-es, with scanWire (wire-scan.ts): bytes that are not UTF-8 in a string field and
// nesting beyond MAX_NESTING are refused INVALID_ARGUMENT naming the field, and so is an encoding
// fromBinary would fail on (connect would answer INTERNAL "parse binary: …", as if the gateway
// were at fault). Connect offers no hook into binary parsing, so each RPC's handler is wrapped
// and reads its request body through a check: a unary Connect body whole, enveloped messages
// (gRPC, gRPC-Web, Connect streams) one envelope at a time, each decompressed to be scanned and
// then passed on unchanged. A refusal is an error of the body stream, which connect answers with
// its code. JSON bodies are checked through connect's JSON options instead (json-text.ts).

import type { DescMessage } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextKey, type ConnectRouter } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { Compression, UniversalHandler, UniversalServerRequest } from "@connectrpc/connect/protocol";
import { MAX_NESTING, scanWire, type WireFault } from "./wire-scan.js";

/** The encodings the server accepts (server.ts); a body in any other one is refused by connect unread. */
const COMPRESSIONS: readonly Compression[] = [compressionGzip, compressionBrotli];

interface BodyFormat {
  /** Messages framed in envelopes (5-byte header: flags, big-endian length). */
  readonly enveloped: boolean;
  /** The header naming the body's or each envelope's compression. */
  readonly encodingHeader: string;
  /** The flag of an envelope connect skips rather than parses (none for gRPC, which parses every one). */
  readonly endFlag: number;
}

/** The binary formats, by content type; JSON ones are not scanned here. */
function binaryFormat(contentType: string | null): BodyFormat | undefined {
  const t = (contentType ?? "").toLowerCase();
  if (t === "application/proto") return { enveloped: false, encodingHeader: "content-encoding", endFlag: 0 };
  if (t === "application/connect+proto") return { enveloped: true, encodingHeader: "connect-content-encoding", endFlag: 0b10 };
  if (t === "application/grpc" || t === "application/grpc+proto") return { enveloped: true, encodingHeader: "grpc-encoding", endFlag: 0 };
  if (t === "application/grpc-web" || t === "application/grpc-web+proto") return { enveloped: true, encodingHeader: "grpc-encoding", endFlag: 0x80 };
  return undefined;
}

/**
 * A smaller bound on one message than the router's, for this request: the server's for a call
 * read before anyone is authenticated (an open method without credentials). The check reads no
 * more than that before handing the body to connect, whose adapter for such calls has that bound.
 */
export const bodyReadLimitKey = createContextKey<number | undefined>(undefined, { description: "request message read limit" });

/** The refusal of a faulty message of type `desc`. */
export function wireFaultError(desc: DescMessage, fault: WireFault): ConnectError {
  switch (fault.kind) {
    case "utf8":
      return new ConnectError(`${fault.path} must be valid UTF-8 (it holds bytes that are not UTF-8)`, Code.InvalidArgument);
    case "depth":
      return new ConnectError(`the request nests deeper than ${MAX_NESTING} levels of messages (at ${fault.path})`, Code.InvalidArgument);
    case "malformed":
      return new ConnectError(`the request is not a valid ${desc.typeName} in the protobuf binary format: ${fault.reason} (at ${fault.path})`, Code.InvalidArgument);
  }
}

/**
 * Wraps every handler registered on `router` so far. `readMaxBytes`: the most connect reads of
 * one message (server.ts); a larger body or envelope is passed on unscanned, for connect to refuse.
 */
export function guardRequestBodies(router: ConnectRouter, readMaxBytes: number): void {
  const handlers = router.handlers as UniversalHandler[];
  for (let i = 0; i < handlers.length; i++) handlers[i] = guarded(handlers[i]!, readMaxBytes);
}

function guarded(handler: UniversalHandler, readMaxBytes: number): UniversalHandler {
  const desc = handler.method.input;
  const check = async (bytes: Uint8Array, compression: Compression | undefined, max: number) => {
    let message = bytes;
    if (compression) {
      try {
        message = await compression.decompress(bytes, max);
      } catch {
        return; // connect fails to decompress it the same way, and says so
      }
    }
    const fault = scanWire(desc, message);
    if (fault) throw wireFaultError(desc, fault);
  };
  const guard = async (req: UniversalServerRequest) => {
    const limit = req.contextValues?.get(bodyReadLimitKey);
    const max = limit === undefined ? readMaxBytes : Math.min(limit, readMaxBytes);
    const format = binaryFormat(req.header.get("content-type"));
    if (!format || !isByteStream(req.body)) return handler(req);
    const name = req.header.get(format.encodingHeader);
    const known = name === null || name === "identity" ? null : COMPRESSIONS.find((c) => c.name === name);
    // An encoding the server does not accept: connect refuses the body without decoding it.
    if (known === undefined) return handler(req);
    const compression = known ?? undefined;
    const body = format.enveloped
      ? envelopes(req.body, max, format.endFlag, async (data, compressed) => {
          // A compressed envelope without an encoding: connect refuses it, unread.
          if (compressed && !compression) return;
          await check(data, compressed ? compression : undefined, max);
        })
      : whole(req.body, max, (data) => check(data, compression, max));
    return handler({ ...req, body });
  };
  return Object.assign(guard, {
    protocolNames: handler.protocolNames,
    service: handler.service,
    method: handler.method,
    requestPath: handler.requestPath,
    allowedMethods: handler.allowedMethods,
    supportedContentType: handler.supportedContentType,
  });
}

function isByteStream(body: unknown): body is AsyncIterable<Uint8Array> {
  return typeof body === "object" && body !== null && Symbol.asyncIterator in body;
}

function concat(chunks: Uint8Array[], length: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** A unary body: read whole (up to `max` bytes), checked, then passed on. */
async function* whole(body: AsyncIterable<Uint8Array>, max: number, check: (data: Uint8Array) => Promise<void>): AsyncGenerator<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  const it = body[Symbol.asyncIterator]();
  for (;;) {
    const r = await it.next();
    if (r.done) break;
    chunks.push(r.value);
    length += r.value.length;
    if (length > max) {
      // Over connect's own limit: it refuses the body; pass it on as it comes.
      yield concat(chunks, length);
      for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
      return;
    }
  }
  const data = concat(chunks, length);
  await check(data);
  yield data;
}

/** Byte `i` of the chunks, which hold more than `i` bytes. */
function byteAt(chunks: readonly Uint8Array[], i: number): number {
  for (const c of chunks) {
    if (i < c.length) return c[i]!;
    i -= c.length;
  }
  return 0;
}

/**
 * Enveloped messages: each complete envelope checked, then passed on; an envelope with `endFlag`
 * set is one connect does not parse as a request message, and is passed on unchecked.
 */
async function* envelopes(
  body: AsyncIterable<Uint8Array>,
  max: number,
  endFlag: number,
  check: (data: Uint8Array, compressed: boolean) => Promise<void>,
): AsyncGenerator<Uint8Array> {
  let pending: Uint8Array[] = [];
  let length = 0;
  const it = body[Symbol.asyncIterator]();
  for (;;) {
    const r = await it.next();
    if (r.done) break;
    pending.push(r.value);
    length += r.value.length;
    // Joined only once an envelope is complete: a large message arrives in many small chunks.
    while (length >= 5) {
      const size = ((byteAt(pending, 1) << 24) | (byteAt(pending, 2) << 16) | (byteAt(pending, 3) << 8) | byteAt(pending, 4)) >>> 0;
      if (size > max) {
        // Over connect's own limit: it refuses the message; pass the rest on as it comes.
        yield concat(pending, length);
        for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
        return;
      }
      if (length < 5 + size) break;
      const buf = concat(pending, length);
      const flags = buf[0]!;
      const envelope = buf.subarray(0, 5 + size);
      if (endFlag === 0 || (flags & endFlag) !== endFlag) await check(envelope.subarray(5), (flags & 1) === 1);
      yield envelope;
      const rest = buf.subarray(5 + size);
      pending = rest.length > 0 ? [rest] : [];
      length = rest.length;
    }
  }
  // An incomplete envelope: connect reports it.
  if (length > 0) yield concat(pending, length);
}
