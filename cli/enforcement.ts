// What a sandbox enforces, next to what it should: the words `policy get` and `sandbox list` use,
// and the JSON both print. The enforced side comes from the gateway's record of the sandbox's
// latest result (bootstrap or update), never from the newest desired version: the two differ
// exactly when something went wrong (a rejected update, failing closed, a local override), and
// that difference is what these commands must show.

import { enforcementDrift, enforcementOfStatus, fromPolicyEnforcement, type Drift, type Enforcement, type LatestPolicyRevision } from "openshell-config";
import type { Sandbox } from "openshell-config/raw";

/** Outcomes of a result that did not apply the configuration it answered for. */
const FAILED_OUTCOMES = new Set<string>(["failed-retained-last-known-good", "failed-closed", "unsupported"]);

/** The enforcement as a JSON document (`-o json`): the same fields for every state, null when not applicable. */
export function enforcementJson(e: Enforcement): Record<string, unknown> {
  const enforcing = e.state === "enforcing" ? e : undefined;
  return {
    state: e.state,
    policyVersion: enforcing?.policyVersion ?? null,
    policyHash: enforcing?.policyHash ?? null,
    policySource: enforcing?.policySource ?? null,
    degraded: enforcing?.degraded ?? false,
    reportedPolicyVersion: e.reportedPolicyVersion === 0 ? null : e.reportedPolicyVersion,
    outcome: e.outcome,
    reason: e.reason ?? null,
    observedAt: e.observedAt ?? null,
    source: e.source,
  };
}

const since = (e: Enforcement) => (e.observedAt ? ` since ${e.observedAt.toISOString()}` : "");
const because = (e: Enforcement) => (e.reason ? `: ${e.reason}` : "");

/**
 * One line for `policy get`'s `enforced` row: `v3`, `v2 (last known good; v3 was rejected)`,
 * `fails closed (deny all) since …: reason`, `local policy overrides since …`, `not reported yet`.
 */
export function enforcedText(e: Enforcement, desiredVersion: number, latest: LatestPolicyRevision | undefined, drift: readonly Drift[]): string {
  switch (e.state) {
    case "failed-closed":
      return `fails closed (deny all)${since(e)}${because(e)}`;
    case "local-override":
      return `local policy overrides the gateway's${since(e)}${because(e)}`;
    case "unknown":
      return e.source === "gateway-record" ? "not reported yet" : "not reported yet (the gateway does not say)";
    case "enforcing": {
      const version = `v${e.policyVersion}${e.policySource === "global" ? " (global policy)" : ""}`;
      const notes: string[] = [];
      if (e.policyVersion !== desiredVersion) {
        if (latest?.version === desiredVersion && latest.status === "failed") notes.push(`last known good; v${desiredVersion} was rejected`);
        else if (latest?.version === desiredVersion && latest.status === "pending") notes.push(`v${desiredVersion} not applied yet`);
        else notes.push(`desired is v${desiredVersion}`);
      } else if (drift.includes("behind")) {
        notes.push("with older settings");
      }
      if (e.degraded) notes.push(`degraded${because(e)}`);
      return notes.length === 0 ? version : `${version} (${notes.join("; ")})`;
    }
  }
}

/** What `sandbox list` shows of one sandbox's desired and enforced policy. */
export interface ListedEnforcement {
  /** The newest desired sandbox policy version; undefined when the gateway does not say. */
  readonly desiredVersion: number | undefined;
  /** What it enforces. `source: "active-version"` with state unknown when the gateway has no record. */
  readonly enforced: Enforcement;
  /** The drift; undefined when the gateway does not say enough to tell. */
  readonly drift: readonly Drift[] | undefined;
}

/**
 * From one ListSandboxes entry (no further requests): our gateway's extension fields, or, from a
 * gateway without them, only `current_policy_version`, with the drift unknown rather than guessed.
 */
export function listedEnforcement(sb: Sandbox): ListedEnforcement {
  const status = sb.status;
  const desired = status?.desiredPolicyVersion ?? 0;
  if (status?.policyEnforcement === undefined && desired === 0) {
    const enforced = enforcementOfStatus({ activeVersion: status?.currentPolicyVersion ?? 0, enforcement: undefined });
    return { desiredVersion: undefined, enforced, drift: undefined };
  }
  const enforced: Enforcement =
    status?.policyEnforcement === undefined
      ? { source: "gateway-record", state: "unknown", reportedPolicyVersion: 0, outcome: "unspecified", reason: undefined, observedAt: undefined }
      : fromPolicyEnforcement(status.policyEnforcement);
  // The list names only the sandbox's own desired version: a sandbox running the global policy
  // cannot be told behind from it (no policySource given).
  const drift = enforcementDrift(enforced, { policyVersion: desired });
  // The latest result answered for the desired version and did not apply it.
  if (enforced.reportedPolicyVersion === desired && FAILED_OUTCOMES.has(enforced.outcome)) drift.push("last-update-failed");
  return { desiredVersion: desired, enforced, drift };
}

/** The ENFORCED column: `v2`, `deny-all`, `local`, `-` (nothing reported). */
export function enforcedCell(e: Enforcement): string {
  switch (e.state) {
    case "enforcing":
      return `${e.policySource === "global" ? "global " : ""}v${e.policyVersion}${e.degraded ? " (degraded)" : ""}`;
    case "failed-closed":
      return "deny-all";
    case "local-override":
      return "local";
    case "unknown":
      return "-";
  }
}
