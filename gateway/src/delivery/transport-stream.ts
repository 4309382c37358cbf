// The HTTP/2 stream a call runs on, handed to handlers through the call context, so that a
// long-lived stream can be ended from the server side even while a write to it is pending.
//
// Why this is needed: connect-node writes a streamed message and then waits for the response's
// 'drain' or 'error' event. When an HTTP/2 stream closes with a write still queued (the peer
// granted no flow-control window, reset the stream, or dropped the connection), Node's
// compatibility layer fires neither (the write's callback gets no error), so that wait never
// ends and the handler's generator stays suspended at its `yield` forever. Nothing inside the
// handler can cancel the write; only resetting the stream frees what it holds, and the handler
// must then do its own cleanup instead of relying on its `finally`.

import { constants } from "node:http2";
import { createContextKey, type ContextValues } from "@connectrpc/connect";

/** What a handler needs of its HTTP/2 stream (`ServerHttp2Stream` has it). */
export interface TransportStream {
  readonly closed: boolean;
  readonly destroyed: boolean;
  close(code?: number): void;
}

/** The call's HTTP/2 stream; undefined over HTTP/1.1 and in calls not served by `startServer`. */
export const transportStreamKey = createContextKey<TransportStream | undefined>(undefined, { description: "the call's HTTP/2 stream" });

/** Puts the HTTP/2 stream of `req` (when it has one) into `values`; for connectNodeAdapter's `contextValues`. */
export function withTransportStream(values: ContextValues, req: object): ContextValues {
  if ("stream" in req) values.set(transportStreamKey, req.stream as TransportStream);
  return values;
}

/**
 * Ends `stream` with RST_STREAM CANCEL unless it is already closed. Data queued on it is dropped,
 * and the peer sees the stream cancelled (no status: trailers cannot overtake queued data).
 */
export function resetTransportStream(stream: TransportStream | undefined): void {
  if (!stream || stream.closed || stream.destroyed) return;
  stream.close(constants.NGHTTP2_CANCEL);
}
