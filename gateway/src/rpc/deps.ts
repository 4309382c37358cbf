// What every RPC handler needs, wired once by createGateway.

import type { Logger } from "pino";
import type { OperationRecord, SandboxRecord, Store } from "../store/store.js";
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
  /**
   * Tells connected supervisors that desired state changed (one sandbox, or all without an id).
   * `view`: what the commit that changed it left, durable now; the delivery it causes then needs
   * no read of its own.
   */
  readonly publish: (sandboxId?: string, view?: CommittedView) => void;
  /** Snapshots and revisions kept between deliveries (absent: every one is read and built anew). */
  readonly desired?: DesiredCache;
  /**
   * The largest message a supervisor accepts (the session's limit, 3 MiB by default): a commit
   * whose configuration would not fit in a bootstrap is refused (operations/snapshot-cap.ts).
   */
  readonly maxSnapshotBytes?: number;
}

/**
 * A sandbox as a commit of this process left it, once durable: its row and its PENDING
 * operations (oldest first), as the commit's transaction saw them under the sandbox's lock.
 */
export interface CommittedView {
  readonly sandbox: SandboxRecord;
  readonly pending: readonly OperationRecord[];
}
