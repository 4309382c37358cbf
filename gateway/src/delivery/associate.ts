// Upstream §3.5: before a snapshot goes out, each pending operation of the sandbox is compared on
// its own dimension (policy version or settings revision). Older than the snapshot: superseded.
// Newer: stays pending for a later snapshot. Equal: it now targets this exact revision, whose
// acknowledgement completes it. Returns whether any operation waits for this revision, and
// whether the snapshot's global part was found behind what is committed (replicas only): then no
// operation is re-targeted to it, and the caller builds the snapshot again.

import { fromBinary } from "@bufbuild/protobuf";
import {
  ConfigApplyOutcome as Outcome,
  ConfigSnapshotRevisionSchema,
  ConfigUpdateOperationState as State,
  type ConfigSnapshotRevision,
  type SandboxConfigSnapshot,
} from "openshell-config/raw";
import type { GatewayDeps } from "../rpc/deps.js";
import type { OperationRecord } from "../store/store.js";
import type { DesiredSnapshot, GlobalVersions } from "./desired-cache.js";
import { resolveLatestInTx } from "../operations/transitions.js";
import { SUPERSEDED_ERROR } from "../operations/states.js";
import { sameRevision } from "./revisions.js";

/** What association would do to one pending operation. */
function plan(op: OperationRecord, snap: SandboxConfigSnapshot, revision: ConfigSnapshotRevision, target: Uint8Array): "later" | "supersede" | "target" | "targeted" {
  const current = op.dimension === "policy" ? BigInt(snap.version) : snap.settingsRevision;
  if (op.desiredRevision > current) return "later";
  if (op.desiredRevision < current) return "supersede";
  return op.target && targetsRevision(op.target, revision, target) ? "targeted" : "target";
}

/**
 * Whether a stored target is `revision` (`encoded` is its encoding): equal bytes settle it
 * without decoding; other bytes may still encode the same revision, so they are compared decoded.
 */
export function targetsRevision(stored: Uint8Array, revision: ConfigSnapshotRevision, encoded: Uint8Array): boolean {
  if (stored.length === encoded.length && Buffer.compare(stored, encoded) === 0) return true;
  return sameRevision(fromBinary(ConfigSnapshotRevisionSchema, stored), revision);
}

/** What association found: whether an operation waits for the snapshot, whether the snapshot is behind. */
export interface Association {
  readonly waiting: boolean;
  /** The committed global versions, when the snapshot was found behind them (replicas only). */
  readonly behind: GlobalVersions | undefined;
}

export async function associate(
  deps: GatewayDeps,
  sandboxId: string,
  desired: Pick<DesiredSnapshot, "snap" | "revision" | "revisionBytes" | "builtOn">,
  /** The sandbox's pending operations as a commit of this process just left them, if known. */
  known?: readonly OperationRecord[],
): Promise<Association> {
  const { snap, revision, revisionBytes: target, builtOn } = desired;
  // Usually every pending operation already targets this revision (or there is none): a plain
  // read (or what the commit left) settles that without a write. Whatever needs a write is read
  // again in its transaction.
  const seen = known ?? (await deps.store.pendingOperations(sandboxId));
  const plans = seen.map((op) => plan(op, snap, revision, target));
  if (plans.every((p) => p === "later" || p === "targeted")) return { waiting: plans.includes("targeted"), behind: undefined };
  // One transaction for every operation of the sandbox: re-targeting them one by one would cost
  // a durable write each.
  const { waiting, behind, changed } = await deps.store.transaction(async (tx) => {
    const changed: OperationRecord[] = [];
    let waiting = false;
    let behind: GlobalVersions | undefined;
    let latest: GlobalVersions | undefined;
    for (const op of await tx.pendingOperations(sandboxId)) {
      const what = plan(op, snap, revision, target);
      if (what === "later") continue;
      if (what === "supersede") {
        const superseded = await resolveLatestInTx(tx, op, { state: State.SUPERSEDED, outcome: Outcome.IGNORED_STALE, error: SUPERSEDED_ERROR });
        if (superseded) changed.push(superseded);
        continue;
      }
      if (what === "target" && builtOn !== undefined) {
        // With replicas the snapshot's global part may be a moment old. An operation committed
        // since may target a newer one: re-targeting it backwards would have it acknowledged
        // against the older global part. One read of the versions, in this rare write path only.
        latest ??= await tx.globalVersions();
        if (latest.policyVersion > builtOn.policyVersion || latest.settingsRevision > builtOn.settingsRevision) {
          behind = latest;
          continue;
        }
      }
      waiting = true;
      if (what === "targeted") continue;
      const updated = await tx.updateOperation(op.id, op.rowVersion, { target });
      // A lost CAS means the operation moved on (resolved or re-associated) meanwhile: nothing to do.
      if (updated) changed.push(updated);
    }
    return { waiting, behind, changed };
  });
  deps.transitions.announce(changed);
  return { waiting, behind };
}
