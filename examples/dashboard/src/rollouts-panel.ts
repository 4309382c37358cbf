// The workspace's rollouts panel (issue 31): every rollout of the workspace as the gateway's shared
// record holds it, live (shared-rollouts.ts follows WatchRollouts), newest first: its id, age,
// how it stands (paused for approval stands out), waves done of total, counts, who created it, who
// drives it (the lease) and each approval (who, when). A paused, halted or driverless one can be
// continued or undone from here; the run itself is shown by the rollout card (rollout-view.ts), so
// `act` goes through it. A button this page may not use is disabled and says why; a refusal from
// the gateway (lease held, four eyes, permission) is shown on the rollout's row as its sentence.
//
// Against a gateway without the extension the panel says that rollouts are not shared, and the
// rollout card keeps them in this browser as before.

import { getRolloutCapabilities, type SharedRollout } from "openshell-config/rollout";
import type { ConfigClient } from "openshell-config";
import { workspaceScope } from "openshell-config/raw";
import { PermissionDeniedError } from "openshell-config";
import { Code, ConnectError } from "@connectrpc/connect";
import { h } from "./dom.js";
import type { Raw } from "./session.js";
import { actionsOf, ageText, countsText, followSharedRollouts, leaseLive, standingOf, STANDINGS, type ActionView, type FeedStatus } from "./shared-rollouts.js";
import { plural, timeText } from "./status.js";

export type SharedAction = "proceed" | "undo";

export interface RolloutsPanelOptions {
  readonly client: ConfigClient;
  readonly raw: Raw;
  /** This page's driver id in a lease ("dashboard <random>"). */
  readonly driver: string;
  /** A message for an error (never the token). */
  readonly explain: (err: unknown) => string;
  readonly signal: AbortSignal;
  /** Continues or undoes `r` through the rollout card; resolves with the refusal's sentence, or undefined. */
  readonly act: (action: SharedAction, r: SharedRollout) => Promise<string | undefined>;
  /** Shows `r` in the rollout card. */
  readonly show: (r: SharedRollout) => void;
  /** Told once whether the gateway keeps shared rollouts. */
  readonly onShared: (shared: boolean) => void;
  /** Called after the rollouts changed. */
  readonly onRollouts?: () => void;
}

export interface RolloutsPanel {
  readonly element: HTMLElement;
  /** The rollout this page drives now (others' buttons wait), or undefined. */
  setDriving(id: string | undefined): void;
  /** The record of rollout `id`, as last seen. */
  record(id: string): SharedRollout | undefined;
  /** Whether the gateway keeps shared rollouts (false until known). */
  shared(): boolean;
}

/** A rollout id no rollout has: approving it tells an admin (not found) from a user (permission denied). */
const PROBE_ID = "00000000-0000-4000-8000-000000000000";

