// The gateway's network front: one port serving gRPC, gRPC-Web and Connect over HTTP/2 and
// HTTP/1.1, plus /healthz, /metrics and CORS, with graceful shutdown. Cleartext (HTTP/2 by prior
// knowledge), or TLS with ALPN, optionally requiring client certificates; and optionally a second
// listener that serves supervisors only.

import * as http from "node:http";
import * as http2 from "node:http2";
import * as net from "node:net";
import type { TLSSocket } from "node:tls";
import { Code, ConnectError, createConnectRouter, createContextValues, type ConnectRouter, type Interceptor } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import type { Registry } from "prom-client";
import { admittedKey, frontDoorOf } from "./auth/front-door.js";
import { describePeerCertificate, peerCertificateKey, type PeerCertificate } from "./auth/peer-certificate.js";
import type { Principal } from "./auth/principal.js";
import { withTransportStream } from "./delivery/transport-stream.js";
import { bodyReadLimitKey } from "./rpc/request-body-guard.js";
import { createAdmission } from "./http/admission.js";
import { Connections } from "./http/connections.js";
import { isLoopbackName } from "./http/loopback-host.js";
import { createCors } from "./http/cors.js";
import { createEndpoints } from "./http/endpoints.js";
import { createRpcAdapter } from "./http/rpc-adapter.js";
import { sniffProtocol } from "./http/protocol-sniffer.js";
import { refuseRequest } from "./http/rpc-refusal.js";
import { SANDBOX_LISTENER_PATHS, sandboxListenerRefusal } from "./http/sandbox-listener.js";
import { createShutdownSignal } from "./http/shutdown-signal.js";
import { createTlsAcceptor } from "./http/tls-acceptor.js";
import type { TlsMaterial } from "./http/tls-files.js";
import type { Logger } from "./observability/logger.js";
import { preEncodeResponses } from "./rpc/pre-encode-responses.js";

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
  /**
   * Serve TLS (ALPN h2 and http/1.1) instead of cleartext. With `clientCa`, every request on a
   * connection without a client certificate verified against it is refused UNAUTHENTICATED
   * (except `/healthz`), and the certificate is in the call context (`peerCertificateKey`).
   */
  readonly tls?: TlsMaterial;
  /** A TLS handshake not finished by then drops the connection. Default 10 s. */
  readonly tlsHandshakeTimeoutMs?: number;
  /** With a client CA: a connection without a verified certificate is closed this long after its handshake. Default 10 s. */
  readonly unverifiedLifetimeMs?: number;
  /**
   * A second listener for supervisors (`--sandbox-port`): same interface and TLS certificate, no
   * client certificate asked, and only `paths` (default: the supervisor's methods) and `/healthz`.
   */
  readonly sandboxListener?: { readonly port: number; readonly paths?: readonly string[] };
  /** Serve unary gRPC calls on the lean path below connect (http/grpc-unary.ts). Default true; false is for tests comparing both. */
  readonly fastUnary?: boolean;
}

export interface RunningServer {
  /** The bound port (useful with port 0). */
  readonly port: number;
  /** `http://host:port`, or `https://host:port` with TLS. */
  readonly url: string;
  /** The sandbox listener's port and URL, when there is one. */
  readonly sandboxPort: number | undefined;
  readonly sandboxUrl: string | undefined;
  /** Graceful shutdown; idempotent. */
  close(options?: { graceMs?: number }): Promise<void>;
}

/** Concurrent streams one HTTP/2 connection may carry. Clients often multiplex every call over one connection. */
export const MAX_CONCURRENT_STREAMS = 10_000;
/** Messages below this size are sent uncompressed (connect-node's default is 1 KiB). */
const COMPRESS_MIN_BYTES = 1024 * 1024;
/** Largest request message accepted. */
const READ_MAX_BYTES = 16 * 1024 * 1024;
/**
 * Largest request message of a call without credentials (a method open to all: Health), read
 * before anyone is known. A request that needs credentials and has none is refused before its
 * body is read at all (http/admission.ts).
 */
