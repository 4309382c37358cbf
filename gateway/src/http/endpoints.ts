// The plain-HTTP endpoints next to the RPCs: `/healthz` for load balancers and orchestrators, and
// `/metrics` for Prometheus. Both answer on HTTP/1.1 and HTTP/2.

import type { IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerRequest, Http2ServerResponse } from "node:http2";
import type { Registry } from "prom-client";
import type { Logger } from "../observability/logger.js";

type Req = IncomingMessage | Http2ServerRequest;
type Res = ServerResponse | Http2ServerResponse;

export interface EndpointOptions {
  readonly metricsRegistry: Registry;
  /** Health of the gateway's dependencies (store). Default: healthy. */
  readonly isHealthy?: () => Promise<boolean>;
  /** True once shutdown began: health turns 503 so load balancers stop routing here. */
  readonly isDraining: () => boolean;
  readonly logger: Logger;
}

/** Returns a handler that serves `/healthz` and `/metrics` and returns false for any other path. */
export function createEndpoints(options: EndpointOptions): (req: Req, res: Res) => boolean {
  return (req, res) => {
    const path = (req.url ?? "").split("?", 1)[0];
    if (path !== "/healthz" && path !== "/metrics") return false;
    if (req.method !== "GET" && req.method !== "HEAD") {
      send(res, 405, "text/plain; charset=utf-8", "method not allowed\n", { Allow: "GET, HEAD" });
      return true;
    }
    const run = path === "/healthz" ? health(options) : metrics(options);
    run.then(
      ({ status, type, body }) => send(res, status, type, req.method === "HEAD" ? "" : body),
      (err: unknown) => {
        options.logger.error({ err, path }, "endpoint failed");
        send(res, 500, "text/plain; charset=utf-8", "internal error\n");
      },
    );
    return true;
  };
}

interface Reply {
  status: number;
  type: string;
  body: string;
}

async function health(options: EndpointOptions): Promise<Reply> {
  const text = (status: number, body: string) => ({ status, type: "text/plain; charset=utf-8", body });
  if (options.isDraining()) return text(503, "shutting down");
  let healthy: boolean;
  try {
    healthy = options.isHealthy ? await options.isHealthy() : true;
  } catch (err) {
    options.logger.warn({ err }, "health check failed");
    healthy = false;
  }
  return healthy ? text(200, "ok") : text(503, "unhealthy");
}

async function metrics(options: EndpointOptions): Promise<Reply> {
  const body = await options.metricsRegistry.metrics();
  return { status: 200, type: options.metricsRegistry.contentType, body };
}

function send(res: Res, status: number, type: string, body: string, extra: Record<string, string> = {}): void {
  if (res.headersSent) return;
  res.writeHead(status, { "Content-Type": type, "Cache-Control": "no-store", ...extra });
  res.end(body);
}
