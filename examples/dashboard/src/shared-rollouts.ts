// The workspace's shared rollouts (issue 31) as the dashboard sees them, without DOM: how each one
// stands (paused for approval, running, driverless after its driver's lease ran out, halted, …),
// what this page may do with it and, when it may not, why; and a live feed of every rollout of the
// workspace from the gateway's WatchRollouts, reconnecting after a dropped stream. The panel
// (rollouts-panel.ts) draws what this module decides, so the decisions are testable in Node.

import { Code, ConnectError } from "@connectrpc/connect";
import { SharedRolloutsUnsupportedError, watchRollouts, type RolloutPhase, type SharedRollout } from "openshell-config/rollout";
import { PermissionDeniedError, UnauthenticatedError, type ConfigClient } from "openshell-config";

/** How a shared rollout stands now. "driverless": running (or rolling back) but nobody holds a live lease. */
export type Standing =
  | "awaiting-approval"
  | "paused-until"
  | "running"
  | "rolling-back"
  | "driverless"
  | "complete"
  | "halted"
  | "rolled-back"
  | "incomplete"
  | "aborted";

/** Whether rollout `r` has a driver whose lease is still live at `now`. */
export const leaseLive = (r: Pick<SharedRollout, "lease">, now: number): boolean => r.lease !== undefined && r.lease.expiresAt.getTime() > now;

export function standingOf(r: SharedRollout, now: number): Standing {
  switch (r.phase) {
    case "paused":
      return r.awaitingApproval ? "awaiting-approval" : "paused-until";
    case "running":
    case "rolling-back":
      if (leaseLive(r, now)) return r.phase;
      // A run that ended cut short (or stopped) released its lease and said so; otherwise its driver died.
      if (r.result === "incomplete" || r.result === "aborted") return r.result;
      return "driverless";
    case "done":
      if (r.result === "halted" || r.result === "rolled-back" || r.result === "complete") return r.result;
      if (r.counts.rolledBack > 0) return "rolled-back";
      return r.gateFailure !== undefined ? "halted" : "complete";
  }
}

/** How a shared rollout stands in the words of this browser's list (rollout-list.ts): paused, halted, done, … */
export function phaseOfRecord(r: SharedRollout, now: number): RolloutPhase {
  const s = standingOf(r, now);
  switch (s) {
    case "awaiting-approval":
    case "paused-until":
      return "paused";
    case "running":
    case "rolling-back":
    case "driverless":
      return "incomplete";
    default:
      return s;
  }
}

/** The chip of each standing: a colour and its words. */
export const STANDINGS: Record<Standing, { readonly tone: "blue" | "amber" | "red" | "green" | "grey"; readonly text: string }> = {
  "awaiting-approval": { tone: "amber", text: "paused for approval" },
  "paused-until": { tone: "blue", text: "paused" },
  running: { tone: "blue", text: "running" },
  "rolling-back": { tone: "blue", text: "rolling back" },
  driverless: { tone: "amber", text: "no driver" },
  complete: { tone: "green", text: "done" },
  halted: { tone: "red", text: "halted" },
  "rolled-back": { tone: "grey", text: "rolled back" },
  incomplete: { tone: "amber", text: "cut short" },
  aborted: { tone: "amber", text: "stopped" },
};

/** A button of a rollout's row: its words, and when disabled, why (its tooltip and the row's note). */
export interface ActionView {
  readonly label: string;
  readonly enabled: boolean;
  /** Why it is disabled, or what it does. */
  readonly title: string;
}

/** What this page knows about itself when deciding a row's buttons. */
export interface Acting {
  /** Why this page's token may not act on rollouts (a user, not an admin); undefined: it may, as far as is known. */
  readonly refused: string | undefined;
  /** The principal this page acts as, once known (the creator of a rollout it started). */
  readonly me: string | undefined;
  /** The rollout this page drives now, if any (one run at a time from this page). */
  readonly driving: string | undefined;
}