export const UNAUTHENTICATED_READ_MAX_BYTES = 64 * 1024;
/** A connection that sends nothing for this long before its first bytes is dropped. */
const FIRST_BYTES_TIMEOUT_MS = 30_000;
/** A connection without a verified client certificate is closed this long after its handshake. */
const UNVERIFIED_LIFETIME_MS = 10_000;
/** After the grace period, handlers are aborted and given this long to answer before sockets are cut. */
const ABORT_SETTLE_MS = 250;
/** Default bound on a TLS handshake. */
const TLS_HANDSHAKE_TIMEOUT_MS = 10_000;

/** The message of a request refused because its connection presented no client certificate. */
export const CLIENT_CERTIFICATE_REQUIRED = "client certificate required: this gateway accepts only clients with a certificate from its client CA";
/** Prefix of the message of a request whose connection presented a certificate that failed verification. */
export const CLIENT_CERTIFICATE_REJECTED = "client certificate rejected";

/** Where a TLS socket keeps what its handshake said of the client certificate (read through HTTP/2's socket proxy too). */
const PEER = Symbol("openshell.peerCertificate");
type WithPeer = { [PEER]?: PeerCertificate };

/** Starts listening; resolves once the port is bound. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const { logger } = options;
  const host = options.host ?? "127.0.0.1";
  if (frontDoorOf(options.interceptors ?? [])?.kind === "no-auth" && !isLoopbackName(host)) {
    // Checked by the command line too (config.ts); here for every other way a server starts.
    throw new Error(`a gateway without authentication listens on loopback only; ${JSON.stringify(host)} is not a loopback address`);
  }
  // Every in-flight call listens on this signal (see shutdown-signal.ts for why it is not an AbortController's).
  const shutdownSignal = createShutdownSignal();
  const connections = new Connections();
  let draining = false;

  const requireClientCertificate = options.tls?.clientCa !== undefined;
  // Requests authenticated at the door (before their body was read), and as whom.
  const admitted = new WeakMap<object, { readonly principal: Principal | undefined }>();
  const outer = unavailableOnShutdown(shutdownSignal.signal);
  const adapter = (readMaxBytes: number) =>
    createRpcAdapter({
      routes: options.routes,
      // The response encoder goes first, so outermost: it hands connect its stand-in last. The
      // lean path for unary gRPC calls encodes answers itself (http/grpc-unary.ts).
      interceptors: [preEncodeResponses(), outer, ...(options.interceptors ?? [])],
      fastInterceptors: [outer, ...(options.interceptors ?? [])],
      ...(options.fastUnary === false ? { fastUnary: false } : {}),
      // Decompress what clients send, but do not spend CPU compressing small configuration messages.
      acceptCompression: [compressionGzip, compressionBrotli],
      compressMinBytes: COMPRESS_MIN_BYTES,
      readMaxBytes,
      shutdownSignal: shutdownSignal.signal,
      // Every call gets its HTTP/2 stream, so that a handler can reset a stream whose write is stuck
      // (see delivery/transport-stream.ts); with a client CA, the peer's certificate too; and what
      // the door decided of its credentials.
      contextValues: (req: http.IncomingMessage | http2.Http2ServerRequest) => {
        const values = withTransportStream(createContextValues(), req);
        const admission = admitted.get(req);
        if (admission) values.set(admittedKey, admission);
        if (readMaxBytes < READ_MAX_BYTES) values.set(bodyReadLimitKey, readMaxBytes);
        return requireClientCertificate ? values.set(peerCertificateKey, peerOf(req)) : values;
      },
    });
  const rpcAdapter = adapter(READ_MAX_BYTES);
  const rpcUnauthenticated = adapter(UNAUTHENTICATED_READ_MAX_BYTES);
  const probe = createConnectRouter();
  options.routes(probe);
  const procedures = new Set(probe.handlers.map((h) => h.requestPath));
  const admission = createAdmission({ door: frontDoorOf(options.interceptors ?? []), logger, registry: options.metricsRegistry, procedures, peerOf });
  type AnyReq = http.IncomingMessage | http2.Http2ServerRequest;
  type AnyRes = http.ServerResponse | http2.Http2ServerResponse;
  const rpc = (req: AnyReq, res: AnyRes) =>
    admission.rpc(req, res, pathOf(req), (principal, checked) => {
      if (!checked) return rpcAdapter(req, res);
      admitted.set(req, { principal });
      (principal === undefined ? rpcUnauthenticated : rpcAdapter)(req, res);
    });
  const cors = createCors(options.corsOrigins ?? []);
  const endpoints = createEndpoints({
    metricsRegistry: options.metricsRegistry,
    logger,
    isDraining: () => draining,
    ...(options.isHealthy ? { isHealthy: options.isHealthy } : {}),
  });
  type Handler = (req: http.IncomingMessage | http2.Http2ServerRequest, res: http.ServerResponse | http2.Http2ServerResponse) => void;
  const handleMain: Handler = (req, res) => {
    if (admission.refusedHost(req, res)) return;
    if (cors(req, res)) return;
    if (requireClientCertificate) {
      // Before anything reads the body; /healthz stays open for load balancers and probes.
      const peer = peerOf(req);
      if (peer?.status !== "verified" && pathOf(req) !== "/healthz") {
        const message = peer?.status === "rejected" ? `${CLIENT_CERTIFICATE_REJECTED}: ${peer.reason}` : CLIENT_CERTIFICATE_REQUIRED;
        // HTTP/1.1 ends the connection with this answer; HTTP/2 keeps it for the client's next call
        // to get the same clear answer, until the connection's time is up (UNVERIFIED_LIFETIME_MS).
        if (!("stream" in res)) res.shouldKeepAlive = false;
        refuseRequest(req, res, Code.Unauthenticated, message);
        return;
      }
    }
    if (pathOf(req) === "/metrics") return admission.metrics(req, res, () => endpoints(req, res));
    if (endpoints(req, res)) return;
    rpc(req, res);
  };
  const sandboxPaths = new Set(options.sandboxListener?.paths ?? SANDBOX_LISTENER_PATHS);
  const handleSandbox: Handler = (req, res) => {
    if (admission.refusedHost(req, res)) return;
    const path = pathOf(req);
    if (sandboxPaths.has(path)) rpc(req, res);
    else if (path === "/healthz") endpoints(req, res);
    else if (path.lastIndexOf("/") > 0) refuseRequest(req, res, Code.PermissionDenied, sandboxListenerRefusal(path, [...sandboxPaths]));
    else refuseRequest(req, res, Code.NotFound, `${path} is not served on the sandbox listener`);
  };

  const servers = [createHttpServers(handleMain), ...(options.sandboxListener ? [createHttpServers(handleSandbox)] : [])];
  function createHttpServers(handle: Handler) {
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
    const dispatch = (socket: net.Socket, protocol: "h2" | "http/1.1") => {
      if (protocol === "h2") {
        connections.addHttp2Socket(socket);
        h2.emit("connection", socket);
      } else {
        connections.addHttp1Socket(socket);
        h1.emit("connection", socket);
        // The sniffer paused the socket; node:http only adds a data listener, which does not undo an explicit pause.
        socket.resume();
      }
    };
    return { h2, dispatch };
  }

  // Cleartext: the first bytes tell HTTP/2 from HTTP/1.1. TLS: ALPN does, after the handshake;
  // the first-bytes bound then applies to the TLS connection as it does to a cleartext one.
  const acceptor = (dispatch: (socket: net.Socket, protocol: "h2" | "http/1.1") => void, askClientCertificate: boolean) => {
    if (!options.tls) return (socket: net.Socket) => sniffProtocol(socket, FIRST_BYTES_TIMEOUT_MS, (protocol) => dispatch(socket, protocol));
    return createTlsAcceptor({
      material: options.tls,
      requestClientCertificate: askClientCertificate,
      handshakeTimeoutMs: options.tlsHandshakeTimeoutMs ?? TLS_HANDSHAKE_TIMEOUT_MS,
      logger,
      onSecure: (secure, raw) => {
        connections.addSecureSocket(raw, secure);
        secure.on("error", (err) => logger.debug({ err }, "TLS connection error"));
        if (askClientCertificate) {
          const peer = describePeerCertificate(secure);
          (secure as TLSSocket & WithPeer)[PEER] = peer;
          // A connection without a verified certificate can get nothing but /healthz and refusals:
          // it is closed after a while, busy or not, so that such clients cannot hold thousands
          // of connections open (a timer of its own: the protocol sniffer sets the socket's).
          if (peer.status !== "verified") {
            const timer = setTimeout(() => secure.destroy(), options.unverifiedLifetimeMs ?? UNVERIFIED_LIFETIME_MS);
            secure.once("close", () => clearTimeout(timer));
          }
        }
        // A client that negotiated no ALPN speaks HTTP/1.1 (node's HTTP/2 server refuses it anyway).
        sniffProtocol(secure, FIRST_BYTES_TIMEOUT_MS, () => dispatch(secure, secure.alpnProtocol === "h2" ? "h2" : "http/1.1"));
      },
    });
  };
  const listeners: net.Server[] = [];
  listeners.push(await listen(options.port, acceptor(servers[0]!.dispatch, requireClientCertificate)));
  if (options.sandboxListener) listeners.push(await listen(options.sandboxListener.port, acceptor(servers[1]!.dispatch, false)));
  async function listen(port: number, accept: (socket: net.Socket) => void): Promise<net.Server> {
    const listener = net.createServer((socket) => {
      connections.addSocket(socket);
      socket.on("error", (err) => logger.debug({ err }, "connection error"));
      accept(socket);
    });
    await new Promise<void>((resolve, reject) => {
      listener.once("error", reject);
      listener.listen(port, host, () => {
        listener.removeListener("error", reject);
        resolve();
      });
    }).catch(async (err: unknown) => {
      // The sandbox port is taken: the main listener, already open, closes too.
      await Promise.all(listeners.map((l) => new Promise((r) => l.close(r))));
      throw err;
    });
    listener.on("error", (err) => logger.error({ err }, "listener error"));
    return listener;
  }
  const scheme = options.tls ? "https" : "http";
  const urlOf = (listener: net.Server) => {
    const port = (listener.address() as net.AddressInfo).port;
    return { port, url: `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}` };
  };
  const { port, url } = urlOf(listeners[0]!);
  const sandbox = listeners[1] ? urlOf(listeners[1]) : undefined;

  let closing: Promise<void> | undefined;
  const close = async (graceMs: number) => {
    const deadline = Date.now() + graceMs;
    draining = true;
    logger.info({ graceMs, connections: connections.size }, "server shutting down");
    const stoppedListening = Promise.all(listeners.map((l) => new Promise<void>((resolve) => l.close(() => resolve()))));
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
    for (const { h2 } of servers) h2.close();
    admission.close();
    await stoppedListening;
    logger.info("server stopped");
  };

  return {
    port,
    url,
    sandboxPort: sandbox?.port,
    sandboxUrl: sandbox?.url,
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

/** What the connection's handshake said of the client certificate (undefined: none asked). */
function peerOf(req: http.IncomingMessage | http2.Http2ServerRequest): PeerCertificate | undefined {
  try {
    // For HTTP/2, `req.socket` is a proxy that reads through to the session's TLS socket.
    return (req.socket as unknown as WithPeer)[PEER];
  } catch {
    return undefined; // the HTTP/2 session is already gone
  }
}

function pathOf(req: http.IncomingMessage | http2.Http2ServerRequest): string {
  const url = req.url ?? "";
  const q = url.indexOf("?");
  return q === -1 ? url : url.slice(0, q);
}

/** Resolves like `promise`, or rejects after `ms`. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