export function createRolloutsPanel(options: RolloutsPanelOptions): RolloutsPanel {
  const status = h("p", { class: "shared-status small", "data-testid": "shared-status" }, "Asking the gateway whether it shares rollouts…");
  const list = h("ul", { class: "shared-list", "data-testid": "shared-rollouts" });
  const count = h("span", { class: "muted small", "data-testid": "shared-count" });
  const empty = h("p", { class: "muted small", hidden: true }, "No rollout in this workspace yet.");
  const refusedNote = h("p", { class: "shared-status small", "data-testid": "shared-refused", hidden: true });
  let rollouts: readonly SharedRollout[] = [];
  let shared = false;
  let driving: string | undefined;
  let refused: string | undefined;
  let me: string | undefined;
  /** The gateway's refusal of the last action on a rollout, until its record changes. */
  const notes = new Map<string, { version: bigint; text: string }>();
  /** Rollouts with an action under way from this panel. */
  const acting = new Set<string>();
  let lastKey = "";

  const setStatus = (text: string, tone: "info" | "live" | "warn" | "error") => {
    status.textContent = text;
    status.dataset["tone"] = tone;
  };

  function onStatus(s: FeedStatus): void {
    switch (s.kind) {
      case "connecting":
        return setStatus("Connecting to the workspace's rollouts…", "info");
      case "live":
        return setStatus("Shared: every operator of this workspace sees these rollouts, live.", "live");
      case "retrying":
        return setStatus(`Reconnecting (${s.message})…`, "warn");
      case "unsupported":
        return notShared();
      case "failed":
        return setStatus(`Cannot follow the workspace's rollouts: ${s.message}`, "error");
    }
  }

  function notShared(): void {
    shared = false;
    element.dataset["shared"] = "false";
    setStatus("Rollouts are not shared: this gateway keeps no rollout records, so the rollouts below live in this browser only.", "warn");
    list.replaceChildren();
    empty.hidden = true;
    count.textContent = "";
  }

  const approvalsText = (r: SharedRollout) => r.approvals.map((a) => `wave ${a.wave + 1} by ${a.by} at ${timeText(a.at)}`).join("; ");

  const button = (action: SharedAction, r: SharedRollout, v: ActionView, cls = "") =>
    h(
      "button",
      {
        type: "button",
        class: cls,
        "data-action": action,
        disabled: !v.enabled || acting.has(r.id),
        title: v.title,
        onclick: () => void run(action, r),
      },
      v.label,
    );

  function row(r: SharedRollout, now: number): HTMLElement {
    const s = standingOf(r, now);
    const chip = STANDINGS[s];
    const actions = actionsOf(r, now, { refused, me, driving });
    const note = notes.get(r.id);
    // The role's reason is said once, above the list; a row says only its own.
    const disabledWhy = [actions.proceed, actions.undo].find((a) => a && !a.enabled && a.title !== refused)?.title;
    const lease = r.lease;
    const driver = lease && leaseLive(r, now) ? `driven by ${lease.holder} (${lease.principal})` : lease ? `no driver (lease of ${lease.holder} expired)` : "no driver";
    return h(
      "li",
      { class: "shared", "data-rollout-id": r.id, "data-standing": s, "data-phase": r.phase },
      h(
        "div",
        { class: "kept-head" },
        h("code", { class: "kept-id", title: r.id }, r.id.slice(0, 8)),
        h("code", { class: "kept-selector" }, r.labelSelector ?? r.changeSummary),
        h("span", { class: `badge chip chip-${chip.tone}`, "data-testid": "shared-standing" }, s === "paused-until" && r.pausedUntil ? `paused until ${timeText(r.pausedUntil)}` : chip.text),
      ),
      h(
        "div",
        { class: "shared-meta small" },
        h("span", { "data-testid": "shared-waves" }, `waves ${r.waves.done}/${r.waves.total}`),
        h("span", { "data-testid": "shared-counts" }, countsText(r)),
        h("span", {}, r.changeSummary),
      ),
      h(
        "div",
        { class: "shared-meta small muted" },
        h("span", { "data-testid": "shared-creator" }, `by ${r.createdBy}`),
        h("span", { class: "shared-age", "data-created": r.createdAt.toISOString(), title: timeText(r.createdAt) }, ageText(r.createdAt, now)),
        h("span", { "data-testid": "shared-driver" }, driver),
      ),
      r.approvals.length > 0 ? h("div", { class: "shared-meta small", "data-testid": "shared-approvals" }, `approved: ${approvalsText(r)}`) : null,
      r.gateFailure ? h("div", { class: "small error-text" }, `gate failed: ${r.gateFailure}`) : null,
      h(
        "div",
        { class: "kept-foot" },
        h(
          "span",
          { class: "kept-buttons" },
          actions.proceed ? button("proceed", r, actions.proceed, s === "awaiting-approval" ? "primary" : "") : null,
          actions.undo ? button("undo", r, actions.undo) : null,
          h("button", { type: "button", class: "ghost", "data-action": "show", disabled: driving !== undefined, onclick: () => options.show(r) }, "Show"),
        ),
      ),
      note ? h("p", { class: "shared-note small error-text", "data-testid": "shared-refusal", role: "alert" }, note.text) : disabledWhy ? h("p", { class: "shared-note small muted", "data-testid": "shared-why" }, disabledWhy) : null,
    );
  }

  /** A key of what the rows show that changes without a record changing (a lease running out). */
  const keyOf = (now: number) => rollouts.map((r) => `${r.id}:${r.resourceVersion}:${standingOf(r, now)}:${leaseLive(r, now)}`).join(",");

  function render(): void {
    if (!shared) return;
    const now = Date.now();
    lastKey = keyOf(now);
    for (const [id, n] of notes) if (rollouts.find((r) => r.id === id)?.resourceVersion !== n.version) notes.delete(id);
    const waiting = rollouts.filter((r) => r.awaitingApproval).length;
    count.textContent = rollouts.length === 0 ? "" : `${plural(rollouts.length, "rollout")}${waiting ? `, ${waiting} paused for approval` : ""}`;
    empty.hidden = rollouts.length > 0;
    list.replaceChildren(...rollouts.map((r) => row(r, now)));
  }

  async function run(action: SharedAction, r: SharedRollout): Promise<void> {
    acting.add(r.id);
    notes.delete(r.id);
    render();
    try {
      const refusal = await options.act(action, r);
      if (refusal !== undefined) {
        notes.set(r.id, { version: rollouts.find((x) => x.id === r.id)?.resourceVersion ?? r.resourceVersion, text: refusal });
        if (/^Permission denied/.test(refusal) && !/four eyes|creator/i.test(refusal)) refused = refusal;
      }
    } finally {
      acting.delete(r.id);
      render();
    }
  }

  /** Whether this page's token may act on rollouts: an approval of a rollout that does not exist is refused for a user only. */
  async function probeRight(): Promise<void> {
    try {
      await options.raw.approveRollout({ workspaceScope: workspaceScope(), id: PROBE_ID, wave: 0 }, { signal: options.signal });
    } catch (err) {
      const denied = err instanceof PermissionDeniedError || (err instanceof ConnectError && err.code === Code.PermissionDenied);
      if (denied) {
        refused = `Only an admin of this workspace may continue or undo a rollout (${options.explain(err)}).`;
        refusedNote.textContent = refused;
        refusedNote.hidden = false;
        render();
      }
    }
  }

  const element = h(
    "section",
    { class: "card shared-panel", "data-testid": "rollouts-panel" },
    h("div", { class: "card-head" }, h("h2", {}, "Rollouts of the workspace"), count),
    status,
    refusedNote,
    empty,
    list,
  );

  void (async () => {
    try {
      const caps = await getRolloutCapabilities(options.client, { signal: options.signal });
      options.onShared(caps.sharedRollouts);
      if (!caps.sharedRollouts) return notShared();
    } catch (err) {
      if (options.signal.aborted) return;
      // Unknown: the card behaves as without records; the panel says why it shows nothing.
      options.onShared(false);
      return setStatus(`Cannot tell whether this gateway shares rollouts: ${options.explain(err)}`, "error");
    }
    shared = true;
    element.dataset["shared"] = "true";
    void probeRight();
    await followSharedRollouts(options.client, {
      signal: options.signal,
      explain: options.explain,
      onStatus,
      onRollouts: (next) => {
        rollouts = next;
        // The principal this page acts as: the one its own driver's lease names.
        me ??= next.find((r) => r.lease?.holder === options.driver)?.lease?.principal;
        render();
        options.onRollouts?.();
      },
    });
  })();

  // Ages tick, and a lease that runs out turns a running rollout driverless without any write.
  const tick = setInterval(() => {
    if (!shared) return;
    const now = Date.now();
    if (keyOf(now) !== lastKey) return render();
    for (const el of list.querySelectorAll<HTMLElement>(".shared-age")) el.textContent = ageText(new Date(el.dataset["created"]!), now);
  }, 1000);
  options.signal.addEventListener("abort", () => clearInterval(tick), { once: true });

  return {
    element,
    setDriving(id) {
      driving = id;
      render();
    },
    record: (id) => rollouts.find((r) => r.id === id),
    shared: () => shared,
  };
}
