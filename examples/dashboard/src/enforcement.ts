// What a sandbox enforces next to what it should, as the dashboard shows it: badges for the
// sandbox list (a sandbox that fails closed is never a green "ready"; behind, last update failed,
// local policy) and the notice above the policy editor. The data is the SDK's getConfig (desired,
// latest revision with its load error, enforced, drift), or, while that is unavailable, the
// extension fields of the ListSandboxes entry itself.

import { fromPolicyEnforcement, type Drift, type Enforcement, type SandboxConfig } from "openshell-config";
import { SandboxPhase, type Sandbox } from "openshell-config/raw";
import { breakable, h } from "./dom.js";
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
 * How the sandbox's enforcement compares with its desired policy, in one word: `in-sync`,
 * `applying` (the newest revision is not answered yet), `drift` (it runs another revision, was
 * rejected, degraded, or a local policy wins), `failed-closed`, `unknown` (nothing reported).
 */
export type Health = "in-sync" | "applying" | "drift" | "failed-closed" | "unknown";

export function healthOf(view: EnforcementView): Health {
  const { enforced, drift } = view;
  if (enforced.state === "failed-closed") return "failed-closed";
  if (drift === undefined || enforced.state === "unknown") return "unknown";
  if (enforced.state === "local-override" || drift.includes("last-update-failed")) return "drift";
  if (drift.includes("behind")) return view.pending ? "applying" : "drift";
  if (enforced.degraded) return "drift";
  return "in-sync";
}

/**
 * The phase cell: the phase badge, green "ready" only when the sandbox enforces its desired
 * policy. A ready sandbox that runs another revision, was rejected or is overridden locally is an
 * amber "ready"; one failing closed gets a red "fails closed (deny all)" badge instead of its
 * phase's colour (its phase stays readable next to it).
 */
export function phaseCell(phase: SandboxPhase, view: EnforcementView): HTMLElement {
  const health = healthOf(view);
  if (health !== "failed-closed") {
    const el = phaseBadge(phase);
    if (phase === SandboxPhase.READY && health === "drift") {
      el.classList.replace("phase-ready", "phase-ready-drift");
      el.title = summaryText(view);
    }
    el.dataset["health"] = health;
    return el;
  }
  const name = phase === SandboxPhase.UNSPECIFIED ? "unknown" : SandboxPhase[phase]!.toLowerCase().replaceAll("_", "-");
  return h(
    "div",
    { class: "phase-stack" },
    h("span", { class: "badge badge-failed-closed", "data-enforcement": "failed-closed", "data-health": health, title: view.enforced.reason ?? "no valid policy is in force" }, "fails closed (deny all)"),
    h("div", { class: "muted small", "data-phase": name }, `phase ${name}`),
  );
}

/** One line of what the sandbox enforces against what it should, for tooltips and chips. */
export function summaryText(view: EnforcementView): string {
  const { enforced, desiredVersion } = view;
  const v = desiredVersion === undefined ? "the desired policy" : `v${desiredVersion}`;
  switch (enforced.state) {
    case "failed-closed":
      return "fails closed: denies all traffic";
    case "local-override":
      return `a local policy wins over ${v}`;
    case "unknown":
      return "enforcement not reported";
    case "enforcing": {
      const runs = `runs v${enforced.policyVersion}`;
      if (view.drift?.includes("last-update-failed")) return `${v} rejected, ${runs}`;
      if (enforced.policyVersion !== desiredVersion) return view.pending ? `applying ${v} (${runs})` : `${runs}, desired ${v}`;
      if (view.drift?.includes("behind")) return view.pending ? `applying ${v}` : `runs ${v} with older settings`;
      return enforced.degraded ? `runs ${v}, degraded` : `enforces ${v}`;
    }
  }
}

/**
 * A chip saying what the sandbox enforces, for the policy header and the operations card:
 * green only in sync; blue while the newest revision is applied; amber for drift; red when it
 * fails closed; grey when unknown.
 */
export function enforcementChip(view: EnforcementView): HTMLElement {
  const health = healthOf(view);
  const cls = { "in-sync": "green", applying: "blue", drift: "amber", "failed-closed": "red", unknown: "grey" }[health];
  const text = view.drift === undefined ? "enforced: unknown" : summaryText(view);
  return h("span", { class: `badge chip chip-${cls}`, "data-testid": "enforcement-chip", "data-health": health, title: view.enforced.reason ?? text }, text);
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
        view.loadError ? breakable(`: ${view.loadError}`) : "",
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
