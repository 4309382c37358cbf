// Errors of the shared rollout record: another driver holds a rollout's lease, or the gateway
// keeps no shared rollouts at all (an upstream gateway, or ours with operations off).

import { FailedPreconditionError, RpcError } from "../errors.js";
import type { RolloutLease } from "./shared-rollout.js";

/** Another client drives this rollout: its lease is live. Retry after `lease.expiresAt` to take it over. */
export class RolloutLeaseHeldError extends FailedPreconditionError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "RolloutLeaseHeldError";
  /** The rollout id. */
  readonly rolloutId: string;
  /** Who holds the lease, and until when. */
  readonly lease: RolloutLease;
  constructor(rolloutId: string, lease: RolloutLease, options: { cause?: unknown } = {}) {
    super(
      `rollout "${rolloutId}" is driven by ${lease.holder} (${lease.principal}) until ${lease.expiresAt.toISOString()}; it can be taken over after that`,
      options,
    );
    this.rolloutId = rolloutId;
    this.lease = lease;
  }
}

/** The gateway keeps no shared rollout records (it answered UNIMPLEMENTED): rollouts live in local state only. */
export class SharedRolloutsUnsupportedError extends RpcError {
  /** Stable class name, immune to minifiers; used for `name` and cross-copy `instanceof`. */
  static override readonly errorName: string = "SharedRolloutsUnsupportedError";
  constructor(options: { cause?: unknown } = {}) {
    super("this gateway keeps no shared rollouts (it does not offer the rollout record extension); rollouts live in local state only", options);
  }
}
