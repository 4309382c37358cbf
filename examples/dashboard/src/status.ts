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
  /** The sandbox settings revision of the target, when it is a sandbox configuration. */
  readonly settingsRevision: bigint | undefined;
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
    settingsRevision: s.target?.kind === "sandbox-config" ? s.target.settingsRevision : undefined,
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
    settingsRevision: rev?.case === "sandboxConfig" ? rev.value.settingsRevision : undefined,
    createdAt: op.createdTime ? timestampDate(op.createdTime) : undefined,
    updatedAt: op.updatedTime ? timestampDate(op.updatedTime) : undefined,
  };
}

/** The badge of an operation: its state, except that a degraded application gets its own colour. */
export function badgeStateOf(v: Pick<OperationView, "state" | "outcome">): BadgeState {
  return v.state === "applied" && v.outcome === "degraded" ? "degraded" : (v.state as BadgeState);
}

const LABELS: Partial<Record<BadgeState, string>> = { committing: "sending…", timeout: "still pending", rejected: "refused" };

export function badge(state: BadgeState, label = LABELS[state] ?? state): HTMLElement {
  return h("span", { class: `badge badge-${state}`, "data-state": state }, label);
}

export function phaseBadge(phase: SandboxPhase): HTMLElement {
  const name = phase === SandboxPhase.UNSPECIFIED ? "unknown" : kebab(SandboxPhase[phase]);
  return h("span", { class: `badge phase-${name}`, "data-phase": name }, name);
}

/** One sentence for a terminal or pending operation. */
/**
 * `change`: what the operation changed ("policy v3", "setting log_level"); without it the
 * sentence says "The change", as the wire record does not say whether a policy or a setting.
 */
export function describe(v: OperationView, change?: string): string {
  const what = change === undefined ? "The change" : change.charAt(0).toUpperCase() + change.slice(1);
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
            : `${what} was rejected by the sandbox; it keeps its previous configuration.`;
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

/** "Dec 1, 09:16:37": the date and the time, short enough for a table cell. */
export function timeText(d: Date | undefined): string {
  return d === undefined ? "" : d.toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" });
}

/** The full date and time with its zone, for a tooltip. */
export function fullTime(d: Date | undefined): string | undefined {
  return d === undefined ? undefined : d.toLocaleString(undefined, { dateStyle: "full", timeStyle: "long" });
}

/** A `<time>` element: the short date and time, the full one in its tooltip. */
export function timeEl(d: Date | undefined): HTMLElement | string {
  return d === undefined ? "" : h("time", { datetime: d.toISOString(), title: fullTime(d) }, timeText(d));
}

/** "1 sandbox", "2 sandboxes", "1 error", "3 errors". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** What an operation changed, as far as the page can tell: "policy v3", "setting log_level". */
export interface OperationLabel {
  readonly kind: "policy" | "setting" | "unknown";
  readonly label: string;
  readonly title?: string;
}

/** What the page knows beyond the wire record, which names neither the dimension nor the key. */
export interface OperationKnowledge {
  /** Operations this page committed (all policy changes), by id: the committed policy version. */
  readonly sentPolicies: ReadonlyMap<string, number>;
  /** Setting keys seen changing to a settings revision (from two reads of the sandbox's config). */
  readonly settingKeys: ReadonlyMap<bigint, readonly string[]>;
}

/**
 * Labels a sandbox's operations with what they changed. The wire record has only the target
 * revision, so the kind is read from it: an operation whose policy version differs from the
 * previous operation's changed the policy, one whose settings revision differs changed a setting.
 * The oldest one is a policy change when no setting was ever changed (settings r0), a setting
 * when the policy is still v1 (the one the sandbox was created with). Otherwise both are shown.
 */
export function labelOperations(ops: Iterable<OperationView>, known: OperationKnowledge): Map<string, OperationLabel> {
  const out = new Map<string, OperationLabel>();
  const oldestFirst = [...ops].sort((a, b) => (a.createdAt?.getTime() ?? 0) - (b.createdAt?.getTime() ?? 0));
  let prev: OperationView | undefined;
  for (const v of oldestFirst) {
    const sent = known.sentPolicies.get(v.operationId);
    const pv = v.policyVersion ?? sent;
    const sr = v.settingsRevision;
    const policy = (n: number | undefined): OperationLabel => ({ kind: "policy", label: n === undefined ? "policy" : `policy v${n}` });
    const setting = (r: bigint): OperationLabel => {
      const keys = known.settingKeys.get(r);
      return keys && keys.length > 0
        ? { kind: "setting", label: `setting ${keys.join(", ")}`, title: `settings revision r${r}` }
        : { kind: "setting", label: `setting (r${r})`, title: `settings revision r${r}; the gateway does not say which key changed` };
    };
    let label: OperationLabel;
    if (sent !== undefined) label = policy(pv);
    else if (pv === undefined || sr === undefined) label = v.target === "" ? { kind: "unknown", label: "—", title: "no revision associated yet" } : { kind: "unknown", label: v.target };
    else if (prev !== undefined) {
      label =
        pv !== prev.policyVersion
          ? policy(pv)
          : sr !== prev.settingsRevision
            ? setting(sr)
            : { kind: "unknown", label: `policy v${pv} · settings r${sr}`, title: "the same revision as the operation before it (a change that changed nothing)" };
    } else if (sr === 0n) label = policy(pv);
    else if (pv === 1) label = setting(sr);
    else label = { kind: "unknown", label: `policy v${pv} · settings r${sr}`, title: "the gateway does not say whether this operation changed the policy or a setting" };
    out.set(v.operationId, label);
    if (pv !== undefined && sr !== undefined) prev = v;
  }
  return out;
}
