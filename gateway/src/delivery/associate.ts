// Upstream §3.5: before a snapshot goes out, each pending operation of the sandbox is compared on
// its own dimension (policy version or settings revision). Older than the snapshot: superseded.
// Newer: stays pending for a later snapshot. Equal: it now targets this exact revision, whose
// acknowledgement completes it. Returns whether any operation waits for this revision.

import { fromBinary } from "@bufbuild/protobuf";
import {
  ConfigApplyOutcome as Outcome,
  ConfigSnapshotRevisionSchema,
  ConfigUpdateOperationState as State,
  type ConfigSnapshotRevision,
  type SandboxConfigSnapshot,
} from "openshell-config/raw";
import type { GatewayDeps } from "../rpc/deps.js";
import { SUPERSEDED_ERROR } from "../operations/states.js";
import { revisionBytes, sameRevision } from "./revisions.js";

export async function associate(deps: GatewayDeps, sandboxId: string, snap: SandboxConfigSnapshot, revision: ConfigSnapshotRevision): Promise<boolean> {
  const pending = await deps.store.transaction((tx) => tx.pendingOperations(sandboxId));
  let waiting = false;
  for (const op of pending) {
    const current = op.dimension === "policy" ? BigInt(snap.version) : snap.settingsRevision;
    if (op.desiredRevision > current) continue;
    if (op.desiredRevision < current) {
      await deps.transitions.resolve(op.id, { state: State.SUPERSEDED, outcome: Outcome.IGNORED_STALE, error: SUPERSEDED_ERROR });
      continue;
    }
    waiting = true;
    if (op.target && sameRevision(fromBinary(ConfigSnapshotRevisionSchema, op.target), revision)) continue;
    const updated = await deps.store.transaction((tx) => tx.updateOperation(op.id, op.rowVersion, { target: revisionBytes(revision) }));
    // A lost CAS means the operation moved on (resolved or re-associated) meanwhile: nothing to do.
    if (updated) deps.transitions.announce([updated]);
  }
  return waiting;
}
