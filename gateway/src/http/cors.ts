// CORS for browser dashboards: configured origins may call every protocol (Connect, gRPC-Web) and
// read the status and operation-id headers; requests from any other origin get no CORS headers.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import { cors } from "@connectrpc/connect";

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

/** Request headers a browser may send: the protocols' own plus the bearer token. */
export const CORS_ALLOWED_HEADERS: readonly string[] = [...cors.allowedHeaders, "Authorization"];

/** Response headers a browser script may read. The SDK reads `operation-id` from a DEADLINE_EXCEEDED error. */
export const CORS_EXPOSED_HEADERS: readonly string[] = [
  ...cors.exposedHeaders,
  "Connect-Protocol-Version",
  "Operation-Id",
  // Connect unary sends trailers as `trailer-` prefixed headers.
  "Trailer-Operation-Id",
];

/** Preflight results are cached by browsers for this long (seconds). */
const MAX_AGE_SECONDS = 7200;

/**
 * Returns a function that adds CORS headers to `res` when `req` comes from an allowed origin and
 * answers preflight requests itself (returning true). `"*"` allows every origin.
 */
export function createCors(origins: readonly string[]): (req: Req, res: Res) => boolean {
  const any = origins.includes("*");
  const allowed = new Set(origins.filter((o) => o !== "*").map(normalizeOrigin));
  return (req, res) => {
    const origin = req.headers.origin;
    const isPreflight = req.method === "OPTIONS" && req.headers["access-control-request-method"] !== undefined;
    const ok = typeof origin === "string" && (any || allowed.has(normalizeOrigin(origin)));
    if (ok) {
      res.setHeader("Access-Control-Allow-Origin", origin);
      res.setHeader("Access-Control-Expose-Headers", CORS_EXPOSED_HEADERS.join(", "));
    }
    res.setHeader("Vary", "Origin");
    if (!isPreflight) return false;
    if (ok) {
      res.setHeader("Access-Control-Allow-Methods", cors.allowedMethods.join(", "));
      res.setHeader("Access-Control-Allow-Headers", CORS_ALLOWED_HEADERS.join(", "));
      res.setHeader("Access-Control-Max-Age", String(MAX_AGE_SECONDS));
    }
    res.writeHead(204);
    res.end();
    return true;
  };
}

/** `https://Example.com:443/` → `https://example.com`; unparsable values stay as they are. */
export function normalizeOrigin(origin: string): string {
  try {
    return new URL(origin).origin;
  } catch {
    return origin;
  }
}
