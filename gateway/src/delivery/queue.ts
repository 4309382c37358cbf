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
  let closed = false;
  let failure: unknown;
  return {
    get closed() {
      return closed;
    },
    push(item) {
      if (closed) return;
      items.push(item);
      wake?.();
    },
    close(error) {
      if (closed) return;
      closed = true;
      failure = error;
      wake?.();
    },
    async *[Symbol.asyncIterator]() {
      for (;;) {
        if (items.length > 0) {
          yield items.shift()!;
          continue;
        }
        if (closed) {
          if (failure !== undefined) throw failure;
          return;
        }
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
    },
  };
}
