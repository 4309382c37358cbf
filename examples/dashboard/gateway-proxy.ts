// The dashboard's proxy to a mutual-TLS gateway (`npm run dashboard -- --mtls`). A browser cannot
// present the gateway's client bundle, so the page calls its own origin and this middleware of the
// Vite dev server forwards each RPC to the gateway over TLS, presenting the bundle's certificate.
//
// That certificate is the platform admin: whoever can make the dev server forward a call acts as
// the admin. So only POSTs to RPC paths are forwarded, a browser call only from the dashboard's
// own origin (a page elsewhere, or another local dev server, is refused before anything is sent),
// and the browser's cookies never travel on. Everything is bounded: calls in flight, request body
// size, the time a client may take to send its body, connecting, and silence on a call. Responses
// are streamed as they arrive, so server-streaming RPCs (the operations watch) flow.

import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import * as https from "node:https";
import type { TLSSocket } from "node:tls";

/** Largest request body forwarded (the gateway's default message limit). */
export const PROXY_MAX_BODY_BYTES = 4 * 1024 * 1024;
/** Calls forwarded at once; more are refused (UNAVAILABLE) rather than queued. */
export const PROXY_MAX_IN_FLIGHT = 256;
/** A client must have sent its whole request body within this long. */
const BODY_TIMEOUT_MS = 30_000;
/** Connecting to the gateway, TLS handshake included. */
const CONNECT_TIMEOUT_MS = 10_000;
/** A call on which nothing moves for this long is cut (a quiet watch then reconnects)... */
const IDLE_TIMEOUT_MS = 5 * 60_000;
/** ...unless the client set a longer deadline (`connect-timeout-ms`), up to the gateway's longest wait. */
const MAX_DEADLINE_MS = 3_600_000 + 5_000;

/** `/package.Service/Method`. */
const RPC_PATH = /^\/[A-Za-z_][\w]*(\.[A-Za-z_]\w*)+\/[A-Za-z_]\w*$/;

