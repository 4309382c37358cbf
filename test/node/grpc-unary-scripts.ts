// The scripted answers of test/node/grpc-unary.test.ts: what its HTTP/2 server does with a call,
// by the call's x-case header, and a proxy that reads the client's resets off the wire.

import type http2 from "node:http2";
import { constants as h2 } from "node:http2";
import net, { type AddressInfo } from "node:net";
import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { ConfigUpdateOperationState, UpdateConfigResponseSchema } from "../../src/raw.js";

const answer = toBinary(
  UpdateConfigResponseSchema,
  create(UpdateConfigResponseSchema, { version: 7, policyHash: "h".repeat(64), operation: { operationId: "op-1", state: ConfigUpdateOperationState.APPLIED } }),
);
const envelope = (data: Uint8Array, flags = 0) => {
  const b = Buffer.alloc(5 + data.length);
  b[0] = flags;
  b.writeUInt32BE(data.length, 1);
  b.set(data, 5);
  return b;
};
/** A google.rpc.Status with one detail, as grpc-status-details-bin carries it. */
const statusDetails = Buffer.from(
  new BinaryWriter()
    .tag(1, 0).int32(7)
    .tag(2, 2).string("denied here")
    .tag(3, 2).fork().tag(1, 2).string("type.googleapis.com/openshell.v1.UpdateConfigResponse").tag(2, 2).bytes(answer).join()
    .finish(),
).toString("base64");
const OK = { ":status": 200, "content-type": "application/grpc+proto", "x-answer": "a" };
const TRAILERS = { "grpc-status": "0", "x-trailer": "t" };

export type Script = (s: http2.ServerHttp2Stream) => void;
/** What the server does with a call, by its x-case header. */
export const scripts: Record<string, Script> = {
  ok: (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(answer));
  },
  "ok-byte-by-byte": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    const bytes = envelope(answer);
    for (let i = 0; i < bytes.length; i++) s.write(bytes.subarray(i, i + 1));
    s.end();
  },
  "ok-1mib-in-chunks": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    const bytes = envelope(toBinary(UpdateConfigResponseSchema, create(UpdateConfigResponseSchema, { policyHash: "h".repeat(1 << 20) })));
    for (let i = 0; i < bytes.length; i += 7000) s.write(bytes.subarray(i, i + 7000));
    s.end();
  },
  "error-in-trailers": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers({ "grpc-status": "7", "grpc-message": "denied%20here", "grpc-status-details-bin": statusDetails, "x-trailer": "t" }));
    s.end();
  },
  "trailers-only": (s) => s.respond({ ...OK, "grpc-status": "5", "grpc-message": "no such sandbox" }, { endStream: true }),
  "trailers-only-ok": (s) => s.respond({ ...OK, "grpc-status": "0" }, { endStream: true }),
  "http-503": (s) => s.respond({ ":status": 503, "content-type": "text/plain" }, { endStream: true }),
  "html": (s) => s.respond({ ":status": 200, "content-type": "text/html" }, { endStream: true }),
  "gzip": (s) => {
    s.respond({ ...OK, "grpc-encoding": "gzip" }, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(answer, 1));
  },
  "two-messages": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(Buffer.concat([envelope(answer), envelope(answer)]));
  },
  "compressed-flag": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(answer, 1));
  },
  "truncated": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(answer).subarray(0, 20));
  },
  "not-protobuf": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(Buffer.from([0xff, 0xff, 0xff])));
  },
  // An envelope's header and nothing of its message: connect drops such an envelope unread.
  "header-only-then-error": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers({ "grpc-status": "13", "grpc-message": "boom" }));
    s.end(envelope(answer).subarray(0, 5));
  },
  "header-only-then-ok": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(answer).subarray(0, 5));
  },
  "message-then-lone-header": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(Buffer.concat([envelope(answer), envelope(answer).subarray(0, 5)]));
  },
  "message-then-compressed": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(Buffer.concat([envelope(answer), envelope(answer, 1)]));
  },
  "message-then-not-protobuf": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(Buffer.concat([envelope(answer), envelope(Buffer.from([0xff, 0xff, 0xff]))]));
  },
  // One DATA frame whose last envelope header claims 2 GiB: connect checks it before parsing the others.
  "not-protobuf-then-huge-header": (s) => {
    s.respond(OK);
    s.end(Buffer.concat([envelope(Buffer.from([0xff, 0xff, 0xff])), Buffer.from([0, 0x7f, 0xff, 0xff, 0xff])]));
  },
  "compressed-then-huge-header": (s) => {
    s.respond(OK);
    s.end(Buffer.concat([envelope(answer, 1), Buffer.from([0, 0x7f, 0xff, 0xff, 0xff])]));
  },
  "two-messages-then-huge-header": (s) => {
    s.respond(OK);
    s.end(Buffer.concat([envelope(answer), envelope(answer), Buffer.from([0, 0x7f, 0xff, 0xff, 0xff])]));
  },
  "no-status": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers({ "x-trailer": "t" }));
    s.end(envelope(answer));
  },
  "message-with-error-header": (s) => {
    s.respond({ ...OK, "grpc-status": "3" }, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(answer));
  },
  "reset-refused": (s) => s.close(h2.NGHTTP2_REFUSED_STREAM),
  "reset-calm": (s) => s.close(h2.NGHTTP2_ENHANCE_YOUR_CALM),
  "reset-cancel": (s) => s.close(h2.NGHTTP2_CANCEL),
  "reset-no-error": (s) => s.close(h2.NGHTTP2_NO_ERROR),
  "reset-mid-body": (s) => {
    s.respond(OK);
    s.write(envelope(answer).subarray(0, 10), () => setTimeout(() => s.close(h2.NGHTTP2_INTERNAL_ERROR), 20));
  },
  "stall": () => {},
  "connection-dropped": (s) => {
    s.respond(OK);
    s.write(envelope(answer).subarray(0, 10), () => s.session?.destroy());
  },
  "goaway": (s) => s.session?.goaway(h2.NGHTTP2_INTERNAL_ERROR),
  "exactly-100": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(Buffer.alloc(100, 0x2a).fill(Buffer.from([0x12, 98]), 0, 2)));
  },
  // Only an envelope's header, saying 64 MiB and 1 byte follow.
  "claims-64mib-and-1": (s) => {
    s.respond(OK);
    const head = Buffer.alloc(5);
    head.writeUInt32BE(64 * 1024 * 1024 + 1, 1);
    s.write(head);
  },
  "exactly-101": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(Buffer.alloc(101, 0x2a).fill(Buffer.from([0x12, 99]), 0, 2)));
  },
};

