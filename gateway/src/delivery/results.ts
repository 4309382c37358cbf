// Supervisor results: validated against what was delivered (upstream's rules), then recorded as
// operation transitions and policy load status. "Last acknowledged" is decided by the caller only
// after this has stored everything.

import { Code, ConnectError } from "@connectrpc/connect";
import {
  ConfigApplyOutcome as Outcome,
  ConfigurationAdmissionState as Admission,
  ConfigUpdateOperationState as State,
  PolicySource,
  PolicyStatus,
  SandboxPhase,
  type ConfigComponentApplyResult,
  type SandboxConfigSnapshot,
  type SandboxConfigurationAdmission,
} from "openshell-config/raw";
import type { ConfigSnapshotRevision } from "openshell-config/raw";
import { stateForOutcome } from "../operations/states.js";
import { resolveLatestInTx } from "../operations/transitions.js";
import type { OperationRecord } from "../store/store.js";
import type { GatewayDeps } from "../rpc/deps.js";
import { enforcementOfResult, keptPolicy, toEnforcementRecord } from "../model/enforcement.js";
import { revisionBytes, sameRevision } from "./revisions.js";
import { targetsRevision } from "./associate.js";

const ACKNOWLEDGING = new Set([Outcome.APPLIED, Outcome.IGNORED_DUPLICATE, Outcome.RETAINED_LOCAL_OVERRIDE, Outcome.DEGRADED]);

export function isAcknowledging(outcome: Outcome): boolean {
  return ACKNOWLEDGING.has(outcome);
}

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/** Upstream §3.10: the result must name the delivered revision and be consistent with what it says is active. */
export function validateResult(result: ConfigComponentApplyResult | undefined, delivered: ConfigSnapshotRevision): ConfigComponentApplyResult {
  if (!result) throw invalid("configuration result is missing");
  if (!result.requestedRevision) throw invalid("configuration result revision missing");
  if (!sameRevision(result.requestedRevision, delivered)) {
    throw invalid("configuration result revision does not match the delivered snapshot");
  }
  const applied = result.appliedRevision;
  let consistent: boolean;
  switch (result.outcome) {
    case Outcome.APPLIED:
    case Outcome.IGNORED_DUPLICATE:
    case Outcome.DEGRADED:
      consistent = sameRevision(applied, delivered);
      break;
    case Outcome.RETAINED_LOCAL_OVERRIDE:
    case Outcome.FAILED_CLOSED:
      consistent = applied === undefined;
      break;
    case Outcome.FAILED_RETAINED_LAST_KNOWN_GOOD:
      consistent = applied !== undefined && !sameRevision(applied, delivered);
      break;
    case Outcome.IGNORED_STALE:
    case Outcome.UNSUPPORTED:
      consistent = true;
      break;
    default:
      consistent = false;
  }
  if (!consistent) throw invalid("configuration result outcome does not match its applied revision");
  return result;
}

/** A retryable generation mismatch means "try again": the operation stays pending. */
export function isStillPending(result: ConfigComponentApplyResult): boolean {
  return result.failure?.retryable === true && result.failure.code === "generation_mismatch";
}

/**
 * A settings change travels in the same sandbox snapshot as the desired policy, so an invalid
 * desired policy fails it too (upstream applies SANDBOX_CONFIG as one component). The error says
 * so and names the policy version, rather than reading like a fault of the setting.
 */
function settingsError(error: string, result: ConfigComponentApplyResult, snapshot: SandboxConfigSnapshot): string {
  if (result.failure?.code !== "invalid_policy") return error;
  const which = snapshot.policySource === PolicySource.GLOBAL ? `global policy v${snapshot.globalPolicyVersion}` : `policy v${snapshot.version}`;
  return `not applied: settings are applied together with the desired policy, and ${which} is invalid: ${error}`;
}

