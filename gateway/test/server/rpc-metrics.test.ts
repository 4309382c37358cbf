// RPC counting: every call is counted once by method and result code, streams when they end.

import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { createNodeTransport } from "openshell-config/transport/node";
import { parseAuthFile } from "../../src/auth/auth-file.js";
import { createAuthInterceptor } from "../../src/auth/interceptor.js";
import { codeLabel, createRpcMetricsInterceptor } from "../../src/observability/rpc-metrics.js";
import { createMetrics } from "../../src/observability/metrics.js";
import { createLogger } from "../../src/observability/logger.js";
import { startServer } from "../../src/server.js";
import { openShell, testRoutes } from "./harness.js";

describe("rpc metrics", () => {
  it("counts calls by method and Connect code, including ones the auth interceptor rejects", async () => {
    const metrics = createMetrics();
    const auth = parseAuthFile({ tokens: [{ token: "metrics-token-1234", principal: "alice", role: "admin", workspaces: "*" }] });
    const server = await startServer({
      port: 0,
      routes: testRoutes({ inFlight: 0, maxInFlight: 0, aborted: 0 }),
      interceptors: [createRpcMetricsInterceptor(metrics), createAuthInterceptor(auth)],
      logger: createLogger({ level: "silent" }),
      metricsRegistry: metrics.registry,
    });
    try {
      const client = openShell(createNodeTransport({ baseUrl: server.url }));
      await client.health({});
      await client.health({});
      await client.getGatewayConfig({}).catch(() => undefined);
      await client.getGatewayConfig({}, { headers: { authorization: "Bearer metrics-token-1234" } });
      const text = await metrics.registry.metrics();
      expect(text).toContain('openshell_gateway_rpc_requests_total{method="Health",code="ok"} 2');
      expect(text).toContain('openshell_gateway_rpc_requests_total{method="GetGatewayConfig",code="unauthenticated"} 1');
      expect(text).toContain('openshell_gateway_rpc_requests_total{method="GetGatewayConfig",code="ok"} 1');
    } finally {
      await server.close({ graceMs: 200 });
    }
  });

  it("labels codes in snake case", () => {
    expect(codeLabel(undefined)).toBe("ok");
    expect(codeLabel(Code.DeadlineExceeded)).toBe("deadline_exceeded");
    expect(codeLabel(Code.NotFound)).toBe("not_found");
  });
});
