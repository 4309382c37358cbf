// A bounded async queue with an end: the outbound side of a supervisor stream. Producers push
// without waiting; the stream drains it. Closing wakes the consumer so the stream can end. A
// consumer that stops taking items (its peer stopped reading) must not let the queue grow: one
// push past `maxItems` closes the queue with RESOURCE_EXHAUSTED instead.

import { Code, ConnectError } from "@connectrpc/connect";

export interface AsyncQueue<T> extends AsyncIterable<T> {
  push(item: T): void;
  /** Ends iteration after the queued items; `error` makes the consumer throw instead. */
  close(error?: unknown): void;
  readonly closed: boolean;
  /** Items pushed and not yet taken by the consumer. */
  waiting(): number;
}

/** Items one queue holds at most unless told otherwise. */
export const DEFAULT_QUEUE_MAX_ITEMS = 64;

export interface AsyncQueueOptions {
  /** Default DEFAULT_QUEUE_MAX_ITEMS. */
  readonly maxItems?: number;
  /** Called once when the queue closes, by `close` or by overflowing. */
  readonly onClose?: (error: unknown) => void;
}

export function createAsyncQueue<T>(options: AsyncQueueOptions = {}): AsyncQueue<T> {
  const maxItems = options.maxItems ?? DEFAULT_QUEUE_MAX_ITEMS;
  const items: T[] = [];
  let wake: (() => void) | undefined;
  let failure: unknown;
  // `closed` is a plain property, not a getter: V8 keeps an object literal with a getter in
  // dictionary mode, slower to read and some hundred bytes larger (one per supervisor session).
  const queue = {
    closed: false,
    waiting: () => items.length,
    push(item: T) {
      if (queue.closed) return;
      if (items.length >= maxItems) {
        // What is queued is dropped: the consumer throws at once instead of draining a backlog.
        items.length = 0;
        queue.close(new ConnectError(`more than ${maxItems} messages are waiting for the peer to read`, Code.ResourceExhausted));
        return;
      }
      items.push(item);
      wake?.();
    },
    close(error?: unknown) {
      if (queue.closed) return;
      queue.closed = true;
      failure = error;
      wake?.();
      options.onClose?.(error);
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (items.length > 0) {
          yield items.shift()!;
          continue;
        }
        if (queue.closed) {
          if (failure !== undefined) throw failure;
          return;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    },
  };
  return queue;
}