// Hop-by-hop (RFC 9110 §7.6.1) and what must not reach the gateway from the browser.
const DROP_REQUEST = new Set(["host", "connection", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade", "cookie", "origin", "referer"]);
const DROP_RESPONSE = new Set(["connection", "keep-alive", "proxy-connection", "trailer", "transfer-encoding", "upgrade", "set-cookie"]);

export interface GatewayProxyOptions {
  /** The gateway, `https://host:port`. */
  readonly target: string;
  /** The client bundle: CA to verify the gateway, certificate and key to present (PEM). */
  readonly tls: { readonly ca: string; readonly cert: string; readonly key: string };
  readonly maxBodyBytes?: number;
  readonly maxInFlight?: number;
  /** Defaults: 30 s to send a request body, 10 s to connect, 5 min of silence on a call. */
  readonly bodyTimeoutMs?: number;
  readonly connectTimeoutMs?: number;
  readonly idleTimeoutMs?: number;
}

export interface GatewayProxy {
  /** A Connect-style middleware: forwards RPCs, passes everything else to `next`. */
  handle(req: IncomingMessage, res: ServerResponse, next: () => void): void;
  /** Drops the pooled connections to the gateway. */
  close(): void;
}

/** Connect's HTTP statuses for the codes this proxy answers with itself. */
const STATUS = { permission_denied: 403, resource_exhausted: 429, unavailable: 503, deadline_exceeded: 504, unimplemented: 501 } as const;
type ProxyCode = keyof typeof STATUS;

class ProxyFailure extends Error {
  constructor(
    readonly code: ProxyCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Answers a call with a Connect error (JSON, as Connect clients read it), once, and closes the
 * connection. A call already answering is cut instead.
 */
function fail(res: ServerResponse, code: ProxyCode, message: string): void {
  if (res.writableEnded || res.destroyed) return;
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify({ code, message: `dashboard proxy: ${message}` });
  res.writeHead(STATUS[code], { "content-type": "application/json", "content-length": Buffer.byteLength(body), connection: "close" });
  res.end(body);
}

/**
 * `fail`, once the rest of the request body has been read and dropped: a client still sending its
 * body when the connection closes sees it reset and never reads the answer. At most `bytes` more
 * are read, within `ms`; beyond either the connection is cut without an answer.
 */
function failAfterBody(req: IncomingMessage, res: ServerResponse, code: ProxyCode, message: string, bytes: number, ms: number): void {
  if (req.readableEnded) return fail(res, code, message);
  req.removeAllListeners("data");
  let dropped = 0;
  const timer = setTimeout(() => req.destroy(), ms);
  req.on("data", (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > bytes) req.destroy();
  });
  req.once("end", () => fail(res, code, message));
  req.once("close", () => clearTimeout(timer));
  req.resume();
}

/** How long a call may be silent: `idle`, or the client's own deadline (plus a margin) when longer, within the gateway's longest wait. */
function silenceBound(req: IncomingMessage, idle: number): number {
  const deadline = Number(req.headers["connect-timeout-ms"]);
  return Number.isFinite(deadline) && deadline > 0 ? Math.max(idle, Math.min(deadline + 5_000, MAX_DEADLINE_MS)) : idle;
}

export function createGatewayProxy(options: GatewayProxyOptions): GatewayProxy {
  const target = new URL(options.target);
  if (target.protocol !== "https:") throw new Error(`the dashboard proxy needs an https:// gateway, not ${options.target}`);
  const maxBody = options.maxBodyBytes ?? PROXY_MAX_BODY_BYTES;
  const maxInFlight = options.maxInFlight ?? PROXY_MAX_IN_FLIGHT;
  const bodyTimeoutMs = options.bodyTimeoutMs ?? BODY_TIMEOUT_MS;
  const connectTimeoutMs = options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
  const idleTimeoutMs = options.idleTimeoutMs ?? IDLE_TIMEOUT_MS;
  // One socket per call in flight at most: the agent never queues behind the in-flight bound.
  const agent = new https.Agent({ ...options.tls, keepAlive: true, maxSockets: maxInFlight, maxFreeSockets: 8 });
  let inFlight = 0;

  function forward(req: IncomingMessage, res: ServerResponse): void {
    inFlight += 1;
    res.once("close", () => (inFlight -= 1));
    const headers: OutgoingHttpHeaders = {};
    const named = String(req.headers.connection ?? "").toLowerCase().split(",").map((s) => s.trim());
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined && !DROP_REQUEST.has(name) && !named.includes(name)) headers[name] = value;
    }
    const silence = silenceBound(req, idleTimeoutMs);
    const upstream = https.request({ agent, protocol: "https:", hostname: target.hostname, port: target.port, method: "POST", path: req.url, headers, timeout: silence });
    let failure: ProxyFailure | undefined;
    const abort = (f: ProxyFailure) => {
      failure ??= f;
      upstream.destroy(f);
    };
    // The body outgrew the bound: the answer waits for the rest of it (failAfterBody).
    let oversized = false;
    upstream.once("socket", (socket) => {
      if (upstream.reusedSocket) return;
      const timer = setTimeout(() => abort(new ProxyFailure("unavailable", `no TLS connection to the gateway at ${target.host} within ${connectTimeoutMs} ms`)), connectTimeoutMs);
      (socket as TLSSocket).once("secureConnect", () => clearTimeout(timer)).once("close", () => clearTimeout(timer));
    });
    upstream.once("timeout", () => abort(new ProxyFailure("deadline_exceeded", `nothing moved on the call for ${silence} ms`)));
    upstream.on("error", (err) => {
      if (oversized) return;
      const f = failure ?? new ProxyFailure("unavailable", `the gateway at ${target.host} could not be reached: ${err.message}`);
      fail(res, f.code, f.message);
    });
    upstream.once("response", (up) => {
      const out: OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(up.headers)) if (value !== undefined && !DROP_RESPONSE.has(name)) out[name] = value;
      res.writeHead(up.statusCode ?? 502, out);
      res.flushHeaders(); // a watch's headers may be all there is for a while
      up.pipe(res);
      up.on("error", () => res.destroy());
      up.once("aborted", () => res.destroy());
    });
    // The browser went away (a closed tab, an aborted watch): so does the call.
    res.once("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });

    let received = 0;
    const bodyTimer = setTimeout(() => {
      abort(new ProxyFailure("deadline_exceeded", `the request body did not arrive within ${bodyTimeoutMs} ms`));
    }, bodyTimeoutMs);
    req.on("data", (chunk: Buffer) => {
      received += chunk.length;
      if (received > maxBody) {
        clearTimeout(bodyTimer);
        oversized = true;
        upstream.destroy();
        return failAfterBody(req, res, "resource_exhausted", `request body larger than ${maxBody} bytes`, 2 * maxBody, bodyTimeoutMs);
      }
      if (!upstream.write(chunk)) {
        req.pause();
        upstream.once("drain", () => req.resume());
      }
    });
    req.once("end", () => {
      clearTimeout(bodyTimer);
      upstream.end();
    });
    req.once("close", () => clearTimeout(bodyTimer));
  }

  return {
    handle(req, res, next) {
      const path = (req.url ?? "").split("?")[0] ?? "";
      if (!RPC_PATH.test(path)) return next();
      const refuse = (code: ProxyCode, message: string) => failAfterBody(req, res, code, message, 2 * maxBody, bodyTimeoutMs);
      if (req.method !== "POST") return refuse("unimplemented", `only POST is forwarded, not ${req.method}`);
      const origin = req.headers.origin;
      // A browser sends Origin with every POST; it must be this page's own (Vite has checked Host),
      // so no other site can drive the gateway through a user's browser. A local program sends
      // what it likes: whoever can connect to this port is the admin, as with --no-auth.
      if (origin !== undefined && origin !== `http://${req.headers.host}`) {
        return refuse("permission_denied", `calls from ${origin} are not forwarded (only from the dashboard's own page)`);
      }
      const declared = Number(req.headers["content-length"]);
      if (declared > maxBody) {
        const message = `request body larger than ${maxBody} bytes`;
        // Far larger: not worth reading to answer politely.
        return declared > 2 * maxBody ? void fail(res, "resource_exhausted", message) : refuse("resource_exhausted", message);
      }
      if (inFlight >= maxInFlight) return refuse("unavailable", `${maxInFlight} calls already in flight; try again`);
      forward(req, res);
    },
    close: () => agent.destroy(),
  };
}
