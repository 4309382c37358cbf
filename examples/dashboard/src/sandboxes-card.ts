// The sandboxes card: every sandbox in the workspace with its phase, desired policy version (and
// how what it enforces differs) and settings revision; a row selects the sandbox.

import { h, table } from "./dom.js";
import { driftBadges, phaseCell } from "./enforcement.js";
import { viewOf, type DashboardState } from "./dashboard-state.js";
import { fullTime, timeText } from "./status.js";

export interface SandboxesCardOptions {
  readonly state: DashboardState;
  readonly onSelect: (name: string) => void;
  readonly onRefresh: () => void;
}

export interface SandboxesCard {
  readonly element: HTMLElement;
  /** Renders the rows of `state.rows`, the selected one marked. */
  render(): void;
  /** Notes when the list was read (or that it is empty). */
  listed(at: Date): void;
  refreshFailed(message: string): void;
}

export function createSandboxesCard({ state, onSelect, onRefresh }: SandboxesCardOptions): SandboxesCard {
  const listBody = h("tbody", { "data-testid": "sandbox-rows" });
  const listNote = h("p", { class: "muted small", "data-testid": "list-note" });

  const element = h(
    "section",
    { class: "card", "data-testid": "sandboxes" },
    h("div", { class: "card-head" }, h("h2", {}, "Sandboxes"), h("button", { type: "button", class: "ghost", id: "refresh", onclick: () => onRefresh() }, "Refresh")),
    table(["Name", "Phase", "Policy", "Settings"], listBody, "sandbox-table"),
    listNote,
  );

  function render(): void {
    listBody.replaceChildren(
      ...[...state.rows.values()].map((row) => {
        const { sandbox, config, configError } = row;
        const name = sandbox.metadata?.name ?? "";
        const labels = Object.entries(sandbox.metadata?.labels ?? {}).map(([k, v]) => `${k}=${v}`).join(" ");
        const view = viewOf(row);
        const version = view.desiredVersion;
        return h(
          "tr",
          {
            "data-sandbox": name,
            "data-enforced": view.enforced.state,
            "data-drift": view.drift?.join(" ") ?? "unknown",
            class: name === state.selected ? "selected" : undefined,
            tabindex: 0,
            onclick: () => onSelect(name),
            onkeydown: (e) => (e as KeyboardEvent).key === "Enter" && onSelect(name),
          },
          h("td", {}, h("div", { class: "name" }, name), labels && h("div", { class: "muted small" }, labels)),
          h("td", { "data-testid": "phase" }, phaseCell(sandbox.status?.phase ?? 0, view)),
          // The desired version, then how what the sandbox enforces differs from it (nothing when in sync).
          h(
            "td",
            { "data-testid": "policy-version", title: config ? `desired sha256 ${config.desired.policyHash}` : configError },
            version === undefined ? "—" : `v${version}`,
            ...driftBadges(view),
          ),
          h("td", { "data-testid": "settings-revision", title: configError }, config ? `r${config.desired.settingsRevision}` : "—"),
        );
      }),
    );
  }

  return {
    element,
    render,
    listed(at) {
      listNote.textContent = state.rows.size === 0 ? "No sandboxes in this workspace." : `Updated ${timeText(at)}`;
      listNote.title = fullTime(at) ?? "";
    },
    refreshFailed(message) {
      listNote.textContent = `Could not refresh: ${message}`;
    },
  };
}
