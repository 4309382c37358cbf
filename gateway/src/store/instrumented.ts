// Times every store call for the `openshell_gateway_store_operation_seconds{op}` histogram,
// without the stores knowing about metrics.

import type { Histogram } from "prom-client";
import type { Store } from "./store.js";

export function instrumentStore(store: Store, histogram: Histogram<"op">): Store {
  // One wrapper per method, made on first use (not one closure per call).
  const wrappers = new Map<PropertyKey, { readonly of: unknown; readonly wrapper: unknown }>();
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      const kept = wrappers.get(prop);
      if (kept && kept.of === value) return kept.wrapper;
      // Synchronous or lifecycle calls are passed through untimed.
      const wrapper =
        prop === "close" || prop === "writeStats"
          ? (value as (...a: unknown[]) => unknown).bind(target)
          : async (...args: unknown[]) => {
              const end = histogram.startTimer({ op: String(prop) });
              try {
                return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
              } finally {
                end();
              }
            };
      wrappers.set(prop, { of: value, wrapper });
      return wrapper;
    },
  });
}
