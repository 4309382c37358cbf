// The outcome of a configuration update as plain data: a discriminated union on `state`, mapped
// from the gateway's ConfigUpdateOperation. This is the one place that knows the enum numbers.

import {
  ConfigApplyOutcome,
  ConfigComponent,
  ConfigUpdateOperationState,
  type ConfigUpdateOperation,
} from "./gen/openshell/v1/config_pb.js";
import { toDate } from "./convert/timestamp.js";
import { fromSnapshotRevision, type TargetRevision } from "./convert/revision.js";

/** Every state an operation can be in. `pending` is the only non-terminal one. */
export type OperationState = "pending" | "applied" | "failed" | "superseded" | "inactive" | "cancelled";

/** The supervisor's report of what happened to the delivered revision. */
export type ApplyOutcome =
  | "unspecified"
  | "applied"
  | "ignored-duplicate"
  | "ignored-stale"
  | "retained-local-override"
  | "degraded"
  | "failed-retained-last-known-good"
  | "failed-closed"
  | "unsupported";

/** Which part of the sandbox's configuration an operation targets. */
export type ConfigComponentName = "sandbox-config" | "provider-environment" | "unspecified";

/**
 * How completion was observed: `operation` when the gateway tracks a durable operation (the
 * normal case), `policy-status` for a polling-mode gateway that returns no operation; then
 * `operationId` is empty and `target` names the policy version.
 */
export type Tracking = "operation" | "policy-status";

/** Fields every operation status carries. */
export interface OperationBase {
  /** The durable operation's id (UUID). Empty only when `tracking` is `policy-status`. */
  readonly operationId: string;
  /** The sandbox's id (not its name). */
  readonly sandboxId: string;
  /** The configuration component the operation targets. */
  readonly component: ConfigComponentName;
  /** The exact revision the operation waits for; absent until the gateway has associated one. */
  readonly target: TargetRevision | undefined;
  /** The supervisor-reported outcome, kept apart from the state. */
  readonly outcome: ApplyOutcome;
  /** A sanitized, credential-free explanation; absent when the gateway gave none. */
  readonly error: string | undefined;
  /** When the operation was created at the gateway. */
  readonly createdAt: Date | undefined;
  /** When the operation record last changed. */
  readonly updatedAt: Date | undefined;
  /** How completion was observed. */
  readonly tracking: Tracking;
}

/** The operation is still waiting for the supervisor to apply the exact target revision. */
export interface PendingOperation extends OperationBase {
  /** Not yet terminal. */
  readonly state: "pending";
  /** Always `undefined`: the operation has not completed. */
  readonly completedAt: undefined;
}

/** The supervisor runs the target revision. `degraded` means it runs with reduced function. */
export interface AppliedCompletion extends OperationBase {
  /** Discriminant: the target revision was applied. */
  readonly state: "applied";
  readonly outcome: "applied" | "degraded" | "ignored-duplicate";
  /** When the operation reached its terminal state; absent when the gateway did not record it. */
  readonly completedAt: Date | undefined;
}

/** The supervisor could not apply the target revision; `outcome` says what it runs instead. */
export interface FailedCompletion extends OperationBase {
  /** Discriminant: the target revision could not be applied. */
  readonly state: "failed";
  readonly outcome:
    | "retained-local-override"
    | "failed-retained-last-known-good"
    | "failed-closed"
    | "unsupported"
    | "unspecified";
  /** When the operation reached its terminal state; absent when the gateway did not record it. */
  readonly completedAt: Date | undefined;
}

/** A newer desired revision of the same dimension replaced this one before it was applied. */
export interface SupersededCompletion extends OperationBase {
  /** Discriminant: a newer revision replaced this one. */
  readonly state: "superseded";
  /** When the operation reached its terminal state; absent when the gateway did not record it. */
  readonly completedAt: Date | undefined;
}

/** The sandbox is stopped (or its supervisor polls): the change is stored and applies on start. */
export interface InactiveCompletion extends OperationBase {
  /** Discriminant: stored, applies when the sandbox next starts. */
  readonly state: "inactive";
  /** When the operation reached its terminal state; absent when the gateway did not record it. */
  readonly completedAt: Date | undefined;
}

/** The sandbox is being deleted or is gone; the change will never apply. */
export interface CancelledCompletion extends OperationBase {
  /** Discriminant: the change will never apply. */
  readonly state: "cancelled";
  /** When the operation reached its terminal state; absent when the gateway did not record it. */
  readonly completedAt: Date | undefined;
}

