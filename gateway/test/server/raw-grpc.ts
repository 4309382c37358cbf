// One raw gRPC call over HTTP/2, answered as the protocol frames it (status, headers without
// :status and date, body bytes, trailers), for tests that compare two servers' answers byte for
// byte (the lean unary path against connect). A body given as chunks is written with a short
// pause between them; the stream can be reset after its body.

import * as http2 from "node:http2";
import { setTimeout as sleep } from "node:timers/promises";

export interface RawAnswer {
  status: number;
  headers: Record<string, unknown>;
  body: Buffer;
  trailers: Record<string, unknown>;
}

export interface RawCall {
  /** Default: OpenShell's Health. */
  readonly path?: string;
  readonly headers?: http2.OutgoingHttpHeaders;
  /** Wait this long after the headers before sending the body. */
  readonly bodyDelayMs?: number;
  /**
   * Asked for before the body is sent; once the body is out and the promise it returns has
   * resolved, the stream is reset (CANCEL).
   */
  readonly resetWhen?: () => Promise<unknown>;
}

/** A gRPC envelope: flags, big-endian length, the message's bytes. */
export function envelope(bytes: Uint8Array, flags = 0): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(bytes.length, 1);
  return Buffer.concat([head, bytes]);
}

export async function rawGrpcCall(url: string, body: Buffer | Buffer[], call: RawCall = {}): Promise<RawAnswer> {
  const session = http2.connect(url);
  try {
    return await new Promise<RawAnswer>((resolve, reject) => {
      const req = session.request({
        ":method": "POST",
        ":path": call.path ?? "/openshell.v1.OpenShell/Health",
        "content-type": "application/grpc",
        te: "trailers",
        ...call.headers,
      });
      const answer: RawAnswer = { status: 0, headers: {}, body: Buffer.alloc(0), trailers: {} };
      const data: Buffer[] = [];
      req.on("response", (h) => {
        answer.status = Number(h[":status"]);
        const { ":status": _s, date: _d, ...rest } = h;
        answer.headers = rest;
      });
      req.on("trailers", (t) => (answer.trailers = { ...t }));
      req.on("data", (c: Buffer) => data.push(c));
      req.on("end", () => resolve({ ...answer, body: Buffer.concat(data) }));
      req.on("close", () => resolve({ ...answer, body: Buffer.concat(data) }));
      req.on("error", call.resetWhen ? () => {} : reject);
      void (async () => {
        const resetAt = call.resetWhen?.();
        if (call.bodyDelayMs) await sleep(call.bodyDelayMs);
        if (Array.isArray(body)) {
          for (const c of body) {
            req.write(c);
            await sleep(2);
          }
          req.end();
        } else {
          req.end(body);
        }
        if (resetAt) {
          await resetAt;
          req.close(http2.constants.NGHTTP2_CANCEL);
        }
      })();
    });
  } finally {
    session.close();
  }
}
