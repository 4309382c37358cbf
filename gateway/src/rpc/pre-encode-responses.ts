// Responses encoded by the gateway's compiled encoder, not by connect. connect-node serializes what
// a handler returns with protobuf-es's toBinary, which walks each message through reflection: a
// 1,000-sandbox ListSandboxes page took about 50 ms of it, the compiled encoder writes the same
// bytes in 5-8 (an UpdateConfig answer: 16 against 9 µs). This interceptor, outermost (so every
// other interceptor sees the real message), encodes the response of each unary call with a binary
// codec once and hands connect a stand-in of those bytes
// (model/pre-encoded.ts), which it serializes to exactly them. JSON codecs, and Connect GET
// requests (their codec is in the URL, not a header), get the messages as they are.

import type { Interceptor } from "@connectrpc/connect";
import type { DescMessage } from "@bufbuild/protobuf";
import { encodeMessage } from "../model/binary-encoder.js";
import { isStandIn, standIn } from "../model/pre-encoded.js";

/** Content types whose codec is protobuf binary: gRPC, gRPC-Web, Connect unary and streaming. */
const BINARY = /^application\/(grpc(-web)?(\+proto)?|proto|connect\+proto)\s*(;|$)/i;

export function isBinaryCodec(contentType: string | null): boolean {
  return contentType !== null && BINARY.test(contentType);
}

/** The stand-in of `message`; the message itself when it cannot be encoded (connect then reports why, as ever). */
function encoded(desc: DescMessage, message: object): object {
  if (isStandIn(message)) return message;
  try {
    return standIn(desc, encodeMessage(desc, message));
  } catch {
    return message;
  }
}

export function preEncodeResponses(): Interceptor {
  return (next) => async (req) => {
    const res = await next(req);
    // Streams are left alone: another generator around each would cost more per message than the
    // encoding saves, and the one hot stream (ConnectSupervisor) pre-encodes its pushes itself.
    // GET (Connect's side-effect-free calls) names its codec in the URL, not in a header.
    if (res.stream || req.requestMethod !== "POST" || !isBinaryCodec(req.header.get("content-type"))) return res;
    return { ...res, message: encoded(req.method.output, res.message) as typeof res.message };
  };
}
