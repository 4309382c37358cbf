// Summaries of latency samples: nearest-rank percentiles, rounded for reports.

export interface Summary {
  readonly n: number;
  readonly p50: number;
  readonly p95: number;
  readonly p99: number;
  readonly mean: number;
  readonly min: number;
  readonly max: number;
}

/** The median of `xs`: the middle value, or the mean of the middle two for an even count; NaN for none. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Nearest-rank percentile of sorted `xs`. */
function rank(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))]!;
}

export function summarize(samples: readonly number[]): Summary {
  const xs = [...samples].sort((a, b) => a - b);
  const r = (v: number) => Math.round(v * 100) / 100;
  return {
    n: xs.length,
    p50: r(rank(xs, 50)),
    p95: r(rank(xs, 95)),
    p99: r(rank(xs, 99)),
    mean: r(xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)),
    min: r(xs[0] ?? NaN),
    max: r(xs[xs.length - 1] ?? NaN),
  };
}

export const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;
export const round = (v: number, digits = 1) => Math.round(v * 10 ** digits) / 10 ** digits;

/** Adds the counts of `b` into `a`. */
export function addCounts(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  for (const [k, v] of Object.entries(b)) a[k] = (a[k] ?? 0) + v;
  return a;
}
