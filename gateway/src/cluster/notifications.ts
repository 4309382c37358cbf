// Sending and receiving replica notifications over the store's channel (LISTEN/NOTIFY on
// PostgreSQL). Outgoing messages are batched: everything sent in one turn of the event loop goes
// out as one statement, after the commits that caused them. Receiving skips this replica's own
// messages. Both are best effort: a failure is logged and the repair paths (the owner's
// reconciliation, the operation sweep, lease renewal) cover what was lost.

import type { Logger } from "pino";
import type { Store, StoreSubscription } from "../store/store.js";
import { decodeMessage, encodeMessage, type ClusterMessage } from "./messages.js";

/** One channel per database (per schema) for every replica. */
export const CLUSTER_CHANNEL = "cluster";
/** Largest batch in one statement. */
const MAX_BATCH = 500;

export interface ClusterNotifier {
  send(message: ClusterMessage): void;
  /** Starts listening; `onGap` runs when messages may have been missed. */
  start(onMessage: (m: ClusterMessage) => void, onGap: () => void): Promise<void>;
  stop(): Promise<void>;
}

export function createClusterNotifier(store: Store, replicaId: string, logger: Logger): ClusterNotifier {
  let outbox: string[] = [];
  let scheduled = false;
  let subscription: StoreSubscription | undefined;
  let stopped = false;

  const flush = () => {
    scheduled = false;
    while (outbox.length > 0) {
      const batch = outbox.splice(0, MAX_BATCH);
      store.notify(CLUSTER_CHANNEL, batch).catch((err: unknown) => {
        logger.warn({ err: (err as Error).message, messages: batch.length }, "replica notification not sent; the repair path will cover it");
      });
    }
  };

  return {
    send(message) {
      if (stopped) return;
      outbox.push(encodeMessage(message));
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    },
    async start(onMessage, onGap) {
      subscription = await store.listen(CLUSTER_CHANNEL, {
        onMessage(text) {
          const m = decodeMessage(text);
          if (m && m.from !== replicaId) onMessage(m);
        },
        onGap() {
          logger.warn("replica notifications were interrupted; re-reading pending work");
          onGap();
        },
      });
    },
    async stop() {
      stopped = true;
      outbox = [];
      await subscription?.close();
    },
  };
}
