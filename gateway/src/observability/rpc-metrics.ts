// A Connect interceptor counting every RPC in `openshell_gateway_rpc_requests_total{method,code}`,
// unary and streaming alike (a stream is counted when it ends, with the code it ended with).

import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import type { GatewayMetrics } from "./metrics.js";

/** `Code.NotFound` → `not_found`; success is `ok`. */
export function codeLabel(code: Code | undefined): string {
  if (code === undefined) return "ok";
  return (Code[code] ?? String(code)).replace(/([a-z])([A-Z])/g, "$1_$2").toLowerCase();
}

/** Counts RPCs by method name and result code. */
export function createRpcMetricsInterceptor(metrics: Pick<GatewayMetrics, "rpcRequests">): Interceptor {
  return (next) => async (req) => {
    const count = (err?: unknown) =>
      metrics.rpcRequests.inc({
        method: req.method.name,
        code: codeLabel(err === undefined ? undefined : ConnectError.from(err).code),
      });
    let res;
    try {
      res = await next(req);
    } catch (err) {
      count(err);
      throw err;
    }
    if (!res.stream) {
      count();
      return res;
    }
    return { ...res, message: countedStream(res.message, count) };
  };
}

async function* countedStream<T>(source: AsyncIterable<T>, count: (err?: unknown) => void): AsyncIterable<T> {
  let counted = false;
  try {
    yield* source;
  } catch (err) {
    counted = true;
    count(err);
    throw err;
  } finally {
    // Ended normally, or the consumer stopped early (the client went away).
    if (!counted) count();
  }
}
