// Ending a watch stream that has delivered its answer without cancelling it. An HTTP/2 server
// counts cancelled streams (RST_STREAM) and closes the whole connection after a burst of about a
// thousand, failing every call on it: many waits in a row (a rollout) would otherwise trip it.

// How long a finished watch may take to end by itself before it is cancelled.
const WATCH_DRAIN_MS = 500;

/**
 * Reads what is left of a watch whose operation is terminal, in the background, so that the call
 * ends with the gateway's end of stream (it ends a watch once every watched operation is terminal)
 * rather than with a cancellation. A stream the gateway keeps open is cancelled after
 * WATCH_DRAIN_MS.
 */
export function drainWatch(messages: AsyncIterator<unknown>, call: AbortController): void {
  const timer = setTimeout(() => call.abort(), WATCH_DRAIN_MS);
  (timer as { unref?: () => void }).unref?.();
  void (async () => {
    try {
      while (!(await messages.next()).done) {
        // nothing to do with messages after the outcome
      }
    } catch {
      // cancelled, or the connection went away: the outcome is already known
    } finally {
      clearTimeout(timer);
      call.abort();
    }
  })();
}
