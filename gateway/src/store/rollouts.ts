// The shared rollout records (proto/openshell/v1/rollouts.proto) as the store keeps them: one row
// per (workspace, id), written whole by its driver under compare-and-swap on `resourceVersion`.
// The store checks nothing but the CAS token and uniqueness; who may write, leases, approvals and
// the four-eyes rule live in rpc/rollouts.ts. The change is stored once (`request`), never per
// sandbox; `state` is the SDK's rollout@2 JSON without it.

/** An approval of one wave. */
export interface RolloutApprovalRow {
  /** The wave it lets start (0: the first). */
  readonly wave: number;
  readonly principal: string;
  readonly at: Date;
}

/** Who drives a rollout, until when. */
export interface RolloutLeaseRow {
  readonly holder: string;
  readonly principal: string;
  readonly until: Date;
}

export interface RolloutRow {
  readonly workspace: string;
  readonly id: string;
  /** Starts at 1; bumped by every update. */
  readonly resourceVersion: bigint;
  readonly createdBy: string;
  readonly createdAt: Date;
  readonly updatedAt: Date;
  /** "" when the sandboxes were named. */
  readonly labelSelector: string;
  readonly changeHash: string;
  readonly changeSummary: string;
  /** `openshell.v1.RolloutRecordPhase` number: a column of its own, for filtering. */
  readonly phase: number;
  /** `openshell.v1.RolloutSummary` binary. */
  readonly summary: Uint8Array;
  /** In the order they were given. */
  readonly approvals: readonly RolloutApprovalRow[];
  readonly lease: RolloutLeaseRow | undefined;
  readonly requireDistinctApprover: boolean;
  /** `openshell.v1.UpdateConfigRequest` binary. Only in reads with `withBody`, and in inserts. */
  readonly request?: Uint8Array;
  /** The rollout@2 state JSON. Only in reads with `withBody`, and in inserts. */
  readonly state?: string;
}

/** What an update may change; absent fields stay. `lease: null` clears the lease. */
export interface RolloutPatch {
  readonly phase?: number;
  readonly summary?: Uint8Array;
  readonly state?: string;
  readonly approvals?: readonly RolloutApprovalRow[];
  readonly lease?: RolloutLeaseRow | null;
  readonly updatedAt: Date;
}

export interface RolloutListQuery {
  /** Only these workspaces; undefined: every workspace. */
  readonly workspaces: readonly string[] | undefined;
  /** Only these phases; empty: any. */
  readonly phases: readonly number[];
  /** Only this exact label selector; undefined: any. */
  readonly labelSelector: string | undefined;
  readonly pageSize: number;
  /** Opaque; "" for the first page. Keyset: (createdAt, workspace, id) descending. */
  readonly pageToken: string;
}

/** Rollout rows: each call is atomic on its own. */
export interface RolloutStore {
  /** Create-only: throws StoreConflictError when (workspace, id) exists. `row` carries request and state. */
  insertRollout(row: RolloutRow): Promise<void>;
  /** One rollout; with `withBody`, also its request and state. */
  rollout(workspace: string, id: string, withBody: boolean): Promise<RolloutRow | undefined>;
  /** Newest first (createdAt, then workspace and id, descending), without bodies. */
  listRollouts(query: RolloutListQuery): Promise<{ items: RolloutRow[]; nextPageToken: string }>;
  /**
   * Compare-and-set: applies `patch` and bumps `resourceVersion` only when it still equals
   * `expectedVersion`; returns the new row (without body), or undefined when the CAS lost or the
   * row does not exist.
   */
  updateRollout(workspace: string, id: string, expectedVersion: bigint, patch: RolloutPatch): Promise<RolloutRow | undefined>;
}
