// The gateway's network front: one cleartext port serving gRPC, gRPC-Web and Connect over HTTP/2
// (prior knowledge) and HTTP/1.1, plus /healthz, /metrics and CORS, with graceful shutdown.

import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import { Code, ConnectError, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, connectNodeAdapter } from "@connectrpc/connect-node";
import type { Registry } from "prom-client";
import { Connections } from "./http/connections.js";
import { createCors } from "./http/cors.js";
import { createEndpoints } from "./http/endpoints.js";
import { sniffProtocol } from "./http/protocol-sniffer.js";
import { createShutdownSignal } from "./http/shutdown-signal.js";
import type { Logger } from "./observability/logger.js";

export interface ServerOptions {
  /** Interface to bind. Default `127.0.0.1`. */
  readonly host?: string;
  /** TCP port; 0 picks a free one. */
  readonly port: number;
  /** Registers the RPC handlers. */
  readonly routes: (router: ConnectRouter) => void;
  readonly interceptors?: Interceptor[];
  /** Browser origins allowed to call the gateway (`"*"` = any). Default none. */
  readonly corsOrigins?: readonly string[];
  readonly logger: Logger;
  /** Served at `/metrics`. */
  readonly metricsRegistry: Registry;
  /** Answers `/healthz`. Default: always healthy. */
  readonly isHealthy?: () => Promise<boolean>;
  /** Runs during `close()` after new connections are refused, before in-flight calls are awaited. */
  readonly onShutdown?: () => Promise<void>;
}

export interface RunningServer {
  /** The bound port (useful with port 0). */
  readonly port: number;
  /** `http://host:port`. */
  readonly url: string;
  /** Graceful shutdown; idempotent. */
  close(options?: { graceMs?: number }): Promise<void>;
}

/** Concurrent streams one HTTP/2 connection may carry. Clients often multiplex every call over one connection. */
export const MAX_CONCURRENT_STREAMS = 10_000;
/** Messages below this size are sent uncompressed (connect-node's default is 1 KiB). */
const COMPRESS_MIN_BYTES = 1024 * 1024;
/** Largest request message accepted. */
const READ_MAX_BYTES = 16 * 1024 * 1024;
/** A connection that sends nothing for this long before its first bytes is dropped. */
const FIRST_BYTES_TIMEOUT_MS = 30_000;
/** After the grace period, handlers are aborted and given this long to answer before sockets are cut. */
const ABORT_SETTLE_MS = 250;

/** Starts listening; resolves once the port is bound. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { logger } = options;
  const host = options.host ?? "127.0.0.1";
  // Every in-flight call listens on this signal (see shutdown-signal.ts for why it is not an AbortController's).
  const shutdownSignal = createShutdownSignal();
  const connections = new Connections();
  let draining = false;

  const rpc = connectNodeAdapter({
    routes: options.routes,
    interceptors: [unavailableOnShutdown(shutdownSignal.signal), ...(options.interceptors ?? [])],
    // Decompress what clients send, but do not spend CPU compressing small configuration messages.
    acceptCompression: [compressionGzip, compressionBrotli],
    compressMinBytes: COMPRESS_MIN_BYTES,
    readMaxBytes: READ_MAX_BYTES,
    shutdownSignal: shutdownSignal.signal,
  });
  const cors = createCors(options.corsOrigins ?? []);
  const endpoints = createEndpoints({
    metricsRegistry: options.metricsRegistry,
    logger,
    isDraining: () => draining,
    ...(options.isHealthy ? { isHealthy: options.isHealthy } : {}),
  });
  const handle = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => {
    if (cors(req, res) || endpoints(req, res)) return;
    rpc(req, res);
  };

  const h2 = http2.createServer({ settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS } }, handle);
  h2.on("session", (session) => connections.addSession(session));
  h2.on("sessionError", (err) => logger.debug({ err }, "http/2 session error"));
  const h1 = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    connections.addHttp1Request(req, res);
    // A request answered before its body was read (refused as too large) leaves the rest of
    // the body on the connection, where the next request would wait behind it forever: such an
    // answer says "Connection: close", and node:http closes the connection after it.
    const writeHead = res.writeHead.bind(res);
    res.writeHead = ((...args: Parameters<typeof res.writeHead>) => {
      if (!req.complete) res.shouldKeepAlive = false;
      return writeHead(...args);
    }) as typeof res.writeHead;
    handle(req, res);
  });
  h1.on("clientError", (err, socket) => {
    logger.debug({ err }, "http/1.1 client error");
    socket.destroy();
  });

  const listener = net.createServer((socket) => {
    connections.addSocket(socket);
    socket.on("error", (err) => logger.debug({ err }, "connection error"));
    sniffProtocol(socket, FIRST_BYTES_TIMEOUT_MS, (protocol) => {
      if (protocol === "h2") {
        connections.addHttp2Socket(socket);
        h2.emit("connection", socket);
      } else {
        connections.addHttp1Socket(socket);
        h1.emit("connection", socket);
        // The sniffer paused the socket; node:http only adds a data listener, which does not undo an explicit pause.
        socket.resume();
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    listener.once("error", reject);
    listener.listen(options.port, host, () => {
      listener.removeListener("error", reject);
      resolve();
    });
  });
  listener.on("error", (err) => logger.error({ err }, "listener error"));
  const port = (listener.address() as net.AddressInfo).port;
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;

  let closing: Promise<void> | undefined;
  const close = async (graceMs: number) => {
    const deadline = Date.now() + graceMs;
    draining = true;
    logger.info({ graceMs, connections: connections.size }, "server shutting down");
    const stoppedListening = new Promise<void>((resolve) => listener.close(() => resolve()));
    connections.drain();
    if (options.onShutdown) {
      try {
        await withTimeout(options.onShutdown(), Math.max(0, deadline - Date.now()));
      } catch (err) {
        logger.error({ err }, "shutdown hook failed");
      }
    }
    const finished = await withTimeout(connections.idle(), Math.max(0, deadline - Date.now())).then(
      () => true,
      () => false,
    );
    if (!finished) {
      logger.warn({ connections: connections.size }, "grace period over: aborting calls still running");
      shutdownSignal.abort(new ConnectError("gateway is shutting down", Code.Unavailable));
      await withTimeout(connections.idle(), ABORT_SETTLE_MS).catch(() => undefined);
      connections.destroyAll();
    }
    h2.close();
    await stoppedListening;
    logger.info("server stopped");
  };

  return {
    port,
    url,
    close(opts = {}) {
      closing ??= close(opts.graceMs ?? 5_000);
      return closing;
    },
  };
}

/**
 * Calls cut short by the end of the grace period fail with the shutdown reason (UNAVAILABLE, so
 * clients retry elsewhere) even when the handler rethrows a plain AbortError.
 */
function unavailableOnShutdown(signal: AbortSignal): Interceptor {
  const translate = (err: unknown): unknown => {
    if (!signal.aborted) return err;
    if (err instanceof ConnectError && err.code !== Code.Canceled && err.code !== Code.Internal) return err;
    return signal.reason;
  };
  return (next) => async (req) => {
    let res;
    try {
      res = await next(req);
    } catch (err) {
      throw translate(err);
    }
    if (!res.stream) return res;
    const source = res.message;
    return {
      ...res,
      message: (async function* () {
        try {
          yield* source;
        } catch (err) {
          throw translate(err);
        }
      })(),
    };
  };
}

/** Resolves like `promise`, or rejects after `ms`. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
