// Serves a gateway made in a test the way the gateway command does: its routes, interceptors,
// health and shutdown wired into one server (on a free port unless told otherwise). The test
// harnesses each had this wiring written out.

import type { Logger } from "pino";
import type { Gateway } from "../src/gateway.js";
import type { GatewayMetrics } from "../src/observability/metrics.js";
import { startServer, type RunningServer, type ServerOptions } from "../src/server.js";

export function serveGateway(gateway: Gateway, logger: Logger, metrics: GatewayMetrics, options: Partial<ServerOptions> = {}): Promise<RunningServer> {
  return startServer({
    port: 0,
    routes: gateway.routes,
    interceptors: gateway.interceptors,
    logger,
    metricsRegistry: metrics.registry,
    isHealthy: gateway.isHealthy,
    onShutdown: gateway.shutdown,
    ...options,
  });
}
