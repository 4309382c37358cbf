// The operations card: the selected sandbox's recent operations, pushed live by the gateway
// (WatchConfigUpdateOperations), each named by what it changes where this page can tell.

import { workspaceScope } from "openshell-config/raw";
import { breakable, h, table } from "./dom.js";
import { explain, isUnauthenticated } from "./explain.js";
import { enforcementChip, type EnforcementView } from "./enforcement.js";
import { labelContext, type DashboardState } from "./dashboard-state.js";
import type { Raw } from "./session.js";
import { badge, badgeStateOf, fromWire, labelOperations, timeEl, type OperationView } from "./status.js";

export interface OperationsCardOptions {
  readonly raw: Raw;
  readonly gateway: string;
  readonly state: DashboardState;
  /** An operation id was clicked: copy it to the resume form. */
  readonly onPick: (operationId: string) => void;
  /** An operation changed while watching (not one of the initial ones): the sandbox has news. */
  readonly onChanged: () => void;
  /** The gateway no longer accepts the token. */
  readonly onUnauthenticated: (reason: string) => void;
}

export interface OperationsCard {
  readonly element: HTMLElement;
  /** Shows the operations of this sandbox, watching them live. */
  show(name: string): void;
  render(): void;
  /** The chip of what the selected sandbox enforces. */
  setEnforcement(view: EnforcementView | undefined): void;
  /**
   * What an operation changed, when this page can tell (it is listed here, or was sent from
   * here); undefined otherwise: a resumed id may be a policy or a setting change.
   */
  changeOf(v: OperationView): string | undefined;
  stop(): void;
}

export function createOperationsCard({ raw, gateway, state, onPick, onChanged, onUnauthenticated }: OperationsCardOptions): OperationsCard {
  const ops = new Map<string, OperationView>();
  let watchCtl: AbortController | undefined;
  let flash: string | undefined;

  const opsTitle = h("h2", {}, "Operations");
  const opsChip = h("span", { class: "chip-slot", "data-testid": "operations-enforcement" });
  const live = h("span", { class: "live", "data-live": "idle", "data-testid": "live" }, "not watching");
  const opsBody = h("tbody", { "data-testid": "operation-rows" });

  const element = h(
    "section",
    { class: "card", "data-testid": "operations" },
    h("div", { class: "card-head wrap" }, h("div", { class: "head-text" }, opsTitle, opsChip), live),
    table(["Operation", "Change", "State", "Detail", "Updated"], opsBody, "ops-table"),
  );

  function startWatch(name: string): void {
    watchCtl?.abort();
    const ctl = new AbortController();
    watchCtl = ctl;
    ops.clear();
    renderOps();
    void watch(name, ctl.signal);
  }

  function setLive(state: "live" | "reconnecting", title = ""): void {
    live.dataset["live"] = state;
    live.title = title || (state === "live" ? "Operations are pushed by the gateway (WatchConfigUpdateOperations)" : "");
    live.textContent = state === "live" ? "● live" : "reconnecting…";
  }

  // WatchConfigUpdateOperations by sandbox: the recent operations first (`initial`), then every
  // transition as it happens. Reconnects with backoff when the stream breaks (gateway restart).
  async function watch(name: string, signal: AbortSignal): Promise<void> {
    let delay = 500;
    let failing = false;
    while (!signal.aborted) {
      // The gateway sends the response headers with the first message, and a sandbox without
      // operations has none to send: the watch counts as live from the start unless it has been
      // failing, then from the first sign of life.
      setLive(failing ? "reconnecting" : "live");
      try {
        const stream = raw.watchConfigUpdateOperations({ sandbox: name, workspaceScope: workspaceScope() }, { signal, onHeader: () => setLive("live") });
        for await (const res of stream) {
          failing = false;
          setLive("live");
          delay = 500;
          if (res.operation) onOperation(fromWire(res.operation), res.initial);
        }
      } catch (err) {
        if (signal.aborted) return;
        if (isUnauthenticated(err)) return onUnauthenticated(explain(err));
        failing = true;
        setLive("reconnecting", explain(err, gateway));
      }
      await new Promise<void>((r) => {
        const t = setTimeout(r, delay);
        signal.addEventListener("abort", () => (clearTimeout(t), r()), { once: true });
      });
      delay = Math.min(delay * 2, 10_000);
    }
  }

  function onOperation(v: OperationView, initial: boolean): void {
    ops.set(v.operationId, v);
    flash = initial ? undefined : v.operationId;
    renderOps();
    if (!initial && state.selected !== undefined) onChanged();
  }

  function renderOps(): void {
    const list = [...ops.values()].sort((a, b) => (b.createdAt?.getTime() ?? 0) - (a.createdAt?.getTime() ?? 0)).slice(0, 50);
    if (list.length === 0) {
      opsBody.replaceChildren(h("tr", {}, h("td", { colspan: 5, class: "muted empty" }, "No operations yet. Apply a policy to create one.")));
      return;
    }
    const labels = labelOperations(ops.values(), labelContext(state));
    opsBody.replaceChildren(
      ...list.map((v) => {
        const badgeState = badgeStateOf(v);
        const outcomeNote = v.outcome !== "unspecified" && v.outcome !== v.state ? v.outcome : "";
        const label = labels.get(v.operationId);
        // Only a failure is an error; superseded, inactive and cancelled explain themselves in grey.
        const errorClass = badgeState === "failed" ? "error-text" : badgeState === "degraded" ? "warn-text" : "note-text";
        return h(
          "tr",
          { "data-operation-id": v.operationId, "data-state": badgeState, "data-kind": label?.kind, class: v.operationId === flash ? "flash" : undefined },
          h(
            "td",
            { class: "op-cell" },
            h("button", { type: "button", class: "op-id", title: `${v.operationId}: click to resume its wait`, onclick: () => onPick(v.operationId) }, v.operationId.slice(0, 8)),
          ),
          h(
            "td",
            { class: "target", "data-testid": "operation-change", title: [label?.title, v.target].filter(Boolean).join(" · ") || undefined },
            label?.label ?? (v.target || "—"),
          ),
          h("td", { class: "state-cell" }, badge(badgeState)),
          h("td", { class: "detail" }, outcomeNote && h("div", { class: "muted small" }, outcomeNote), v.error && h("div", { class: errorClass }, breakable(v.error))),
          h("td", { class: "small muted when", "data-testid": "operation-time" }, timeEl(v.updatedAt ?? v.createdAt)),
        );
      }),
    );
  }

  return {
    element,
    show(name) {
      opsTitle.textContent = `Operations of ${name}`;
      startWatch(name);
    },
    render: renderOps,
    setEnforcement(view) {
      opsChip.replaceChildren(...(view ? [enforcementChip(view)] : []));
    },
    changeOf(v) {
      const sent = state.sentPolicies.get(v.operationId);
      if (sent !== undefined) return `policy v${sent}`;
      if (!ops.has(v.operationId)) return undefined;
      const label = labelOperations(ops.values(), labelContext(state)).get(v.operationId);
      return label && label.kind !== "unknown" ? label.label : undefined;
    },
    stop() {
      watchCtl?.abort();
    },
  };
}
