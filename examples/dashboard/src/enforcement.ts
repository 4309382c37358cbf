// What a sandbox enforces next to what it should, as the dashboard shows it: badges for the
// sandbox list (a sandbox that fails closed is never a green "ready"; behind, last update failed,
// local policy) and the notice above the policy editor. The data is the SDK's getConfig (desired,
// latest revision with its load error, enforced, drift), or, while that is unavailable, the
// extension fields of the ListSandboxes entry itself.

import { fromPolicyEnforcement, type Drift, type Enforcement, type SandboxConfig } from "openshell-config";
import { SandboxPhase, type Sandbox } from "openshell-config/raw";
import { h } from "./dom.js";
import { phaseBadge, timeText } from "./status.js";

/** One sandbox's desired and enforced policy, from whichever source the page has. */
export interface EnforcementView {
  /** The newest desired policy version (the global one's when it is in force); undefined when unknown. */
  readonly desiredVersion: number | undefined;
  readonly enforced: Enforcement;
  /** undefined: the gateway does not say enough to tell. */
  readonly drift: readonly Drift[] | undefined;
  /** The sanitized load error of the newest revision, when it failed. */
  readonly loadError: string | undefined;
  /** The newest revision has not been answered yet (drift may resolve by itself). */
  readonly pending: boolean;
}

const FAILED_OUTCOMES = new Set<string>(["failed-retained-last-known-good", "failed-closed", "unsupported"]);

export function fromConfig(cfg: SandboxConfig): EnforcementView {
  const global = cfg.desired.policySource === "global";
  const desiredVersion = global ? cfg.desired.globalPolicyVersion : cfg.desired.policyVersion;
  const latest = !global && cfg.latestRevision?.version === desiredVersion ? cfg.latestRevision : undefined;
  return { desiredVersion, enforced: cfg.enforced, drift: cfg.drift, loadError: latest?.status === "failed" ? latest.loadError : undefined, pending: cfg.pending };
}

/** From a ListSandboxes entry: our gateway's extension fields; without them, nothing is claimed. */
export function fromListed(sb: Sandbox): EnforcementView {
  const status = sb.status;
  const desired = status?.desiredPolicyVersion ?? 0;
  const base = { reportedPolicyVersion: 0, outcome: "unspecified", reason: undefined, observedAt: undefined } as const;
  if (status?.policyEnforcement === undefined) {
    // Our gateway sets the desired version on every sandbox; a gateway without the extension does not.
    const enforced: Enforcement = { ...base, source: desired === 0 ? "active-version" : "gateway-record", state: "unknown" };
    return { desiredVersion: desired === 0 ? undefined : desired, enforced, drift: desired === 0 ? undefined : ["unreported"], loadError: undefined, pending: false };
  }
  const enforced = fromPolicyEnforcement(status.policyEnforcement);
  const drift: Drift[] = [];
  if (enforced.state === "failed-closed") drift.push("failed-closed");
  else if (enforced.state === "local-override") drift.push("local-override");
  else if (enforced.state === "unknown") drift.push("unreported");
  else if (enforced.policySource !== "global" && enforced.policyVersion !== desired) drift.push("behind");
  const failed = enforced.reportedPolicyVersion === desired && FAILED_OUTCOMES.has(enforced.outcome);
  if (failed) drift.push("last-update-failed");
  return { desiredVersion: desired, enforced, drift, loadError: failed ? enforced.reason : undefined, pending: false };
}

const when = (e: Enforcement) => (e.observedAt ? ` since ${timeText(e.observedAt)}` : "");

function driftBadge(kind: string, cls: "red" | "amber" | "grey", label: string, title?: string): HTMLElement {
  return h("span", { class: `badge drift drift-${cls}`, "data-drift": kind, title }, label);
}

/**
 * The phase cell: the phase badge, except that a sandbox failing closed gets a red "fails closed
 * (deny all)" badge instead of its phase's colour (its phase stays readable next to it).
 */
