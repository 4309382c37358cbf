// Notification channels inside one process: the Store notify/listen contract for a store that
// only one process uses (SQLite). A message reaches the listeners of the same channel on the
// same store object, asynchronously, as LISTEN/NOTIFY would deliver it after the sender moved on.

import type { StoreListenHandlers, StoreSubscription } from "./store.js";

export interface InProcessChannels {
  notify(channel: string, messages: readonly string[]): Promise<void>;
  listen(channel: string, handlers: StoreListenHandlers): Promise<StoreSubscription>;
}

export function createInProcessChannels(): InProcessChannels {
  const listeners = new Map<string, Set<StoreListenHandlers>>();
  return {
    async notify(channel, messages) {
      const set = listeners.get(channel);
      if (!set || messages.length === 0) return;
      const targets = [...set];
      queueMicrotask(() => {
        for (const m of messages) for (const l of targets) if (set.has(l)) l.onMessage(m);
      });
    },
    async listen(channel, handlers) {
      if (!/^[A-Za-z0-9_]{1,30}$/.test(channel)) throw new Error(`invalid notification channel ${JSON.stringify(channel)}`);
      let set = listeners.get(channel);
      if (!set) listeners.set(channel, (set = new Set()));
      // A distinct object per subscription, so one handler object may listen twice.
      const entry: StoreListenHandlers = { onMessage: (m) => handlers.onMessage(m), onGap: () => handlers.onGap() };
      set.add(entry);
      return {
        async close() {
          set.delete(entry);
          if (set.size === 0 && listeners.get(channel) === set) listeners.delete(channel);
        },
      };
    },
  };
}