/** The row's buttons: continue (approve, continue, resume or take over) and undo; undefined: no such button. */
export function actionsOf(r: SharedRollout, now: number, acting: Acting): { readonly proceed?: ActionView; readonly undo?: ActionView } {
  const s = standingOf(r, now);
  const lease = r.lease;
  const blocked = (): string | undefined => {
    if (acting.refused !== undefined) return acting.refused;
    if (acting.driving !== undefined) return acting.driving === r.id ? "This page is driving it now." : "This page is driving another rollout; one at a time.";
    if (lease && leaseLive(r, now)) return `Driven by ${lease.holder} (${lease.principal}) until ${lease.expiresAt.toLocaleTimeString(undefined, { hourCycle: "h23" })}; it can be taken over after that.`;
    return undefined;
  };
  const why = blocked();
  let proceed: ActionView | undefined;
  if (s === "awaiting-approval") {
    const own = r.requireDistinctApprover && acting.me !== undefined && r.createdBy === acting.me;
    const reason = why ?? (own ? `Four eyes: ${r.createdBy} created it, so another admin must approve wave ${r.waves.done + 1}.` : undefined);
    proceed = { label: "Approve & continue", enabled: reason === undefined, title: reason ?? `Approve wave ${r.waves.done + 1} of ${r.waves.total} and send it from this page` };
  } else if (s === "paused-until" || s === "halted" || s === "incomplete" || s === "aborted" || s === "driverless") {
    const label = s === "driverless" ? "Take over" : s === "paused-until" ? "Continue" : "Resume";
    const does = s === "driverless" ? "Its driver is gone (lease expired): continue it from this page" : "Send what it has not sent yet, from this page";
    proceed = { label, enabled: why === undefined, title: why ?? does };
  } else if (s === "running" || s === "rolling-back") {
    proceed = { label: "Take over", enabled: false, title: why ?? "" };
  }
  let undo: ActionView | undefined;
  if (r.counts.sent > 0 && s !== "rolled-back") {
    undo = { label: "Undo", enabled: why === undefined, title: why ?? "Return every sandbox it changed to what it had before" };
  }
  return { ...(proceed ? { proceed } : {}), ...(undo ? { undo } : {}) };
}

/** "just now", "42s", "5m", "3h", "2d": how long ago `d` was. */
export function ageText(d: Date, now: number): string {
  const s = Math.max(0, Math.floor((now - d.getTime()) / 1000));
  if (s < 5) return "just now";
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86_400)}d`;
}

/** "1 applied, 0 failed of 6 · 3 sent": a rollout's counts in one line. */
export function countsText(r: SharedRollout): string {
  const c = r.counts;
  return `${c.applied} applied, ${c.failed} failed of ${c.targets}${c.rolledBack > 0 ? `, ${c.rolledBack} rolled back` : ""} · ${c.sent} sent`;
}

/** Newest first (by creation, then id), as ListRollouts orders them. */
export const newestFirst = (a: SharedRollout, b: SharedRollout): number => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

/** A refusal retrying cannot mend: the token may not (or no longer) read or act. */
export const isRefusal = (err: unknown): boolean =>
  err instanceof PermissionDeniedError ||
  err instanceof UnauthenticatedError ||
  (err instanceof ConnectError && (err.code === Code.PermissionDenied || err.code === Code.Unauthenticated));

/** The feed's connection: live, (re)connecting with the last error, or over for good. */
export type FeedStatus =
  | { readonly kind: "connecting" }
  | { readonly kind: "live" }
  | { readonly kind: "retrying"; readonly message: string }
  | { readonly kind: "unsupported" }
  | { readonly kind: "failed"; readonly message: string };

export interface FeedOptions {
  /** Every rollout of the workspace, newest first, after each change. */
  readonly onRollouts: (rollouts: readonly SharedRollout[]) => void;
  readonly onStatus: (status: FeedStatus) => void;
  /** A message for an error (never the token). */
  readonly explain: (err: unknown) => string;
  /** Ends the feed. */
  readonly signal: AbortSignal;
  /** Waits between reconnections (default 1 s, doubling to 10 s). */
  readonly retryMs?: number;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
  });

/**
 * Follows every rollout of the client's workspace until `signal` aborts. After a dropped stream it
 * watches again; the new stream's initial list replaces the old one once it is complete ("synced"),
 * so a rollout is never shown twice nor briefly missing. Ends for good on a gateway without
 * records ("unsupported") or an error retrying cannot mend (permission, authentication).
 */
export async function followSharedRollouts(client: ConfigClient, options: FeedOptions): Promise<void> {
  const { signal } = options;
  let known = new Map<string, SharedRollout>();
  const publish = () => options.onRollouts([...known.values()].sort(newestFirst));
  let wait = options.retryMs ?? 1000;
  options.onStatus({ kind: "connecting" });
  while (!signal.aborted) {
    const fresh = new Map<string, SharedRollout>();
    let synced = false;
    try {
      for await (const e of watchRollouts(client, { signal })) {
        if (e.type === "synced") {
          synced = true;
          known = fresh;
          wait = options.retryMs ?? 1000;
          options.onStatus({ kind: "live" });
          publish();
        } else if (synced) {
          const before = known.get(e.rollout.id);
          // Out of order never happens on one stream; a resourceVersion check costs nothing.
          if (before === undefined || before.resourceVersion <= e.rollout.resourceVersion) known.set(e.rollout.id, e.rollout);
          publish();
        } else {
          fresh.set(e.rollout.id, e.rollout);
        }
      }
      if (signal.aborted) return;
      options.onStatus({ kind: "retrying", message: "the gateway ended the watch" });
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof SharedRolloutsUnsupportedError) return options.onStatus({ kind: "unsupported" });
      if (isRefusal(err)) return options.onStatus({ kind: "failed", message: options.explain(err) });
      options.onStatus({ kind: "retrying", message: options.explain(err) });
    }
    await sleep(wait, signal);
    wait = Math.min(wait * 2, 10_000);
  }
}
