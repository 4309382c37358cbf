// An unbounded async queue with an end: the outbound side of a supervisor stream. Producers push
// without waiting; the stream drains it. Closing wakes the consumer so the stream can end.

export interface AsyncQueue<T> extends AsyncIterable<T> {
  push(item: T): void;
  /** Ends iteration after the queued items; `error` makes the consumer throw instead. */
  close(error?: unknown): void;
  readonly closed: boolean;
}

export function createAsyncQueue<T>(): AsyncQueue<T> {
  const items: T[] = [];
  let wake: (() => void) | undefined;
  let failure: unknown;
  // `closed` is a plain property, not a getter: V8 keeps an object literal with a getter in
  // dictionary mode, slower to read and some hundred bytes larger (one per supervisor session).
  const queue = {
    closed: false,
    push(item: T) {
      if (queue.closed) return;
      items.push(item);
      wake?.();
    },
    close(error?: unknown) {
      if (queue.closed) return;
      queue.closed = true;
      failure = error;
      wake?.();
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
