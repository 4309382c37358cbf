// The lean path for unary gRPC calls (src/transport/grpc-unary.ts) ends every call as connect-node
// would: each case is one call made twice against a scripted HTTP/2 server, once on the lean path
// and once through connect's own transport (an interceptor keeps a transport connect's whole), and
// the outcomes, what the server received and how its stream ended must be equal.

import { getEventListeners } from "node:events";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary, toJson } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { ConnectError, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { ConfigUpdateOperationState, OpenShell, UpdateConfigRequestSchema, UpdateConfigResponseSchema } from "../../src/raw.js";
import { withLeanUnary } from "../../src/transport/grpc-unary.js";
import { createNodeTransport } from "../../src/transport/node.js";

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

type Script = (s: http2.ServerHttp2Stream) => void;
/** What the server does with a call, by its x-case header. */
const scripts: Record<string, Script> = {
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
  "reset-refused": (s) => s.close(http2.constants.NGHTTP2_REFUSED_STREAM),
  "reset-calm": (s) => s.close(http2.constants.NGHTTP2_ENHANCE_YOUR_CALM),
  "reset-cancel": (s) => s.close(http2.constants.NGHTTP2_CANCEL),
  "reset-mid-body": (s) => {
    s.respond(OK);
    s.write(envelope(answer).subarray(0, 10), () => setTimeout(() => s.close(http2.constants.NGHTTP2_INTERNAL_ERROR), 20));
  },
  "stall": () => {},
  "connection-dropped": (s) => {
    s.respond(OK);
    s.write(envelope(answer).subarray(0, 10), () => s.session?.destroy());
  },
  "goaway": (s) => s.session?.goaway(http2.constants.NGHTTP2_INTERNAL_ERROR),
  "exactly-100": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(Buffer.alloc(100, 0x2a).fill(Buffer.from([0x12, 98]), 0, 2)));
  },
  "exactly-101": (s) => {
    s.respond(OK, { waitForTrailers: true });
    s.on("wantTrailers", () => s.sendTrailers(TRAILERS));
    s.end(envelope(Buffer.alloc(101, 0x2a).fill(Buffer.from([0x12, 99]), 0, 2)));
  },
};

interface Seen {
  readonly headers: Record<string, unknown>;
  readonly body: string;
  rstCode?: number;
}
let server: http2.Http2Server;
let baseUrl: string;
const seen = new Map<string, Seen>();
let sessions = 0;
const open = new Set<http2.ServerHttp2Session>();

