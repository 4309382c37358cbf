// A repair task run on an interval: one pass at a time, the next one an interval after the
// previous ended (so a slow pass never overlaps itself), a failed pass logged and retried next
// time. The reconciler and the cross-replica operation sweep both run this way.

import type { Logger } from "pino";

export interface Periodic {
  start(): void;
  stop(): void;
}

/**
 * Runs `pass` every `intervalMs` once started (`immediately`: the first pass at once). A pass
 * returning a positive count is logged at debug as `done`; a failure is logged at warn as `failed`.
 */
export function createPeriodic(
  pass: () => Promise<number>,
  o: { readonly intervalMs: number; readonly logger: Logger; readonly done: string; readonly failed: string; readonly immediately: boolean },
): Periodic {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = true;
  const loop = async () => {
    if (stopped) return;
    try {
      const n = await pass();
      if (n > 0) o.logger.debug({ count: n }, o.done);
    } catch (err) {
      o.logger.warn({ err: (err as Error).message }, o.failed);
    }
    if (!stopped) timer = setTimeout(loop, o.intervalMs);
  };
  return {
    start() {
      if (!stopped) return;
      stopped = false;
      if (o.immediately) void loop();
      else timer = setTimeout(loop, o.intervalMs);
    },
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