/** A terminal outcome. Returned, never thrown: switch on `state`. */
export type Completion =
  | AppliedCompletion
  | FailedCompletion
  | SupersededCompletion
  | InactiveCompletion
  | CancelledCompletion;

/** What `getOperation` returns: a terminal outcome or `pending`. */
export type OperationStatus = Completion | PendingOperation;

/** The wire enum for each SDK state name. Typed as a total record so a new enum value breaks the build. */
export const STATE_NAMES: Readonly<Record<ConfigUpdateOperationState, OperationState | undefined>> = {
  [ConfigUpdateOperationState.UNSPECIFIED]: undefined,
  [ConfigUpdateOperationState.PENDING]: "pending",
  [ConfigUpdateOperationState.APPLIED]: "applied",
  [ConfigUpdateOperationState.INACTIVE]: "inactive",
  [ConfigUpdateOperationState.FAILED]: "failed",
  [ConfigUpdateOperationState.SUPERSEDED]: "superseded",
  [ConfigUpdateOperationState.CANCELLED]: "cancelled",
};

/** The SDK name of each supervisor outcome. */
export const OUTCOME_NAMES: Readonly<Record<ConfigApplyOutcome, ApplyOutcome>> = {
  [ConfigApplyOutcome.UNSPECIFIED]: "unspecified",
  [ConfigApplyOutcome.APPLIED]: "applied",
  [ConfigApplyOutcome.IGNORED_DUPLICATE]: "ignored-duplicate",
  [ConfigApplyOutcome.IGNORED_STALE]: "ignored-stale",
  [ConfigApplyOutcome.RETAINED_LOCAL_OVERRIDE]: "retained-local-override",
  [ConfigApplyOutcome.DEGRADED]: "degraded",
  [ConfigApplyOutcome.FAILED_RETAINED_LAST_KNOWN_GOOD]: "failed-retained-last-known-good",
  [ConfigApplyOutcome.FAILED_CLOSED]: "failed-closed",
  [ConfigApplyOutcome.UNSUPPORTED]: "unsupported",
};

/** The SDK name of each configuration component. */
export const COMPONENT_NAMES: Readonly<Record<ConfigComponent, ConfigComponentName>> = {
  [ConfigComponent.UNSPECIFIED]: "unspecified",
  [ConfigComponent.SANDBOX_CONFIG]: "sandbox-config",
  [ConfigComponent.PROVIDER_ENVIRONMENT]: "provider-environment",
};

const APPLIED_OUTCOMES = new Set<ApplyOutcome>(["applied", "degraded", "ignored-duplicate"]);
const FAILED_OUTCOMES = new Set<ApplyOutcome>([
  "retained-local-override",
  "failed-retained-last-known-good",
  "failed-closed",
  "unsupported",
  "unspecified",
]);

/** True for every state but `pending`. */
export function isTerminal(status: OperationStatus): status is Completion {
  return status.state !== "pending";
}

/**
 * Maps a wire operation to the SDK union. An UNSPECIFIED state (a gateway bug or a newer enum
 * value this version does not know) is reported as `pending`, so a waiter keeps waiting rather
 * than inventing an outcome.
 */
export function fromOperation(op: ConfigUpdateOperation): OperationStatus {
  const state = STATE_NAMES[op.state] ?? "pending";
  let outcome = OUTCOME_NAMES[op.outcome] ?? "unspecified";
  // Upstream stores APPLIED only with these outcomes; an older gateway may leave it unset.
  if (state === "applied" && !APPLIED_OUTCOMES.has(outcome)) outcome = "applied";
  if (state === "failed" && !FAILED_OUTCOMES.has(outcome)) outcome = "unspecified";
  return {
    state,
    outcome,
    operationId: op.operationId,
    sandboxId: op.sandboxId,
    component: COMPONENT_NAMES[op.component] ?? "unspecified",
    target: fromSnapshotRevision(op.targetRevision),
    error: op.sanitizedError === "" ? undefined : op.sanitizedError,
    createdAt: toDate(op.createdTime),
    updatedAt: toDate(op.updatedTime),
    completedAt: state === "pending" ? undefined : toDate(op.completedTime),
    tracking: "operation",
  } as OperationStatus;
}
