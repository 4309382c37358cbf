// The lean path for unary gRPC calls (src/transport/grpc-unary.ts) ends every call as connect-node
// would: each case is one call made twice against a scripted HTTP/2 server, once on the lean path
// and once through connect's own transport (an interceptor keeps a transport connect's whole), and
// the outcomes, what the server received and how its stream ended must be equal.

import { getEventListeners } from "node:events";
import http2 from "node:http2";
import net, { type AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toJson } from "@bufbuild/protobuf";
import { ConnectError, createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { OpenShell, UpdateConfigRequestSchema, UpdateConfigResponseSchema } from "../../src/raw.js";
import { withLeanUnary } from "../../src/transport/grpc-unary.js";
import { createNodeTransport } from "../../src/transport/node.js";
import { early, resetSniffingProxy, scripts } from "./grpc-unary-scripts.js";

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
    s.on("error", () => {});
    const answerEarly = early[String(headers["x-case"])];
    if (answerEarly) return answerEarly(s);
    s.on("data", (c: Buffer) => chunks.push(c));
    s.on("end", () => {
      (record as { body: string }).body = Buffer.concat(chunks).toString("hex");
      scripts[String(headers["x-case"])]!(s);
    });
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

/** A signal that aborts once the server has read the whole request of the next call `outcome` makes (not after a guessed delay). */
function abortOnceSeen(reason?: unknown): AbortSignal {
  const c = new AbortController();
  const id = String(ids + 1);
  const poll = setInterval(() => {
    if (!seen.get(id)?.body) return;
    clearInterval(poll);
    c.abort(reason);
  }, 5);
  return c.signal;
}

/** One call's outcome, in plain data, and what the server saw of it. */
async function outcome(transport: Transport, kase: string, o: { timeoutMs?: number; signal?: AbortSignal; requestBytes?: number } = {}) {
  const { requestBytes, ...options } = o;
  const id = String(++ids);
  let header: [string, string][] = [];
  let trailer: [string, string][] = [];
  const req = create(UpdateConfigRequestSchema, { sandbox: "s1", idempotencyKey: requestBytes ? "k".repeat(requestBytes) : "k1" });
  let result: unknown;
  try {
    const res = await createClient(OpenShell, transport).updateConfig(req, {
      headers: { "x-case": kase, "x-id": id, authorization: "Bearer t" },
      onHeader: (h) => (header = [...h].filter(([k]) => k !== "date")),
      onTrailer: (t) => (trailer = [...t]),
      ...options,
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
  // The server's side of the stream ends a moment after the client's (2 s at most, for a loaded machine).
  for (let i = 0; i < 400 && seen.get(id) && seen.get(id)!.rstCode === undefined; i++) await new Promise((r) => setTimeout(r, 5));
  return { result, server: seen.get(id) };
}

describe("the lean path for unary gRPC calls", () => {
  const cases = Object.keys(scripts).filter((k) => !k.startsWith("exactly") && !k.startsWith("claims") && k !== "stall" && k !== "reset-no-error");

  it.each(cases)("ends a call whose answer is %s as connect-node does", async (kase) => {
    const lean = createNodeTransport({ baseUrl });
    const connect = createNodeTransport({ baseUrl, interceptors: [passThrough] });
    const a = await outcome(lean, kase);
    const b = await outcome(connect, kase);
    expect(a).toEqual(b);
    if (kase === "ok") expect(a.result).toMatchObject({ ok: { version: 7 }, header: expect.arrayContaining([["x-answer", "a"]]), trailer: expect.arrayContaining([["x-trailer", "t"]]) });
  });

  it.each(Object.keys(early))("ends a call answered before its request was read (%s) as connect-node does", async (kase) => {
    // 300 kB: more than a stream's flow-control window, so the upload is still going when the answer ends.
    const a = await outcome(createNodeTransport({ baseUrl }), kase, { requestBytes: 300_000, timeoutMs: 2000 });
    const b = await outcome(createNodeTransport({ baseUrl, interceptors: [passThrough] }), kase, { requestBytes: 300_000, timeoutMs: 2000 });
    expect(a.result).toEqual(b.result);
    const expected: Record<string, object> = { "early-ok-cancel-at-once": { code: 1 }, "early-ok-internal-at-once": { code: 13 } };
    expect(a.result).toMatchObject(expected[kase] ?? (kase.includes("unauthenticated") ? { code: 16, message: "client certificate required" } : { ok: { version: 7 } }));
    // The lean path does not leave a stream open on an upload nobody reads: it cancels it.
    if (kase.endsWith("-never-read-paused")) expect(a.server!.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
  });

  it("sends the server no reset after a complete gRPC answer, success or error, as connect-node sends none", async () => {
    // The server's own view of a stream ignores a reset that comes after both sides ended it, so
    // the client's RST_STREAM frames are read off the wire, by a proxy in between.
    const proxy = await resetSniffingProxy((server.address() as AddressInfo).port);
    try {
      for (const kase of ["ok", "error-in-trailers", "trailers-only", "http-503", "truncated", "no-status", "header-only-then-error"]) {
        const sent: number[][] = [];
        for (const interceptors of [[], [passThrough]]) {
          proxy.resets.length = 0;
          await outcome(createNodeTransport({ baseUrl: proxy.url, interceptors }), kase);
          // A reset that is sent comes a moment later (waited for where one is expected, up to 2 s).
          for (let i = 0; i < (kase === "http-503" ? 400 : 10) && proxy.resets.length === 0; i++) await new Promise((r) => setTimeout(r, 5));
          sent.push([...proxy.resets]);
        }
        expect({ kase, lean: sent[0] }).toEqual({ kase, lean: sent[1] });
        // An HTTP error is refused from its headers alone, before the body ends: both reset then.
        if (kase !== "http-503") expect({ kase, sent: sent[0] }).toEqual({ kase, sent: [] });
      }
    } finally {
      await proxy.close();
    }
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
    const a = await outcome(createNodeTransport({ baseUrl }), "stall", { signal: abortOnceSeen() });
    const b = await outcome(createNodeTransport({ baseUrl, interceptors: [passThrough] }), "stall", { signal: abortOnceSeen() });
    expect(a).toEqual(b);
    expect(a.result).toMatchObject({ code: 1 });
    expect(a.server!.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
  });

  it("ends an aborted call as connect-node does when the abort's reason is the caller's own error", async () => {
    const abortSoon = () => abortOnceSeen(new Error("deadline exceeded"));
    const a = await outcome(createNodeTransport({ baseUrl }), "stall", { signal: abortSoon() });
    const b = await outcome(createNodeTransport({ baseUrl, interceptors: [passThrough] }), "stall", { signal: abortSoon() });
    expect(a).toEqual(b);
    expect(a.result).toMatchObject({ code: 1, message: "deadline exceeded" });
  });

  it("fails at once, Internal, a call whose stream the server closes with NO_ERROR before answering", async () => {
    // connect-node waits for the deadline here (a NO_ERROR reset is no error to it, and no answer
    // comes); gRPC's HTTP/2 mapping reads this reset as INTERNAL, and there is nothing to wait for.
    const started = Date.now();
    const a = await outcome(createNodeTransport({ baseUrl }), "reset-no-error", { timeoutMs: 10_000 });
    expect(a.result).toMatchObject({ code: 13, message: expect.stringMatching(/NO_ERROR.*before the answer began/) });
    expect(Date.now() - started).toBeLessThan(5000);
    const b = await outcome(createNodeTransport({ baseUrl, interceptors: [passThrough] }), "reset-no-error", { timeoutMs: 200 });
    expect(b.result).toMatchObject({ code: 4 });
  });

  it("ends a call whose deadline passes while its connection is still being verified, and survives the late stream", async () => {
    // A proxy that holds every chunk 300 ms: the session manager pings a connection idle for more
    // than pingIntervalMs before using it, so the call's 100 ms deadline passes before its stream exists.
    const proxy = net.createServer((client) => {
      const upstream = net.connect((server.address() as AddressInfo).port, "127.0.0.1");
      const relay = (from: net.Socket, to: net.Socket) => from.on("data", (c) => setTimeout(() => to.destroyed || to.write(c), 300));
      relay(client, upstream);
      relay(upstream, client);
      const end = () => (client.destroy(), upstream.destroy());
      client.on("close", end).on("error", end);
      upstream.on("close", end).on("error", end);
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const transports = () => {
      const sessionManager = new Http2SessionManager(url, { pingIntervalMs: 100 });
      const connect = createGrpcTransport({ baseUrl: url, sessionManager, acceptCompression: [] });
      return { sessionManager, lean: withLeanUnary(connect, { baseUrl: url, sessionManager, readMaxBytes: 0xffffffff }), connect };
    };
    const results = [];
    for (const which of ["lean", "connect"] as const) {
      const t = transports();
      await outcome(t[which], "ok");
      await new Promise((r) => setTimeout(r, 300));
      results.push(await outcome(t[which], "ok", { timeoutMs: 100 }));
      // The stream the session manager hands over late is reset; nothing is thrown at the process.
      await new Promise((r) => setTimeout(r, 1000));
      t.sessionManager.abort();
    }
    await new Promise<void>((r) => proxy.close(() => r()));
    expect(results[0]).toEqual(results[1]);
    expect(results[0]!.result).toMatchObject({ code: 4 });
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
    for (const kase of ["exactly-100", "exactly-101"]) {
      const a = await outcome(createNodeTransport({ baseUrl, readMaxBytes: 100 }), kase);
      const b = await outcome(createNodeTransport({ baseUrl, readMaxBytes: 100, interceptors: [passThrough] }), kase);
      expect(a).toEqual(b);
      expect(a.result).toMatchObject(kase === "exactly-100" ? { ok: { policyHash: "*".repeat(98) } } : { code: 8 });
    }
  });

  it("refuses by default an answer that says it is larger than 64 MiB, before reading it", async () => {
    const a = await outcome(createNodeTransport({ baseUrl }), "claims-64mib-and-1");
    const b = await outcome(createNodeTransport({ baseUrl, interceptors: [passThrough] }), "claims-64mib-and-1");
    expect(a).toEqual(b);
    expect(a.result).toMatchObject({ code: 8, message: expect.stringContaining("67108865") });
  });

  it.each([0, -1, 1.5, 2 ** 32, Number.NaN])("refuses readMaxBytes %s, naming the option", (readMaxBytes) => {
    expect(() => createNodeTransport({ baseUrl, readMaxBytes })).toThrow(expect.objectContaining({ field: "readMaxBytes", message: expect.stringContaining("readMaxBytes") }));
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
