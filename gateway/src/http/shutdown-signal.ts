// The gateway's shutdown signal: connect links every call's signal to it, so every call in flight
// (each supervisor stream included, for as long as it is open) has a listener on it.
//
// Node's AbortSignal keeps its listeners in a list that addEventListener walks to refuse a
// duplicate and removeEventListener walks to find the one to remove. With 10,000 supervisor
// streams open, each call that started or ended walked 10,000 listeners: a profile of 10,000
// sessions re-opening after a restart spent a fifth of the gateway's CPU there. This signal
// keeps its listeners in a Set (constant time both ways) and offers what connect and this
// gateway use of an AbortSignal: `aborted`, `reason`, `throwIfAborted`, and abort listeners
// called once, with the signal as `this`, in the order they were added.

type Listener = ((this: AbortSignal, event: Event) => void) | { handleEvent(event: Event): void };

export interface ShutdownSignal {
  /** Passed where an AbortSignal is expected (connect's `shutdownSignal`, interceptors). */
  readonly signal: AbortSignal;
  /** Aborts the signal once; later calls do nothing. */
  abort(reason: unknown): void;
  /** Listeners waiting for the abort (for tests and metrics). */
  readonly listenerCount: number;
}

export function createShutdownSignal(): ShutdownSignal {
  const listeners = new Set<Listener>();
  let aborted = false;
  let reason: unknown;

  const signal = {
    get aborted() {
      return aborted;
    },
    get reason() {
      return reason;
    },
    onabort: null as ((this: AbortSignal, ev: Event) => unknown) | null,
    throwIfAborted() {
      if (aborted) throw reason;
    },
    addEventListener(type: string, listener: Listener | null) {
      // An abort listener added after the abort is never called, as with an AbortSignal.
      if (type === "abort" && listener && !aborted) listeners.add(listener);
    },
    removeEventListener(type: string, listener: Listener | null) {
      if (type === "abort" && listener) listeners.delete(listener);
    },
    dispatchEvent(): boolean {
      throw new Error("the shutdown signal is aborted through its abort() only");
    },
  } as unknown as AbortSignal;

  return {
    signal,
    get listenerCount() {
      return listeners.size;
    },
    abort(why: unknown) {
      if (aborted) return;
      aborted = true;
      reason = why;
      const event = new Event("abort");
      const called = [...listeners];
      listeners.clear();
      for (const l of called) {
        try {
          if (typeof l === "function") l.call(signal, event);
          else l.handleEvent(event);
        } catch (err) {
          // One failing listener must not keep the others from learning of the shutdown.
          queueMicrotask(() => {
            throw err;
          });
        }
      }
      signal.onabort?.call(signal, event);
    },
  };
}
