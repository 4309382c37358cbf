// AsyncQueue: the outgoing message stream of one bidi call. Producers push; the transport pulls
// through next(). It implements return() and throw() (connect-node aborts a call by calling them)
// and always hands out the same iterator, because connect asks for it more than once.

export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = [];
  private readonly waiting: Array<(r: IteratorResult<T, undefined>) => void> = [];
  private closed = false;

  /** Enqueues `item`; returns false (and drops it) once the queue is closed. */
  push(item: T): boolean {
    if (this.closed) return false;
    const waiter = this.waiting.shift();
    if (waiter) waiter({ done: false, value: item });
    else this.items.push(item);
    return true;
  }

  /** Ends the stream after the items already queued (a half-close of the call). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiting.splice(0)) w({ done: true, value: undefined });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Items pushed but not yet pulled. */
  get size(): number {
    return this.items.length;
  }

  next(): Promise<IteratorResult<T, undefined>> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve({ done: false, value: item });
    if (this.closed) return Promise.resolve({ done: true, value: undefined });
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** The consumer stops: pending and future items are discarded. */
  return(): Promise<IteratorResult<T, undefined>> {
    this.items.length = 0;
    this.close();
    return Promise.resolve({ done: true, value: undefined });
  }

  /** The consumer failed: same as return(); the error belongs to the call, not to the queue. */
  throw(_error?: unknown): Promise<IteratorResult<T, undefined>> {
    return this.return();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
