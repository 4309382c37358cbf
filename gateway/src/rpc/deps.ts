// What every RPC handler needs, wired once by createGateway.

import type { Logger } from "pino";
import type { Store } from "../store/store.js";
import type { OperationBus } from "../operations/bus.js";
import type { Transitions } from "../operations/transitions.js";
import type { Waiters } from "../operations/waiters.js";
import type { DesiredCache } from "../delivery/desired-cache.js";

export interface GatewayDeps {
  readonly store: Store;
  readonly bus: OperationBus;
  readonly transitions: Transitions;
  readonly waiters: Waiters;
  readonly logger: Logger;
  /** Observes wait durations (seconds) for metrics. */
  readonly observeWait: (seconds: number) => void;
  /** Longest server-side wait a caller may ask for. */
  readonly waitMaxMs: number;
  /** Wait applied when a caller asks for WAIT_FOR_COMPLETION without a timeout. */
  readonly waitDefaultMs: number;
  /** Tells connected supervisors that desired state changed (one sandbox, or all without an id). */
  readonly publish: (sandboxId?: string) => void;
  /** Snapshots and revisions kept between deliveries (absent: every one is read and built anew). */
  readonly desired?: DesiredCache;
}
