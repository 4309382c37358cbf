// Several gateway replicas on one database (PostgreSQL): wires session ownership, replica
// notifications and the repair paths into one gateway. The gateway calls `relayOperation` for
// every operation change it stores and `publish` for every desired-state change; what other
// replicas stored arrives as notifications and is re-read from the database before it wakes
// anyone or is delivered to a supervisor.
//
// Without notifications (`notify: false`, or while they are interrupted) everything still
// completes: the owner's reconciliation finds operations committed elsewhere, the sweep wakes
// waiters here, and lease renewal tells an old owner its sandbox moved.

import type { Logger } from "pino";
import type { SessionRegistry } from "../delivery/registry.js";
import type { OperationBus } from "../operations/bus.js";
import type { OperationRecord, Store } from "../store/store.js";
import type { ClusterMessage } from "./messages.js";
import { createClusterNotifier } from "./notifications.js";
import { createOperationSweep } from "./operation-sweep.js";
import { createPeriodic, type Periodic } from "../operations/periodic.js";
import { createSessionOwnership, type SessionOwnership } from "./ownership.js";

export interface ClusterOptions {
  readonly replicaId: string;
  /** Session lease; renewed every third of it. */
  readonly leaseMs: number;
  /** Use LISTEN/NOTIFY between replicas (the fast path); off leaves only the repair paths. */
  readonly notify: boolean;
}

export interface Cluster {
  readonly replicaId: string;
  readonly ownership: SessionOwnership;
  /** Forwards an operation change stored here to the other replicas. */
  relayOperation(op: OperationRecord): void;
  /** Desired state of one sandbox (or of all, without an id) changed: tell the owner. */
  publish(sandboxId?: string): void;
  /** Connects the bus and the registry built around this cluster. */
  attach(bus: OperationBus, registry: SessionRegistry): void;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export function createCluster(
  store: Store,
  options: ClusterOptions & {
    readonly sweepIntervalMs: number;
    readonly logger: Logger;
    /** Global desired state may have changed elsewhere (a message said so, or messages may have been missed). */
    readonly onGlobalChange?: () => void;
    /**
     * Called every sweep interval: whether the global desired state changed elsewhere unheard
     * (then every session here is delivered to). The repair path of a lost "all" message.
     */
    readonly globalsChanged?: () => Promise<boolean>;
  },
): Cluster {
  const { replicaId, logger } = options;
  const notifier = createClusterNotifier(store, replicaId, logger);
  const send = (m: ClusterMessage) => {
    if (options.notify) notifier.send(m);
  };
  const ownership = createSessionOwnership({
    store,
    replicaId,
    leaseMs: options.leaseMs,
    logger,
    announceClaim: (sandboxId, sessionId) => send({ kind: "claimed", from: replicaId, sandboxId, sessionId }),
  });
  let bus: OperationBus | undefined;
  let registry: SessionRegistry | undefined;
  let sweep: ReturnType<typeof createOperationSweep> | undefined;
  const globalsCheck: Periodic | undefined = options.globalsChanged
    ? createPeriodic(
        async () => {
          if (!(await options.globalsChanged!())) return 0;
          registry?.publish();
          return 1;
        },
        { intervalMs: options.sweepIntervalMs, logger, done: "global configuration changed on another replica unheard; delivering to every session", failed: "global versions not checked; trying again", immediately: false },
      )
    : undefined;

  /** Operation ids to re-read, collected over one turn of the event loop. */
  let toRead = new Set<string>();
  const readChanged = async () => {
    const ids = [...toRead];
    toRead = new Set();
    try {
      for (const op of await store.operationsById(ids)) bus?.deliver(op);
    } catch (err) {
      logger.warn({ err: (err as Error).message }, "operations changed on another replica not re-read; the sweep will");
    }
  };

  const receive = (m: ClusterMessage) => {
    switch (m.kind) {
      case "sandbox":
        registry?.publish(m.sandboxId);
        return;
      case "all":
        // First forget the global part, so the deliveries below read it again.
        options.onGlobalChange?.();
        registry?.publish();
        return;
      case "operation":
        if (!bus?.isWatched(m.operationId, m.sandboxId)) return;
        if (toRead.size === 0) setImmediate(() => void readChanged());
        toRead.add(m.operationId);
        return;
      case "claimed":
        ownership.claimedElsewhere(m.sandboxId, m.sessionId, m.from);
        return;
    }
  };

  return {
    replicaId,
    ownership,
    relayOperation(op) {
      send({ kind: "operation", from: replicaId, operationId: op.id, sandboxId: op.sandboxId });
    },
    publish(sandboxId) {
      if (sandboxId === undefined) return send({ kind: "all", from: replicaId });
      // A session here means this replica is the owner and delivers itself.
      if (registry?.get(sandboxId)) return;
      send({ kind: "sandbox", from: replicaId, sandboxId });
    },
    attach(b, r) {
      bus = b;
      registry = r;
      sweep = createOperationSweep(store, b, options.sweepIntervalMs, logger);
    },
    async start() {
      if (!bus || !registry || !sweep) throw new Error("cluster.attach must be called before start");
      ownership.start();
      sweep.start();
      globalsCheck?.start();
      if (options.notify) {
        const r = registry;
        const s = sweep;
        // After a gap, deliver to every session here (a commit elsewhere may have gone unheard) and wake waiters.
        await notifier.start(receive, () => {
          options.onGlobalChange?.();
          r.publish();
          void s.runOnce().catch(() => undefined);
        });
      }
      logger.info({ replicaId, leaseMs: options.leaseMs, notify: options.notify }, "gateway replica joined; sessions are owned through the database");
    },
    async stop() {
      ownership.stop();
      sweep?.stop();
      globalsCheck?.stop();
      await notifier.stop();
    },
  };
}
