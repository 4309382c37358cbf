// The outgoing messages of one floor stream: producers push, connect-node pulls through next().
// A bidi client's outgoing iterable must implement return() and throw() (connect-node calls them
// to end a call), and hands out the same iterator each time.

export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  private readonly items: T[] = [];
  private readonly waiting: ((r: IteratorResult<T, undefined>) => void)[] = [];
  private closed = false;

  push(item: T): void {
    if (this.closed) return;
    const w = this.waiting.shift();
    if (w) w({ done: false, value: item });
    else this.items.push(item);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiting.splice(0)) w({ done: true, value: undefined });
  }

  next(): Promise<IteratorResult<T, undefined>> {
    if (this.items.length > 0) return Promise.resolve({ done: false, value: this.items.shift()! });
    if (this.closed) return Promise.resolve({ done: true, value: undefined });
    return new Promise((r) => this.waiting.push(r));
  }

  return(): Promise<IteratorResult<T, undefined>> {
    this.items.length = 0;
    this.close();
    return Promise.resolve({ done: true, value: undefined });
  }

  throw(): Promise<IteratorResult<T, undefined>> {
    return this.return();
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