/** Records a validated sandbox-config result: operations of exactly this revision, policy status, readiness. */
export async function recordSandboxResult(
  deps: GatewayDeps,
  sandboxId: string,
  snapshot: SandboxConfigSnapshot,
  delivered: ConfigSnapshotRevision,
  result: ConfigComponentApplyResult,
  admission: SandboxConfigurationAdmission | undefined,
): Promise<void> {
  if (isStillPending(result)) return;
  const rejected = admission?.state === Admission.REJECTED;
  const outcome = result.outcome;
  const state = stateForOutcome(outcome);
  const error =
    result.failure?.message ||
    (rejected && state === State.APPLIED ? "effective configuration could not be activated" : "") ||
    (outcome === Outcome.RETAINED_LOCAL_OVERRIDE ? "an explicit local policy in the sandbox takes precedence" : "");
  const finalState = rejected && state === State.APPLIED ? State.FAILED : state;

  const status =
    finalState === State.APPLIED ? PolicyStatus.LOADED : finalState === State.SUPERSEDED ? PolicyStatus.SUPERSEDED : PolicyStatus.FAILED;
  const owner = snapshot.policySource === PolicySource.GLOBAL ? "" : sandboxId;
  const version = snapshot.policySource === PolicySource.GLOBAL ? snapshot.globalPolicyVersion : snapshot.version;
  const deliveredBytes = revisionBytes(delivered);
  const targets = (op: OperationRecord) => op.target !== undefined && targetsRevision(op.target, delivered, deliveredBytes);
  // Transitions, policy status and readiness commit together: one durable write per result.
  const resolved = await deps.store.transaction(async (tx) => {
    // The sandbox row first: commits lock it before touching operations, so the same order here
    // cannot deadlock with them on PostgreSQL.
    const sb = await tx.sandboxById(sandboxId);
    const resolved: OperationRecord[] = [];
    for (const op of await tx.pendingOperations(sandboxId, undefined)) {
      if (!targets(op)) continue;
      const opError = op.dimension === "settings" ? settingsError(error, result, snapshot) : error;
      const next = await resolveLatestInTx(tx, op, { state: finalState, outcome, error: opError }, targets);
      if (next) resolved.push(next);
    }
    const rev = await tx.policyRevision(owner, version);
    // A revision's status is its first answer, except that a revision which failed and later
    // loaded (a retry, a supervisor restart) is LOADED from then on.
    const loadedLater = rev?.status === PolicyStatus.FAILED && status === PolicyStatus.LOADED;
    if (rev && (rev.status === PolicyStatus.PENDING || loadedLater)) {
      await tx.setPolicyStatus(owner, version, status, status === PolicyStatus.LOADED ? "" : error, status === PolicyStatus.LOADED ? new Date() : undefined);
    }
    // What the sandbox now enforces, whatever became of the operations: a later answer about
    // the same revision (say, failing closed after a restart lost the last known good) counts.
    if (sb) {
      const kept = keptPolicy(result);
      const keptRev = kept && (await tx.policyRevision(kept.source === PolicySource.GLOBAL ? "" : sandboxId, kept.version));
      const enforced = enforcementOfResult(snapshot, delivered, result, error, keptRev ? keptRev.hash : "");
      if (enforced) await tx.putEnforcement(toEnforcementRecord(sandboxId, enforced, new Date()));
    }
    // Readiness follows admission: the workload runs only on an accepted configuration. A
    // rejected bootstrap leaves the sandbox in ERROR with its session open, so a corrected
    // update can still be pushed and make it READY.
    const waiting = sb && [SandboxPhase.PROVISIONING, SandboxPhase.STARTING, SandboxPhase.ERROR].includes(sb.phase);
    if (sb && waiting && admission?.state === Admission.ACCEPTED) {
      await tx.updateSandbox(sandboxId, { phase: SandboxPhase.READY });
    } else if (sb && waiting && admission?.state === Admission.REJECTED && sb.phase !== SandboxPhase.ERROR) {
      await tx.updateSandbox(sandboxId, { phase: SandboxPhase.ERROR });
    }
    return resolved;
  });
  deps.transitions.announce(resolved);
}