/**
 * What the server does with a call before reading its request, by its x-case header: these answer
 * at once and never read, so a request larger than the stream's flow-control window is still being
 * written when the answer ends.
 */
export const early: Record<string, Script> = {
  "early-ok-never-read": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(answer));
  },
  // Paused, a Node server neither reads nor resets: the upload can never finish.
  "early-ok-never-read-paused": (s) => {
    s.pause();
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(answer));
  },
  // RFC 9113 §8.1: a server that has sent its whole answer may reset with NO_ERROR to stop the upload.
  "early-ok-then-reset-no-error": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(answer), () => setTimeout(() => s.close(h2.NGHTTP2_NO_ERROR), 20));
  },
  // As a gateway that refuses a call without a client certificate, and resets the unread upload.
  "early-unauthenticated-then-cancel": (s) => {
    s.respond({ ...OK, "grpc-status": "16", "grpc-message": "client%20certificate%20required" }, { endStream: true });
    setTimeout(() => s.close(h2.NGHTTP2_CANCEL), 20);
  },
  "early-unauthenticated-cancel-at-once": (s) => {
    s.respond({ ...OK, "grpc-status": "16", "grpc-message": "client%20certificate%20required" }, { endStream: true });
    s.close(h2.NGHTTP2_CANCEL);
  },
  // The reset overtakes the trailers: the answer never ends, and the reset decides.
  "early-ok-cancel-at-once": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => { s.sendTrailers(TRAILERS); s.close(h2.NGHTTP2_CANCEL); });
    s.end(envelope(answer));
  },
  "early-ok-internal-at-once": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => { s.sendTrailers(TRAILERS); s.close(h2.NGHTTP2_INTERNAL_ERROR); });
    s.end(envelope(answer));
  },
  "early-unauthenticated-never-read-paused": (s) => {
    s.pause();
    s.respond({ ...OK, "grpc-status": "16", "grpc-message": "client%20certificate%20required" }, { endStream: true });
  },
  "early-unauthenticated-never-read": (s) => s.respond({ ...OK, "grpc-status": "16", "grpc-message": "client%20certificate%20required" }, { endStream: true }),
};

/** A TCP proxy to `port` that records the error code of every RST_STREAM frame the client sends. */
export async function resetSniffingProxy(port: number) {
  const resets: number[] = [];
  const sockets = new Set<net.Socket>();
  const proxy = net.createServer((client) => {
    const upstream = net.connect(port, "127.0.0.1");
    sockets.add(client).add(upstream);
    let buf = Buffer.alloc(0);
    let preface = true;
    client.on("data", (chunk: Buffer) => {
      upstream.write(chunk);
      buf = Buffer.concat([buf, chunk]);
      if (preface) {
        if (buf.length < 24) return;
        buf = buf.subarray(24); // "PRI * HTTP/2.0..." before the first frame
        preface = false;
      }
      // Frames: a 24-bit length, a type byte, a flags byte, a 31-bit stream id, then the payload.
      while (buf.length >= 9 && buf.length >= 9 + buf.readUIntBE(0, 3)) {
        const length = buf.readUIntBE(0, 3);
        if (buf[3] === 0x3) resets.push(buf.readUInt32BE(9));
        buf = buf.subarray(9 + length);
      }
    });
    upstream.on("data", (chunk) => client.write(chunk));
    const end = () => (client.destroy(), upstream.destroy());
    client.on("close", end).on("error", end);
    upstream.on("close", end).on("error", end);
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    resets,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => proxy.close(() => r()));
    },
  };
}