beforeAll(async () => {
  server = http2.createServer();
  server.on("session", (s) => {
    sessions++;
    open.add(s);
    s.on("close", () => open.delete(s));
  });
  server.on("stream", (s, headers) => {
    const id = String(headers["x-id"]);
    const { "x-id": _id, ...rest } = headers;
    const chunks: Buffer[] = [];
    const record: Seen = { headers: Object.fromEntries(Object.entries(rest).filter(([k]) => !k.startsWith(":") || k === ":path" || k === ":method")), body: "" };
    seen.set(id, record);
    s.on("close", () => (record.rstCode = s.rstCode));
    s.on("data", (c: Buffer) => chunks.push(c));
    s.on("end", () => {
      (record as { body: string }).body = Buffer.concat(chunks).toString("hex");
      scripts[String(headers["x-case"])]!(s);
    });
    s.on("error", () => {});
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  // The transports' connections idle for minutes: the server ends them.
  for (const s of open) s.destroy();
  await new Promise<void>((r) => server.close(() => r()));
});

const passThrough: Interceptor = (next) => (req) => next(req);
let ids = 0;

/** One call's outcome, in plain data, and what the server saw of it. */
async function outcome(transport: Transport, kase: string, o: { timeoutMs?: number; signal?: AbortSignal } = {}) {
  const id = String(++ids);
  let header: [string, string][] = [];
  let trailer: [string, string][] = [];
  const req = create(UpdateConfigRequestSchema, { sandbox: "s1", idempotencyKey: "k1" });
  let result: unknown;
  try {
    const res = await createClient(OpenShell, transport).updateConfig(req, {
      headers: { "x-case": kase, "x-id": id, authorization: "Bearer t" },
      onHeader: (h) => (header = [...h].filter(([k]) => k !== "date")),
      onTrailer: (t) => (trailer = [...t]),
      ...o,
    });
    result = { ok: toJson(UpdateConfigResponseSchema, res), header, trailer };
  } catch (e) {
    const c = ConnectError.from(e);
    result = {
      code: c.code,
      message: c.rawMessage,
      metadata: [...c.metadata].filter(([k]) => k !== "date"),
      details: c.details.map((d) => ("type" in d ? d.type : d.desc.typeName)),
    };
  }
  // The server's side of the stream ends a moment after the client's.
  for (let i = 0; i < 100 && seen.get(id) && seen.get(id)!.rstCode === undefined; i++) await new Promise((r) => setTimeout(r, 5));
  return { result, server: seen.get(id) };
}

describe("the lean path for unary gRPC calls", () => {
  const cases = Object.keys(scripts).filter((k) => !k.startsWith("exactly") && k !== "stall");

  it.each(cases)("ends a call whose answer is %s as connect-node does", async (kase) => {
    const lean = createNodeTransport({ baseUrl });
    const connect = createNodeTransport({ baseUrl, interceptors: [passThrough] });
    const a = await outcome(lean, kase);
    const b = await outcome(connect, kase);
    expect(a).toEqual(b);
    if (kase === "ok") expect(a.result).toMatchObject({ ok: { version: 7 }, header: expect.arrayContaining([["x-answer", "a"]]), trailer: expect.arrayContaining([["x-trailer", "t"]]) });
  });

  it("sends what connect-node sends: the same headers, deadline and envelope", async () => {
    const a = await outcome(createNodeTransport({ baseUrl }), "ok", { timeoutMs: 5000 });
    const b = await outcome(createNodeTransport({ baseUrl, interceptors: [passThrough] }), "ok", { timeoutMs: 5000 });
    expect(a.server!.headers).toEqual(b.server!.headers);
    expect(a.server!.headers).toMatchObject({ "grpc-timeout": "5000m", te: "trailers", "content-type": "application/grpc+proto", authorization: "Bearer t" });
    expect(a.server!.body).toBe(b.server!.body);
  });

  it("ends a stalled call at its deadline, DeadlineExceeded, and resets the stream as connect-node does", async () => {
    const a = await outcome(createNodeTransport({ baseUrl }), "stall", { timeoutMs: 150 });
    const b = await outcome(createNodeTransport({ baseUrl, interceptors: [passThrough] }), "stall", { timeoutMs: 150 });
    expect(a).toEqual(b);
    expect(a.result).toMatchObject({ code: 4 });
    expect(a.server!.rstCode).toBe(http2.constants.NGHTTP2_INTERNAL_ERROR);
  });

  it("ends an aborted call Canceled and resets the stream with CANCEL, as connect-node does", async () => {
    const abortSoon = () => {
      const c = new AbortController();
      setTimeout(() => c.abort(), 100);
      return c.signal;
    };
    const a = await outcome(createNodeTransport({ baseUrl }), "stall", { signal: abortSoon() });
    const b = await outcome(createNodeTransport({ baseUrl, interceptors: [passThrough] }), "stall", { signal: abortSoon() });
    expect(a).toEqual(b);
    expect(a.result).toMatchObject({ code: 1 });
    expect(a.server!.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
  });

  it("makes no request for a call aborted before it starts", async () => {
    const before = seen.size;
    const a = await outcome(createNodeTransport({ baseUrl }), "ok", { signal: AbortSignal.abort() });
    const b = await outcome(createNodeTransport({ baseUrl, interceptors: [passThrough] }), "ok", { signal: AbortSignal.abort() });
    expect(a).toEqual(b);
    expect(a.result).toMatchObject({ code: 1 });
    expect(seen.size).toBe(before);
  });

  it("reads an answer of exactly readMaxBytes and refuses one byte more, ResourceExhausted", async () => {
    const sessionManager = new Http2SessionManager(baseUrl);
    const connect = createGrpcTransport({ baseUrl, sessionManager, readMaxBytes: 100, acceptCompression: [] });
    const lean = withLeanUnary(connect, { baseUrl, sessionManager, readMaxBytes: 100 });
    for (const kase of ["exactly-100", "exactly-101"]) {
      const a = await outcome(lean, kase);
      const b = await outcome(createGrpcTransport({ baseUrl, readMaxBytes: 100, acceptCompression: [] }), kase);
      expect(a).toEqual(b);
      expect(a.result).toMatchObject(kase === "exactly-100" ? { ok: { policyHash: "*".repeat(98) } } : { code: 8 });
    }
    sessionManager.abort();
  });

  it("fails a call to a port nobody listens on Unavailable, as connect-node does", async () => {
    const closed = http2.createServer();
    await new Promise<void>((r) => closed.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise<void>((r) => closed.close(() => r()));
    const a = await outcome(createNodeTransport({ baseUrl: url }), "ok");
    const b = await outcome(createNodeTransport({ baseUrl: url, interceptors: [passThrough] }), "ok");
    expect(a.result).toEqual(b.result);
    expect(a.result).toMatchObject({ code: 14 });
  });

  it("shares one HTTP/2 connection with the transport's streaming calls and releases the caller's signal", async () => {
    const transport = createNodeTransport({ baseUrl });
    const signal = new AbortController().signal;
    const before = sessions;
    for (const kase of ["ok", "trailers-only", "reset-refused", "ok"]) await outcome(transport, kase, { signal, timeoutMs: 5000 });
    await outcome(transport, "stall", { signal, timeoutMs: 50 });
    // A server-streaming call on the same transport.
    const watch = createClient(OpenShell, transport).watchConfigUpdateOperations({}, { headers: { "x-case": "trailers-only", "x-id": "w" }, signal });
    await expect(watch[Symbol.asyncIterator]().next()).rejects.toThrow(/no such sandbox/);
    expect(sessions - before).toBe(1);
    expect(getEventListeners(signal, "abort")).toHaveLength(0);
  });
});