export function phaseCell(phase: SandboxPhase, view: EnforcementView): HTMLElement {
  if (view.enforced.state !== "failed-closed") return phaseBadge(phase);
  const name = phase === SandboxPhase.UNSPECIFIED ? "unknown" : SandboxPhase[phase]!.toLowerCase().replaceAll("_", "-");
  return h(
    "div",
    { class: "phase-stack" },
    h("span", { class: "badge badge-failed-closed", "data-enforcement": "failed-closed", title: view.enforced.reason ?? "no valid policy is in force" }, "fails closed (deny all)"),
    h("div", { class: "muted small", "data-phase": name }, `phase ${name}`),
  );
}

/** What the policy cell shows under the desired version: one badge per kind of drift. */
export function driftBadges(view: EnforcementView): HTMLElement[] {
  const { enforced, drift, desiredVersion } = view;
  if (drift === undefined) return [h("div", { class: "muted small", "data-drift": "unknown" }, "enforced: unknown")];
  const out: HTMLElement[] = [];
  if (drift.includes("behind") && enforced.state === "enforcing") {
    const label = enforced.policyVersion === desiredVersion ? "behind: older settings" : `behind: runs v${enforced.policyVersion}, desired v${desiredVersion}`;
    out.push(driftBadge("behind", view.pending ? "grey" : "amber", view.pending ? `${label} (pending)` : label));
  }
  if (drift.includes("failed-closed")) out.push(driftBadge("failed-closed", "red", "denies all traffic", enforced.reason));
  if (drift.includes("local-override")) out.push(driftBadge("local-override", "amber", "local policy", "an explicit local policy in the sandbox takes precedence over the gateway's"));
  if (drift.includes("unreported")) out.push(h("div", { class: "muted small", "data-drift": "unreported" }, "not reported yet"));
  if (drift.includes("last-update-failed")) {
    out.push(
      h(
        "div",
        { class: "last-failed small", "data-drift": "last-update-failed", title: view.loadError },
        h("strong", {}, `v${desiredVersion} failed`),
        view.loadError ? `: ${view.loadError}` : "",
      ),
    );
  }
  return out.map((el) => h("div", { class: "drift-line" }, el));
}

/**
 * The notice above the editor when the sandbox does not enforce the desired policy (the one the
 * editor loads): rejected and what runs instead, failing closed, a local override, not applied yet.
 */
export function editorNotice(view: EnforcementView): HTMLElement | undefined {
  const { enforced, drift, desiredVersion } = view;
  if (drift === undefined || drift.length === 0) return undefined;
  const v = `v${desiredVersion}`;
  const rejected = drift.includes("last-update-failed") ? `${v} was rejected by the sandbox${view.loadError ? `: ${view.loadError}` : ""}` : undefined;
  let level: "red" | "amber" | "grey";
  let text: string;
  switch (enforced.state) {
    case "failed-closed":
      level = "red";
      text = `${rejected ? `${rejected}. ` : ""}The sandbox fails closed: it denies all traffic${when(enforced)}${!rejected && enforced.reason ? ` (${enforced.reason})` : ""}. Apply a corrected policy to restore it.`;
      break;
    case "local-override":
      level = "amber";
      text = `A local policy inside the sandbox overrides the gateway's: ${v} is stored but not enforced.`;
      break;
    case "unknown":
      level = "grey";
      text = `The sandbox has not reported what it enforces yet.`;
      break;
    case "enforcing":
      level = rejected ? "amber" : "grey";
      text = rejected
        ? `${rejected}; it enforces v${enforced.policyVersion}${enforced.policyVersion < (desiredVersion ?? 0) ? " (last known good)" : ""}.`
        : view.pending
          ? `${v} is not applied yet; the sandbox enforces v${enforced.policyVersion}.`
          : enforced.policyVersion === desiredVersion
            ? `The sandbox enforces ${v} with older settings.`
            : `The sandbox enforces v${enforced.policyVersion}, not ${v}.`;
      break;
  }
  return h("div", { class: `notice notice-${level}`, role: "alert", "data-testid": "policy-warning", "data-level": level }, text);
}
