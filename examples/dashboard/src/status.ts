// What the dashboard shows for an operation: one view model for both the SDK's OperationStatus
// (updatePolicy, awaitCompletion) and the wire ConfigUpdateOperation of the watch stream, and the
// state badges.

import { timestampDate } from "@bufbuild/protobuf/wkt";
import type { OperationStatus, TargetRevision } from "openshell-config";
import { ConfigApplyOutcome, ConfigUpdateOperationState, SandboxPhase, type ConfigUpdateOperation } from "openshell-config/raw";
import { h } from "./dom.js";

/**
 * A badge's state: an operation state, `degraded` (applied with reduced function), or a local
 * state of the page: `committing` (request sent), `timeout` (the wait ended here, the operation
 * continues), `rejected` (the gateway refused the request), `invalid` (not sent), `error`.
 */
export type BadgeState =
  | "pending"
  | "applied"
  | "degraded"
  | "failed"
  | "superseded"
  | "inactive"
  | "cancelled"
  | "committing"
  | "timeout"
  | "rejected"
  | "invalid"
  | "error";

export interface OperationView {
  readonly operationId: string;
  /** pending, applied, failed, superseded, inactive, cancelled. */
  readonly state: string;
  /** The supervisor's outcome in the SDK's spelling (`failed-retained-last-known-good`, …). */
  readonly outcome: string;
  readonly error: string | undefined;
  /** "policy v4 · settings r2", "provider env 3", or "" before a target is associated. */
  readonly target: string;
  readonly policyVersion: number | undefined;
  readonly createdAt: Date | undefined;
  readonly updatedAt: Date | undefined;
}

const kebab = (name: string | undefined) => (name ?? "unspecified").toLowerCase().replaceAll("_", "-");

function targetText(t: TargetRevision | undefined): string {
  switch (t?.kind) {
    case "sandbox-config":
      return `policy v${t.policyVersion} · settings r${t.settingsRevision}`;
    case "provider-environment":
      return `provider env ${t.providerEnvRevision}`;
    case "provider-target":
      return `provider ${t.providerId}`;
    case "policy-version":
      return `policy v${t.policyVersion}`;
    default:
      return "";
  }
}

/** From the SDK (updatePolicy's onProgress and completion, awaitCompletion). */
export function fromStatus(s: OperationStatus): OperationView {
  return {
    operationId: s.operationId,
    state: s.state,
    outcome: s.outcome,
    error: s.error,
    target: targetText(s.target),
    policyVersion: s.target?.kind === "sandbox-config" || s.target?.kind === "policy-version" ? s.target.policyVersion : undefined,
    createdAt: s.createdAt,
    updatedAt: s.updatedAt,
  };
}

/** From the watch stream (the raw message). */
export function fromWire(op: ConfigUpdateOperation): OperationView {
  const rev = op.targetRevision?.component;
  const target =
    rev?.case === "sandboxConfig"
      ? `policy v${rev.value.policyVersion} · settings r${rev.value.settingsRevision}`
      : rev?.case === "providerEnvironment"
        ? `provider env ${rev.value}`
        : rev?.case === "providerTarget"
          ? `provider ${rev.value.providerId}`
          : "";
  const state = op.state === ConfigUpdateOperationState.UNSPECIFIED ? "pending" : kebab(ConfigUpdateOperationState[op.state]);
  return {
    operationId: op.operationId,
    state,
    outcome: kebab(ConfigApplyOutcome[op.outcome]),
    error: op.sanitizedError === "" ? undefined : op.sanitizedError,
    target,
    policyVersion: rev?.case === "sandboxConfig" ? rev.value.policyVersion : undefined,
    createdAt: op.createdTime ? timestampDate(op.createdTime) : undefined,
    updatedAt: op.updatedTime ? timestampDate(op.updatedTime) : undefined,
  };
}

/** The badge of an operation: its state, except that a degraded application gets its own colour. */
export function badgeStateOf(v: Pick<OperationView, "state" | "outcome">): BadgeState {
  return v.state === "applied" && v.outcome === "degraded" ? "degraded" : (v.state as BadgeState);
}

const LABELS: Partial<Record<BadgeState, string>> = { committing: "sending…", timeout: "still pending" };

export function badge(state: BadgeState, label = LABELS[state] ?? state): HTMLElement {
  return h("span", { class: `badge badge-${state}`, "data-state": state }, label);
}

export function phaseBadge(phase: SandboxPhase): HTMLElement {
  const name = phase === SandboxPhase.UNSPECIFIED ? "unknown" : kebab(SandboxPhase[phase]);
  return h("span", { class: `badge phase-${name}`, "data-phase": name }, name);
}

/** One sentence for a terminal or pending operation. */
export function describe(v: OperationView): string {
  const what = v.policyVersion !== undefined ? `Policy v${v.policyVersion}` : "The change";
  switch (badgeStateOf(v)) {
    case "applied":
      return v.outcome === "ignored-duplicate" ? `${what}: the sandbox already ran an identical configuration.` : `${what} is applied: the sandbox runs it.`;
    case "degraded":
      return `${what} is applied, degraded: the sandbox runs it with reduced function.`;
    case "failed":
      return v.outcome === "failed-closed"
        ? `${what} was rejected and the sandbox now denies traffic (fail closed).`
        : v.outcome === "retained-local-override"
          ? `${what} is stored, but a local policy in the sandbox wins.`
          : v.outcome === "unsupported"
            ? `${what} cannot be applied by this supervisor.`
            : `${what} was rejected by the sandbox; it keeps its previous policy.`;
    case "superseded":
      return `${what} was replaced by a newer revision before it was applied.`;
    case "inactive":
      return `${what} is stored; the sandbox is stopped and applies it when it starts.`;
    case "cancelled":
      return `${what} will never apply: the sandbox is being deleted or is gone.`;
    default:
      return `${what} is committed; waiting for the sandbox…`;
  }
}

export function timeText(d: Date | undefined): string {
  return d === undefined ? "" : d.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}
