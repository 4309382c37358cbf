// Bounded concurrency for a rollout's per-sandbox work (sending a wave, reading before-state,
// rolling back): at most `limit` calls in flight, results in input order.

/** Runs `fn` over `items` with at most `limit` at once; results in input order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!, i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}
