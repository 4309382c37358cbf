// Times every store call for the `openshell_gateway_store_operation_seconds{op}` histogram,
// without the stores knowing about metrics.

import type { Histogram } from "prom-client";
import type { Store } from "./store.js";

export function instrumentStore(store: Store, histogram: Histogram<"op">): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== "function") return value;
      // Synchronous or lifecycle calls are passed through untimed.
      if (prop === "close" || prop === "writeStats") return (value as (...a: unknown[]) => unknown).bind(target);
      return async (...args: unknown[]) => {
        const end = histogram.startTimer({ op: String(prop) });
        try {
          return await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        } finally {
          end();
        }
      };
    },
  });
}
