// createGateway: wires the store, the operation bus, transitions, waiters and every RPC
// handler into Connect routes. The server (server.ts) and the CLI (cli.ts) host what this returns.

import type { ConnectRouter, Interceptor } from "@connectrpc/connect";
import { Code, ConnectError } from "@connectrpc/connect";
import { ConfigUpdateOperationState as State, OpenShell } from "openshell-config/raw";
import type { Logger } from "pino";
import type { Store } from "./store/store.js";
import type { AuthFile } from "./auth/auth-file.js";
import type { GatewayMetrics } from "./observability/metrics.js";
import { createAuthInterceptor, createNoAuthInterceptor } from "./auth/interceptor.js";
import type { OidcVerifier } from "./auth/oidc-verifier.js";
import { createRpcMetricsInterceptor } from "./observability/rpc-metrics.js";
import { instrumentStore } from "./store/instrumented.js";
import { createOperationBus } from "./operations/bus.js";
import { createTransitions, type Transitions } from "./operations/transitions.js";
import { createWaiters } from "./operations/waiters.js";
import { updateConfig, updateConfigUntracked } from "./rpc/config.js";
import { getConfigUpdateOperation, listConfigUpdateOperations, watchConfigUpdateOperations } from "./rpc/operations.js";
import { approveRollout, createRollout, getRollout, listRollouts, updateRollout, type RolloutDeps } from "./rpc/rollouts.js";
import { watchRollouts } from "./rpc/rollout-watch-stream.js";
import { createRolloutHub } from "./rpc/rollout-watch.js";
import { createSandbox, deleteSandbox, getSandbox, listSandboxes, startSandbox, stopSandbox } from "./rpc/sandboxes.js";
import { getSandboxPolicyStatus, listSandboxPolicies } from "./rpc/policies.js";
import { reportPolicyStatus } from "./rpc/report-policy-status.js";
import { getGatewayConfig, getSandboxConfig } from "./rpc/sandbox-config.js";
import { createProvider, updateProvider } from "./rpc/providers.js";
import { health } from "./rpc/health.js";
import { createStoreErrorInterceptor } from "./rpc/store-errors.js";
import { createRequestLimitsInterceptor, DEFAULT_REQUEST_LIMITS, MAX_MESSAGE_BYTES_CEILING, type RequestLimits } from "./rpc/request-limits.js";
import { guardRequestBodies } from "./rpc/request-body-guard.js";
import { strictJsonOptions } from "./rpc/json-text.js";
import { connectSupervisor } from "./rpc/supervisor-session.js";
import { createSessionRegistry, type SessionRegistry } from "./delivery/registry.js";
import type { SessionOptions } from "./delivery/session.js";
import { createReconciler, type Reconciler } from "./operations/reconciler.js";
import type { GatewayDeps } from "./rpc/deps.js";
import { createCluster, type Cluster, type ClusterOptions } from "./cluster/cluster.js";
import { createDesiredCache } from "./delivery/desired-cache.js";
import { DEFAULT_STREAM_BOUNDS } from "./delivery/stream-lifetime.js";
import { createSupervisorStreams, DEFAULT_SUPERVISOR_STREAM_LIMITS, type SupervisorStreamLimits, type SupervisorStreams } from "./delivery/stream-limits.js";

export interface GatewayOptions {
  readonly store: Store;
  readonly logger: Logger;
  readonly metrics: GatewayMetrics;
  /** Bearer tokens and certificate principals; `undefined` runs without authentication (every caller is an admin). */
  readonly auth: AuthFile | undefined;
  /** Validates OIDC (JWT) bearer tokens (`--oidc-issuer`); without it every token is looked up in `auth`. */
  readonly oidc?: OidcVerifier;
  /** Longest server-side wait (default 1 h). */
  readonly waitMaxMs?: number;
  /** Wait when a caller gives none (default 60 s). */
  readonly waitDefaultMs?: number;
  readonly version?: string;
  /**
   * Supervisor delivery bounds; defaults follow upstream (1 min ack, 15 s heartbeat, 45 s bootstrap,
   * 3 MiB), plus 20 s to write a message and 10 s for the hello (DEFAULT_STREAM_BOUNDS).
   */
  readonly session?: Partial<SessionOptions>;
  /** Caps on ConnectSupervisor streams (default DEFAULT_SUPERVISOR_STREAM_LIMITS: 20,000 per gateway, 4 per token, 2 per sandbox). */
  readonly supervisorStreams?: Partial<SupervisorStreamLimits>;
  /** Reconciler period (default 1 s). */
  readonly reconcileIntervalMs?: number;
  /** Request size and per-caller wait limits (default 4 MiB, 1000 waits). */
  readonly limits?: Partial<RequestLimits>;
  /**
   * Run as one of several replicas on one database (PostgreSQL): session ownership with leases,
   * notifications between replicas, reconciliation of owned sandboxes. Absent: the gateway
   * assumes it is alone on its database.
   */
  readonly cluster?: ClusterOptions;
  /**
   * False behaves like an upstream release before durable operations (#3273): UpdateConfig
   * ignores wait_mode, idempotency_key and wait_timeout and returns no operation, and
   * GetConfigUpdateOperation and the operation extensions answer UNIMPLEMENTED. Default true.
   */
  readonly trackOperations?: boolean;
  /** False: the shared rollout record RPCs answer UNIMPLEMENTED (as without operations). Default true. */
  readonly sharedRollouts?: boolean;
}

