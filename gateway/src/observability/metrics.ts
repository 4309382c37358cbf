// The gateway's Prometheus metrics: one registry per gateway (tests run several in one process)
// holding the operation, store and RPC instruments plus the default process metrics.

import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** Every RPC by method and code (observability/rpc-metrics.ts counts them; the server counts those it refuses before they reach a handler). */
export const RPC_REQUESTS_METRIC = "openshell_gateway_rpc_requests_total";

/** Returns how many operations are PENDING right now (usually a store count). */
export type PendingSource = () => number | Promise<number>;

export interface GatewayMetrics {
  /** Served at `/metrics`. */
  readonly registry: Registry;
  /** Operations that reached a terminal state, by state (`applied`, `failed`, …). */
  readonly updateOperationsTerminal: Counter<"state">;
  /** Operations currently PENDING; read from the source given to `setPendingSource` at scrape time. */
  readonly updateOperationsPending: Gauge;
  /** How long server-side waits (WAIT_FOR_COMPLETION) lasted, whatever ended them. */
  readonly operationWaitSeconds: Histogram;
  /** Store call latency, by operation name. */
  readonly storeOperationSeconds: Histogram<"op">;
  /** RPCs served, by method name and Connect code (`ok`, `not_found`, …). */
  readonly rpcRequests: Counter<"method" | "code">;
  /** Sets where the pending gauge reads its value; until then it reports 0. */
  setPendingSource(source: PendingSource): void;
  /** Sets where the store write counters are read at scrape time. */
  setStoreStatsSource(source: () => { readonly transactions: number; readonly commits: number }): void;
}

/** A fresh registry with every gateway metric registered. */
export function createMetrics(): GatewayMetrics {
  const registry = new Registry();
  let pendingSource: PendingSource | undefined;
  let storeStats: (() => { readonly transactions: number; readonly commits: number }) | undefined;

  const updateOperationsTerminal = new Counter({
    name: "openshell_config_update_operations_terminal_total",
    help: "Configuration update operations that reached a terminal state.",
    labelNames: ["state"] as const,
    registers: [registry],
  });
  const updateOperationsPending = new Gauge({
    name: "openshell_config_update_operations_pending",
    help: "Configuration update operations currently pending.",
    registers: [registry],
    async collect() {
      this.set(pendingSource ? await pendingSource() : 0);
    },
  });
  const operationWaitSeconds = new Histogram({
    name: "openshell_config_update_operation_wait_seconds",
    help: "Duration of server-side waits for an operation's completion.",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
    registers: [registry],
  });
  const storeOperationSeconds = new Histogram({
    name: "openshell_gateway_store_operation_seconds",
    help: "Latency of gateway store operations.",
    labelNames: ["op"] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const rpcRequests = new Counter({
    name: RPC_REQUESTS_METRIC,
    help: "RPCs served by the gateway, by method and result code.",
    labelNames: ["method", "code"] as const,
    registers: [registry],
  });
  // Counters kept by the store itself; a gauge reads them at scrape time (they only grow).
  new Gauge({
    name: "openshell_gateway_store_transactions_total",
    help: "Store write transactions committed since the gateway started.",
    registers: [registry],
    collect() {
      this.set(storeStats?.().transactions ?? 0);
    },
  });
  new Gauge({
    name: "openshell_gateway_store_commits_total",
    help: "Physical database COMMITs since the gateway started (SQLite groups concurrent transactions into one).",
    registers: [registry],
    collect() {
      this.set(storeStats?.().commits ?? 0);
    },
  });
  collectDefaultMetrics({ register: registry });

  return {
    registry,
    updateOperationsTerminal,
    updateOperationsPending,
    operationWaitSeconds,
    storeOperationSeconds,
    rpcRequests,
    setPendingSource(source) {
      pendingSource = source;
    },
    setStoreStatsSource(source) {
      storeStats = source;
    },
  };
}
