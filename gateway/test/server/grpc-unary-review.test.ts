// The lean path for unary gRPC calls (src/http/grpc-unary.ts) against connect, on the edges: one
// server with the lean path and one without, the same test service (Health, whose behaviour each
// test sets), the same raw HTTP/2 requests; the answers and what the handler saw must match.

import { once } from "node:events";
import * as http2 from "node:http2";
import { setTimeout as sleep } from "node:timers/promises";
import { gunzipSync } from "node:zlib";
import { create, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext, type Interceptor } from "@connectrpc/connect";
import { HealthRequestSchema, HealthResponseSchema, OpenShell, ServiceStatus } from "openshell-config/raw";
import { Registry } from "prom-client";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { fastPathCounts } from "../../src/http/grpc-unary.js";
import { createLogger } from "../../src/observability/logger.js";
import { startServer, type RunningServer } from "../../src/server.js";
import { envelope, rawGrpcCall, type RawAnswer, type RawCall } from "./raw-grpc.js";

type Impl = (ctx: HandlerContext) => Promise<{ status?: ServiceStatus; version?: string }>;
let impl: Impl = async () => ({ status: ServiceStatus.HEALTHY });
/** What the handler saw, per server (lean first). */
let seen: Record<string, unknown>[] = [];
let interceptor: Interceptor = (next) => (req) => next(req);

const routes = (router: ConnectRouter) => {
  router.service(OpenShell, { health: (_req, ctx) => impl(ctx) as never });
};

type Answer = RawAnswer;

let fast: RunningServer;
let slow: RunningServer;

async function serve(fastUnary: boolean, more: { routes?: (r: ConnectRouter) => void } = {}): Promise<RunningServer> {
  return startServer({
    port: 0,
    routes: more.routes ?? routes,
    interceptors: [(next) => (req) => interceptor(next)(req)],
    logger: createLogger({ level: "silent" }),
    metricsRegistry: new Registry(),
    fastUnary,
  });
}

beforeAll(async () => {
  fast = await serve(true);
  slow = await serve(false);
});
afterAll(async () => {
  await fast?.close({ graceMs: 200 });
  await slow?.close({ graceMs: 200 });
});
beforeEach(() => {
  impl = async () => ({ status: ServiceStatus.HEALTHY });
  interceptor = (next) => (req) => next(req);
  seen = [];
});

const health = envelope(toBinary(HealthRequestSchema, create(HealthRequestSchema, {})));

type PostOptions = RawCall;
const post = (url: string, body: Buffer, o: PostOptions = {}): Promise<Answer> => rawGrpcCall(url, body, o);

/** The same call to both servers: the answers, lean first; checks the lean path took it. */
async function both(body: Buffer, o: PostOptions = {}): Promise<[Answer, Answer]> {
  const before = fastPathCounts.answered;
  const a = await post(fast.url, body, o);
  const lean = fastPathCounts.answered - before;
  const b = await post(slow.url, body, o);
  return [a, b].map((x) => ({ ...x, lean })) as unknown as [Answer, Answer];
}

