// The audit trail of refused credentials: each failed authentication is logged (warn) with the
// peer's address, the method and the reason, never the credential itself; and counted. Logging is
// rate-limited, so that a client hammering the gateway with bad tokens cannot flood its log: at
// most `perWindow` lines per window, then one line saying how many were left out.

import { Counter, type Registry } from "prom-client";
import type { Logger } from "../observability/logger.js";

export interface AuthFailure {
  /** The peer's address, `ip` or `ip:port`. */
  readonly peer: string | undefined;
  /** `/package.Service/Method` or an endpoint path. */
  readonly path: string;
  /** The reason the caller was told, e.g. `invalid bearer token`. */
  readonly reason: string;
}

export interface AuthFailureLog {
  record(failure: AuthFailure): void;
  close(): void;
}

export interface AuthFailureLogOptions {
  readonly logger: Logger;
  readonly registry?: Registry;
  /** Lines per window. Default 20. */
  readonly perWindow?: number;
  /** Window length. Default 60 s. */
  readonly windowMs?: number;
}

const METRIC = "openshell_gateway_authentication_failures_total";

export function createAuthFailureLog(options: AuthFailureLogOptions): AuthFailureLog {
  const { logger } = options;
  const perWindow = options.perWindow ?? 20;
  const windowMs = options.windowMs ?? 60_000;
  const counter = options.registry ? failureCounter(options.registry) : undefined;
  let windowStart = -Infinity;
  let logged = 0;
  let suppressed = 0;
  let summary: NodeJS.Timeout | undefined;

  const flush = () => {
    summary = undefined;
    if (suppressed > 0) logger.warn({ suppressed, windowMs }, `${suppressed} more failed authentications were not logged (at most ${perWindow} lines per ${windowMs / 1000} s)`);
    suppressed = 0;
  };

  return {
    record(failure) {
      counter?.inc();
      const now = Date.now();
      if (now - windowStart >= windowMs) {
        windowStart = now;
        logged = 0;
      }
      if (logged < perWindow) {
        logged++;
        logger.warn({ peer: failure.peer, path: failure.path, reason: failure.reason }, "authentication failed");
        return;
      }
      suppressed++;
      // One summary at the end of the window in which lines were left out.
      summary ??= setTimeout(flush, Math.max(0, windowStart + windowMs - now)).unref();
    },
    close() {
      if (summary) clearTimeout(summary);
      flush();
    },
  };
}

/** One counter per registry, however many servers share it. */
function failureCounter(registry: Registry): Counter {
  const existing = registry.getSingleMetric(METRIC);
  if (existing) return existing as Counter;
  return new Counter({ name: METRIC, help: "Requests refused for missing or invalid credentials (before their body was read).", registers: [registry] });
}
