// Answers a request with an RPC error before anything reads its body: for a connection without a
// verified client certificate, or a method the sandbox listener does not serve. The answer is in
// the request's own protocol (gRPC trailers-only, gRPC-Web, Connect unary or streaming), so every
// client reports the code and message; requests that are not RPCs get plain text.
//
// The body is left unread on purpose: HTTP/1.1 closes the connection after the answer (server.ts),
// and HTTP/2 resets the stream with NO_ERROR once the answer is sent (node does that for a
// response that ends before its request). One exception: an HTTP/1.1 body that announces at most
// SMALL_BODY_BYTES, or is chunked (connect-node's HTTP/1.1 client sends every body so), is
// discarded (never parsed or kept) for up to SMALL_BODY_WAIT_MS before the answer, as long as no
// more than SMALL_BODY_BYTES of it arrive. Closing the connection under a client that is still
// writing its body makes its write fail (EPIPE), and clients report that instead of the answer; a
// small body costs nothing to drop, and one that is large or slow is not waited for.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { Code, ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, endStreamFlag, endStreamToJson, errorToJsonBytes } from "@connectrpc/connect/protocol-connect";
import { setTrailerStatus } from "@connectrpc/connect/protocol-grpc";

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

const GRPC_WEB = /^application\/grpc-web(-text)?(\+|;|$)/i;
const GRPC = /^application\/grpc(\+|;|$)/i;
const CONNECT_STREAM = /^application\/connect\+/i;
/** `/package.Service/Method`: what connect routes. */
const RPC_PATH = /^\/[A-Za-z_][\w.]*\/[A-Za-z_]\w*$/;
/** An HTTP/1.1 body up to this size is dropped before the answer, so its client reads the answer. */
export const SMALL_BODY_BYTES = 64 * 1024;
/** ... if it arrives within this long; otherwise the answer goes at once and the connection closes. */
export const SMALL_BODY_WAIT_MS = 1_000;

/** Writes `code` and `message` as an error of the request's protocol; the body stays unread. */
export function refuseRequest(req: Req, res: Res, code: Code, message: string, waited = false): void {
  if (res.headersSent) return;
  if (!waited && !("stream" in res) && awaitsSmallBody(req)) {
    dropBody(req as IncomingMessage, () => refuseRequest(req, res, code, message, true));
    return;
  }
  const path = (req.url ?? "").split("?", 1)[0] ?? "";
  const contentType = String(req.headers["content-type"] ?? "");
  const error = new ConnectError(message, code);
  if (!RPC_PATH.test(path)) {
    send(res, codeToHttpStatus(code), { "content-type": "text/plain; charset=utf-8" }, `${message}\n`);
  } else if (GRPC_WEB.test(contentType) || GRPC.test(contentType)) {
    // Trailers-only: the status in the headers, no body.
    const headers: Record<string, string> = { "content-type": contentType };
    setTrailerStatus(new Headers(), error).forEach((value, key) => (headers[key] = value));
    send(res, 200, headers, undefined);
  } else if (CONNECT_STREAM.test(contentType)) {
    const end = new TextEncoder().encode(JSON.stringify(endStreamToJson(new Headers(), error, undefined)));
    send(res, 200, { "content-type": contentType }, encodeEnvelope(endStreamFlag, end));
  } else {
    send(res, codeToHttpStatus(code), { "content-type": "application/json" }, errorToJsonBytes(error, undefined));
  }
}

function awaitsSmallBody(req: Req): boolean {
  if (req.complete) return false;
  // Chunked: its size shows as it arrives (dropBody stops counting past the bound).
  if (req.headers["transfer-encoding"] !== undefined) return req.headers["content-length"] === undefined;
  const length = Number(req.headers["content-length"] ?? "0");
  return Number.isSafeInteger(length) && length > 0 && length <= SMALL_BODY_BYTES;
}

/**
 * Discards the rest of a small body, then calls `then` once: at its end, on error, after
 * SMALL_BODY_WAIT_MS, or as soon as more than SMALL_BODY_BYTES of it have arrived.
 */
function dropBody(req: IncomingMessage, then: () => void): void {
  let done = false;
  let bytes = 0;
  const finish = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    req.off("data", count).off("end", finish).off("error", finish).off("close", finish);
    then();
  };
  const count = (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > SMALL_BODY_BYTES) finish();
  };
  const timer = setTimeout(finish, SMALL_BODY_WAIT_MS);
  // The "data" listener reads the body (and drops each chunk once counted).
  req.on("data", count).on("end", finish).on("error", finish).on("close", finish);
}

function send(res: Res, status: number, headers: Record<string, string>, body: string | Uint8Array | undefined): void {
  if ("stream" in res) {
    // One HEADERS frame that ends the stream: a gRPC trailers-only answer must be exactly that.
    // Headers already set on the response (CORS) go along.
    res.stream.respond({ ...res.getHeaders(), ":status": status, "cache-control": "no-store", ...headers }, { endStream: body === undefined });
    if (body !== undefined) res.stream.end(body);
    return;
  }
  res.writeHead(status, { "cache-control": "no-store", "content-length": String(body === undefined ? 0 : Buffer.byteLength(body)), ...headers });
  res.end(body);
}