describe("the lean path against connect, at the edges", () => {
  it("starts a call's deadline when its headers arrive, as connect does, not when its body has been read", async () => {
    impl = async (ctx) => {
      seen.push({ aborted: ctx.signal.aborted, reason: String(ctx.signal.reason), late: (ctx.timeoutMs() ?? 0) <= 0 });
      return { status: ServiceStatus.HEALTHY };
    };
    await both(health, { headers: { "grpc-timeout": "200m" }, bodyDelayMs: 400 });
    expect(seen).toHaveLength(2);
    expect(seen[1]).toMatchObject({ aborted: true, late: true });
    expect(seen[0]).toEqual(seen[1]);
  });

  it("gives the handler connect's URL (normalized by URL, query and all)", async () => {
    impl = async (ctx) => {
      seen.push({ url: ctx.url });
      return {};
    };
    const [a, b] = await both(health, { path: "/openshell.v1.OpenShell/Health?q=a|b\"c{d}", headers: { ":authority": "LOCALHOST:80" } });
    expect(seen).toHaveLength(2);
    expect(seen[0]).toEqual(seen[1]);
    expect(a).toEqual(b);
  });

  it("answers a handler's plain Error, a ConnectError with metadata and details, and headers and trailers set by handler and interceptor, as connect does", async () => {
    const cases: [string, Impl, Interceptor?][] = [
      [
        "plain error",
        async () => {
          throw new Error("boom");
        },
      ],
      [
        "thrown string",
        async () => {
          // eslint-disable-next-line @typescript-eslint/only-throw-error
          throw "a string";
        },
      ],
      [
        "connect error with metadata and details",
        async () => {
          throw new ConnectError("nope", Code.FailedPrecondition, { "x-meta": "1", "x-bin-bin": "AAEC" }, [{ desc: HealthResponseSchema, value: create(HealthResponseSchema, { version: "detail" }) }]);
        },
      ],
      [
        "headers and trailers",
        async (ctx) => {
          ctx.responseHeader.append("x-h", "1");
          ctx.responseHeader.append("x-h", "2");
          ctx.responseTrailer.set("x-t", "t");
          return { version: "v" };
        },
        (next) => async (req) => {
          const res = await next(req);
          res.header.set("x-i", "i");
          res.trailer.append("x-it", "a");
          res.trailer.append("x-it", "b");
          return res;
        },
      ],
      [
        "header set then thrown",
        async (ctx) => {
          ctx.responseHeader.set("x-before", "1");
          throw new ConnectError("late", Code.Aborted);
        },
      ],
      [
        "interceptor throws",
        async () => ({}),
        () => async () => {
          throw new ConnectError("denied", Code.PermissionDenied, { "www-authenticate": "Bearer" });
        },
      ],
      ["deadline 0", async (ctx) => (ctx.signal.throwIfAborted(), {}), undefined],
    ];
    for (const [what, i, ic] of cases) {
      impl = i;
      if (ic) interceptor = ic;
      const [a, b] = await both(health, what === "deadline 0" ? { headers: { "grpc-timeout": "0m" } } : {});
      expect(a, what).toEqual(b);
      interceptor = (next) => (req) => next(req);
    }
  });

  it("compresses a response of 1 MiB and more for a client that accepts gzip, byte for byte as connect", async () => {
    impl = async () => ({ version: "x".repeat(1024 * 1024 + 10) });
    const [a, b] = await both(health, { headers: { "grpc-accept-encoding": "gzip" } });
    expect(a.headers["grpc-encoding"]).toBe("gzip");
    expect(a.body[0]).toBe(1);
    expect(gunzipSync(a.body.subarray(5)).length).toBeGreaterThan(1024 * 1024);
    expect(a).toEqual(b);
  });

  it("aborts the handler's signal with connect's reason when the client resets right after the body", async () => {
    // The client resets once the handler runs (a reset before it would reach no handler at all).
    let entered = () => {};
    impl = async (ctx) => {
      const reason = await new Promise<unknown>((resolve) => {
        ctx.signal.addEventListener("abort", () => resolve(ctx.signal.reason));
        entered();
      });
      const e = ConnectError.from(reason);
      seen.push({ code: e.code, message: e.message });
      return {};
    };
    await both(health, { resetWhen: () => new Promise<void>((r) => (entered = r)) });
    await expect.poll(() => seen.length).toBe(2);
    expect(seen[0]).toEqual(seen[1]);
    expect(seen[0]).toMatchObject({ code: Code.Canceled });
  });

  it("leaves a service registered with options of its own (other interceptors, no gRPC) to connect", async () => {
    const calls: string[] = [];
    const withOptions = (router: ConnectRouter) => {
      router.service(OpenShell, { health: async () => ({ status: ServiceStatus.HEALTHY }) }, {
        interceptors: [
          (next) => async (req) => {
            calls.push("service interceptor");
            return next(req);
          },
        ],
      });
    };
    const noGrpc = (router: ConnectRouter) => {
      router.service(OpenShell, { health: async () => ({ status: ServiceStatus.HEALTHY }) }, { grpc: false } as never);
    };
    for (const [what, r] of [["interceptors", withOptions], ["grpc: false", noGrpc]] as const) {
      const f = await serve(true, { routes: r });
      const s = await serve(false, { routes: r });
      try {
        calls.length = 0;
        const a = await post(f.url, health);
        const b = await post(s.url, health);
        expect(a, what).toEqual(b);
        if (what === "interceptors") expect(calls).toEqual(["service interceptor", "service interceptor"]);
      } finally {
        await f.close({ graceMs: 100 });
        await s.close({ graceMs: 100 });
      }
    }
  });

  it("ends the handler's signal as connect does when the client resets during a large answer it does not read", async () => {
    let entered = () => {};
    impl = async (ctx) => {
      ctx.signal.addEventListener("abort", () => seen.push({ reason: String(ctx.signal.reason) }));
      entered();
      return { version: "y".repeat(4 * 1024 * 1024) };
    };
    for (const url of [fast.url, slow.url]) {
      const running = new Promise<void>((r) => (entered = r));
      const session = http2.connect(url);
      const req = session.request({ ":method": "POST", ":path": "/openshell.v1.OpenShell/Health", "content-type": "application/grpc", te: "trailers" });
      req.on("error", () => {});
      req.pause();
      req.end(health);
      // Once the handler has run and its answer has begun (its headers go out with the first
      // write), not after a guessed delay.
      await running;
      await once(req, "response");
      req.close(http2.constants.NGHTTP2_CANCEL);
      await sleep(100);
      session.close();
    }
    await expect.poll(() => seen.length).toBe(2);
    expect(seen[0]).toEqual(seen[1]);
  });

  it("reads a multi-MiB body and hands one that holds a second envelope to connect mid-stream", async () => {
    // Health takes no fields: a large unknown field (field 15, bytes) is a valid request.
    const big = (n: number) => {
      const payload = Buffer.alloc(n, 0x61);
      const len: number[] = [];
      for (let v = n; ; v >>>= 7) {
        if (v < 0x80) {
          len.push(v);
          break;
        }
        len.push((v & 0x7f) | 0x80);
      }
      return envelope(Buffer.concat([Buffer.from([0x7a, ...len]), payload]));
    };
    const one = big(10 * 1024 * 1024);
    const [a, b] = await both(one);
    expect(a.trailers["grpc-status"]).toBe("0");
    expect(a).toEqual(b);
    expect((a as unknown as { lean: number }).lean).toBe(1);
    const two = Buffer.concat([big(3 * 1024 * 1024), big(3 * 1024 * 1024)]);
    const [c, d] = await both(two);
    expect(c.trailers["grpc-status"]).not.toBe("0");
    expect(c).toEqual(d);
  }, 30_000);

  it("answers a call waiting in its handler at shutdown as connect does", async () => {
    let entered = () => {};
    impl = async (ctx) => {
      await new Promise((resolve) => {
        ctx.signal.addEventListener("abort", resolve);
        entered();
      });
      seen.push({ code: ConnectError.from(ctx.signal.reason).code });
      throw ctx.signal.reason;
    };
    const answers: Answer[] = [];
    for (const fastUnary of [true, false]) {
      const s = await serve(fastUnary);
      const waiting = new Promise<void>((r) => (entered = r));
      const pending = post(s.url, health);
      // Shut down once the call waits in its handler (not after a guessed delay).
      await waiting;
      await s.close({ graceMs: 100 });
      answers.push(await pending);
    }
    expect(seen).toEqual([{ code: Code.Unavailable }, { code: Code.Unavailable }]);
    expect(answers[0]).toEqual(answers[1]);
  });

  it("keeps no listener on the shutdown signal, the session or the process per call (10,000 calls)", async () => {
    let shutdown: AbortSignal | undefined;
    impl = async (ctx) => {
      shutdown ??= (ctx as unknown as { shutdownSignal: AbortSignal }).shutdownSignal;
      return {};
    };
    const session = http2.connect(fast.url);
    const one = () =>
      new Promise<void>((resolve, reject) => {
        const req = session.request({ ":method": "POST", ":path": "/openshell.v1.OpenShell/Health", "content-type": "application/grpc", te: "trailers", "grpc-timeout": "10S" });
        req.on("error", reject);
        req.on("close", () => resolve());
        req.resume();
        req.end(health);
      });
    try {
      await one();
      let added = 0;
      const add = shutdown!.addEventListener.bind(shutdown);
      const remove = shutdown!.removeEventListener.bind(shutdown);
      shutdown!.addEventListener = ((...args: Parameters<AbortSignal["addEventListener"]>) => {
        added++;
        add(...args);
      }) as AbortSignal["addEventListener"];
      shutdown!.removeEventListener = ((...args: Parameters<AbortSignal["removeEventListener"]>) => {
        added--;
        remove(...args);
      }) as AbortSignal["removeEventListener"];
      const listeners = process.listenerCount("warning") + process.listenerCount("exit");
      const before = fastPathCounts.answered;
      for (let i = 0; i < 100; i++) await Promise.all(Array.from({ length: 100 }, one));
      expect(fastPathCounts.answered - before).toBe(10_000);
      expect(added).toBe(0);
      // Calls handed to connect (two envelopes), and calls reset in the middle of their body.
      const handed = fastPathCounts.handedOver;
      const other = (kind: "two" | "reset") =>
        new Promise<void>((resolve) => {
          const req = session.request({ ":method": "POST", ":path": "/openshell.v1.OpenShell/Health", "content-type": "application/grpc", te: "trailers", "grpc-timeout": "10S" });
          req.on("error", () => {});
          req.on("close", () => resolve());
          req.resume();
          if (kind === "two") req.end(Buffer.concat([health, health]));
          else req.write(Buffer.from([0, 0, 0, 1]), () => setTimeout(() => req.close(http2.constants.NGHTTP2_CANCEL), 5));
        });
      for (let i = 0; i < 10; i++) await Promise.all(Array.from({ length: 50 }, (_, j) => other(j % 2 ? "two" : "reset")));
      // Every two-envelope call goes to connect. A body cut by a reset goes to connect too when
      // the server sees its stream end before it closes, or is dropped when the reset comes first
      // (frames read together): the timing decides which, and either leaves nothing behind.
      const handedNow = fastPathCounts.handedOver - handed;
      expect(handedNow).toBeGreaterThanOrEqual(250);
      expect(handedNow).toBeLessThanOrEqual(500);
      await expect.poll(() => added).toBe(0);
      expect(process.listenerCount("warning") + process.listenerCount("exit")).toBe(listeners);
      // Restore.
      shutdown!.addEventListener = add;
      shutdown!.removeEventListener = remove;
    } finally {
      session.close();
    }
  }, 60_000);
});
