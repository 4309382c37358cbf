// Change notifications for WatchRollouts. Every successful write sends `<workspace>/<id>` on the
// store's "rollouts" channel (PostgreSQL NOTIFY, so every replica hears it; SQLite delivers in
// process). The hub holds one store subscription per gateway, opened with the first watcher and
// closed at shutdown, and fans each message out to this process's watchers. A watcher keeps
// only a set of dirty keys and reads each row when it is about to send it, so a slow client
// costs a set bounded by what it watches, never a queue of messages.

import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { Store, StoreSubscription } from "../store/store.js";
import { parseRolloutKey, rolloutKey } from "./rollout-convert.js";

export const ROLLOUT_CHANNEL = "rollouts";

export interface RolloutChangeListener {
  onChange(workspace: string, id: string): void;
  /** Notifications may have been lost: re-read whatever is watched. */
  onGap(): void;
}

export interface RolloutHub {
  /** Tells every watcher of every replica that a rollout changed. Never throws: the write stands. */
  changed(workspace: string, id: string): Promise<void>;
  /** Adds a listener once the store subscription listens; returns its removal. */
  subscribe(listener: RolloutChangeListener): Promise<() => void>;
  /** Closes the store subscription; later subscribes fail with UNAVAILABLE. */
  close(): Promise<void>;
}

export function createRolloutHub(store: Pick<Store, "notify" | "listen">, logger: Logger): RolloutHub {
  const listeners = new Set<RolloutChangeListener>();
  let subscription: Promise<StoreSubscription> | undefined;
  let closed = false;

  const open = () => {
    subscription ??= store
      .listen(ROLLOUT_CHANNEL, {
        onMessage(message) {
          const key = parseRolloutKey(message);
          if (!key) return;
          for (const l of [...listeners]) l.onChange(key.workspace, key.id);
        },
        onGap() {
          logger.warn({ watchers: listeners.size }, "rollout notifications were interrupted; watchers re-read what they watch");
          for (const l of [...listeners]) l.onGap();
        },
      })
      .catch((err: unknown) => {
        // The next watcher tries again.
        subscription = undefined;
        throw err;
      });
    return subscription;
  };

  return {
    async changed(workspace, id) {
      try {
        await store.notify(ROLLOUT_CHANNEL, [rolloutKey(workspace, id)]);
      } catch (err) {
        logger.warn({ err: (err as Error).message, workspace, rollout: id }, "rollout change notification not sent; watchers see it with the next change");
      }
    },
    async subscribe(listener) {
      if (closed) throw new ConnectError("gateway is shutting down", Code.Unavailable);
      await open();
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close() {
      closed = true;
      listeners.clear();
      const s = subscription;
      subscription = undefined;
      await (await s?.catch(() => undefined))?.close();
    },
  };
}

/**
 * What one watcher still has to send: keys of changed rollouts, or a gap (re-read everything).
 * Wakes the stream when something is marked; ends it on abort (undefined) or failure (thrown).
 */
export function createDirtySet(signal: AbortSignal) {
  let keys = new Set<string>();
  let gap = false;
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  let disposed = false;
  const onAbort = () => wake?.();
  signal.addEventListener("abort", onAbort, { once: true });
  return {
    mark(key: string) {
      if (disposed) return;
      keys.add(key);
      wake?.();
    },
    markGap() {
      gap = true;
      wake?.();
    },
    /** Ends the stream with `err` (gateway shutdown). */
    fail(err: Error) {
      failure = err;
      wake?.();
    },
    /** The next batch: what was marked since the last one. */
    async next(): Promise<{ keys: string[]; gap: boolean } | undefined> {
      for (;;) {
        if (signal.aborted || disposed) return undefined;
        if (failure) throw failure;
        if (keys.size > 0 || gap) break;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
      const batch = { keys: [...keys], gap };
      keys = new Set();
      gap = false;
      return batch;
    },
    /** Stops marking and ends a pending `next` (undefined): the stream was released from outside. */
    dispose() {
      disposed = true;
      signal.removeEventListener("abort", onAbort);
      wake?.();
    },
  };
}