export interface Gateway {
  readonly routes: (router: ConnectRouter) => void;
  readonly interceptors: Interceptor[];
  /** Startup work: a scan of operations left pending by a previous run. */
  start(): Promise<void>;
  /** Ends waits with UNAVAILABLE; the caller closes the server and then the store. */
  shutdown(): Promise<void>;
  isHealthy(): Promise<boolean>;
  /** Operation transitions, for the supervisor session (and tests standing in for it). */
  readonly transitions: Transitions;
  /** Connected supervisor sessions. */
  readonly sessions: SessionRegistry;
  /** ConnectSupervisor streams open, from their handler's start until they have ended. */
  readonly supervisorStreams: SupervisorStreams;
  readonly reconciler: Reconciler;
  readonly deps: GatewayDeps;
  /** Present when running as one of several replicas. */
  readonly cluster: Cluster | undefined;
}

export function createGateway(options: GatewayOptions): Gateway {
  const { logger, metrics } = options;
  const store = instrumentStore(options.store, metrics.storeOperationSeconds);
  const reconcileIntervalMs = options.reconcileIntervalMs ?? 1_000;
  // Replicas share the database: another replica's global commit reaches this cache by its
  // notification or, that lost (or notifications off), by the periodic check of the versions.
  const desired = createDesiredCache(store, { shared: options.cluster !== undefined });
  const cluster = options.cluster
    ? createCluster(store, { ...options.cluster, sweepIntervalMs: reconcileIntervalMs, logger, onGlobalChange: () => desired.invalidateGlobal(), globalsChanged: () => desired.checkGlobals() })
    : undefined;
  const bus = createOperationBus(cluster?.relayOperation);
  const transitions = createTransitions(store, bus, (op) => {
    metrics.updateOperationsTerminal.inc({ state: State[op.state] ?? String(op.state) });
  });
  const waiters = createWaiters(store, bus);
  const registry = createSessionRegistry(cluster?.ownership);
  cluster?.attach(bus, registry);
  const sessionOptions: SessionOptions = {
    ackTimeoutMs: 60_000,
    heartbeatMs: 15_000,
    bootstrapTimeoutMs: 45_000,
    maxMessageBytes: 3 * 1024 * 1024,
    ...DEFAULT_STREAM_BOUNDS,
    ...options.session,
  };
  const supervisorStreams = createSupervisorStreams({ ...DEFAULT_SUPERVISOR_STREAM_LIMITS, ...options.supervisorStreams }, metrics.registry);
  metrics.setPendingSource(() => store.countPending());
  metrics.setStoreStatsSource(() => options.store.writeStats());
  const deps: GatewayDeps = {
    store,
    bus,
    transitions,
    waiters,
    logger,
    observeWait: (s) => metrics.operationWaitSeconds.observe(s),
    waitMaxMs: options.waitMaxMs ?? 3_600_000,
    waitDefaultMs: options.waitDefaultMs ?? 60_000,
    publish: (sandboxId, view) => {
      registry.publish(sandboxId, view);
      cluster?.publish(sandboxId);
    },
    desired,
    // What a supervisor accepts is what a commit may leave (operations/snapshot-cap.ts).
    maxSnapshotBytes: sessionOptions.maxMessageBytes,
  };
  const reconciler = createReconciler(store, registry, logger, {
    intervalMs: reconcileIntervalMs,
    ...(cluster ? { ownedBy: cluster.replicaId } : {}),
  });
  // One store subscription for every rollout watcher of this process, opened with the first.
  const rolloutDeps: RolloutDeps = { store, logger, waiters, hub: createRolloutHub(store, logger) };
  const unimplemented = (what: string) => () => {
    throw new ConnectError(`${what} is not supported by this gateway`, Code.Unimplemented);
  };

  const routes = (router: ConnectRouter) => {
    router.service(OpenShell, {
      health: () => health(deps, options.version ?? "dev"),
      createSandbox: (req, ctx) => createSandbox(deps, req, ctx),
      getSandbox: (req, ctx) => getSandbox(deps, req, ctx),
      listSandboxes: (req, ctx) => listSandboxes(deps, req, ctx),
      stopSandbox: (req, ctx) => stopSandbox(deps, req, ctx),
      startSandbox: (req, ctx) => startSandbox(deps, req, ctx),
      deleteSandbox: (req, ctx) => deleteSandbox(deps, req, ctx),
      ...(options.trackOperations === false || options.sharedRollouts === false
        ? {
            createRollout: unimplemented("CreateRollout"),
            getRollout: unimplemented("GetRollout"),
            listRollouts: unimplemented("ListRollouts"),
            watchRollouts: unimplemented("WatchRollouts"),
            updateRollout: unimplemented("UpdateRollout"),
            approveRollout: unimplemented("ApproveRollout"),
          }
        : {
            // The shared rollout record (rollouts.proto), an extension of the same generation.
            createRollout: (req, ctx) => createRollout(rolloutDeps, req, ctx),
            getRollout: (req, ctx) => getRollout(rolloutDeps, req, ctx),
            listRollouts: (req, ctx) => listRollouts(rolloutDeps, req, ctx),
            watchRollouts: (req, ctx) => watchRollouts(rolloutDeps, req, ctx),
            updateRollout: (req, ctx) => updateRollout(rolloutDeps, req, ctx),
            approveRollout: (req, ctx) => approveRollout(rolloutDeps, req, ctx),
          }),
      ...(options.trackOperations === false
        ? {
            // Like an upstream release before #3273: commits without operations, and no operation RPCs.
            updateConfig: (req, ctx) => updateConfigUntracked(deps, req, ctx),
            getConfigUpdateOperation: unimplemented("GetConfigUpdateOperation"),
            watchConfigUpdateOperations: unimplemented("WatchConfigUpdateOperations"),
            listConfigUpdateOperations: unimplemented("ListConfigUpdateOperations"),
          }
        : {
            updateConfig: (req, ctx) => updateConfig(deps, req, ctx),
            getConfigUpdateOperation: (req, ctx) => getConfigUpdateOperation(deps, req, ctx),
            watchConfigUpdateOperations: (req, ctx) => watchConfigUpdateOperations(deps, req, ctx),
            listConfigUpdateOperations: (req, ctx) => listConfigUpdateOperations(deps, req, ctx),
          }),
      getSandboxConfig: (req, ctx) => getSandboxConfig(deps, req, ctx),
      getGatewayConfig: (_req, ctx) => getGatewayConfig(deps, ctx),
      getSandboxPolicyStatus: (req, ctx) => getSandboxPolicyStatus(deps, req, ctx),
      listSandboxPolicies: (req, ctx) => listSandboxPolicies(deps, req, ctx),
      createProvider: (req, ctx) => createProvider(deps, req, ctx),
      updateProvider: (req, ctx) => updateProvider(deps, req, ctx),
      reportPolicyStatus: (req, ctx) => reportPolicyStatus(deps, req, ctx),
      connectSupervisor: (requests, ctx) =>
        connectSupervisor(deps, { registry, streams: supervisorStreams, options: sessionOptions }, requests, ctx),
    }, { jsonOptions: strictJsonOptions });
    // Binary messages are checked before protobuf-es decodes them (text that is not UTF-8, nesting).
    guardRequestBodies(router, MAX_MESSAGE_BYTES_CEILING);
  };

  if (!options.auth) logger.warn("authentication is DISABLED: every caller is treated as an admin of every workspace");
  const interceptors = [
    createRpcMetricsInterceptor(metrics),
    createStoreErrorInterceptor(logger),
    options.auth
      ? createAuthInterceptor(options.auth, { unauthenticatedMethods: ["Health"], ...(options.oidc ? { oidc: options.oidc } : {}) })
      : createNoAuthInterceptor(),
    // After authentication: the wait limit is per principal.
    createRequestLimitsInterceptor({ ...DEFAULT_REQUEST_LIMITS, ...options.limits }),
  ];

  return {
    routes,
    interceptors,
    transitions,
    deps,
    sessions: registry,
    supervisorStreams,
    reconciler,
    cluster,
    async start() {
      const pending = await store.countPending();
      await cluster?.start();
      logger.info({ pending, store: store.kind, replicaId: cluster?.replicaId }, "store open; its pending operations resume once the gateway listens");
      reconciler.start();
    },
    async shutdown() {
      reconciler.stop();
      await cluster?.stop();
      // Rollout watches end with UNAVAILABLE through waiters.onShutdown, then their subscription closes.
      waiters.shutdown();
      await rolloutDeps.hub.close();
      registry.closeAll(new ConnectError("gateway is shutting down", Code.Unavailable));
    },
    async isHealthy() {
      try {
        await store.countPending();
        return true;
      } catch {
        return false;
      }
    },
  };
}
