// Store work per operation, from two samples of the gateway's /metrics: store calls (the calls on
// the store itself, a transaction counting as one: calls inside it are not timed separately),
// transactions and COMMITs. PostgreSQL queries are counted in the gateway's pg client instead
// (bench/lib/pg-count.mjs).

export interface StoreCounters {
  /** Store calls (every `openshell_gateway_store_operation_seconds_count`) per operation. */
  readonly calls: number;
  readonly transactions: number;
  readonly commits: number;
  /** The calls per operation by store operation, largest first. */
  readonly byCall: Record<string, number>;
}

export function storeCounters(before: Map<string, number>, after: Map<string, number>, operations: number): StoreCounters {
  const d = (k: string) => ((after.get(k) ?? 0) - (before.get(k) ?? 0)) / operations;
  const r = (v: number) => Math.round(v * 100) / 100;
  const byCall: Record<string, number> = {};
  let calls = 0;
  for (const k of after.keys()) {
    if (!k.startsWith("openshell_gateway_store_operation_seconds_count")) continue;
    const v = d(k);
    if (v <= 0) continue;
    calls += v;
    const name = /op="([^"]+)"/.exec(k)?.[1] ?? k;
    byCall[name] = r((byCall[name] ?? 0) + v);
  }
  const transactions = d("openshell_gateway_store_transactions_total");
  return {
    calls: r(calls),
    transactions: r(transactions),
    commits: r(d("openshell_gateway_store_commits_total")),
    byCall: Object.fromEntries(Object.entries(byCall).sort((a, b) => b[1] - a[1])),
  };
}
