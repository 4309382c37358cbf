// The signed-in page: lays out the cards and wires them to the shared state. The sandbox list
// (phases, versions) is re-read periodically; operations are pushed, not polled.

import { workspaceScope, type Sandbox } from "openshell-config/raw";
import { createDashboardState, noteSettingKeys, type Row } from "./dashboard-state.js";
import { h } from "./dom.js";
import { explain, isUnauthenticated } from "./explain.js";
import { createOperationsCard } from "./operations-card.js";
import { createPolicyEditor } from "./policy-editor.js";
import { createHistoryCard } from "./history-card.js";
import { createResumeCard } from "./resume-card.js";
import { createSettingsCard } from "./settings-card.js";
import { createRolloutView } from "./rollout-view.js";
import { createRolloutsPanel, type RolloutsPanel } from "./rollouts-panel.js";
import { createSandboxesCard } from "./sandboxes-card.js";
import { listAll, type Session } from "./session.js";

/** The sandbox list (phases, versions) is re-read this often; operations are pushed, not polled. */
const LIST_REFRESH_MS = 15_000;

export interface DashboardOptions {
  /** The page signed out (the user asked, or the token was rejected: `reason`). */
  readonly onSignOut: (reason?: string) => void;
}

export function showDashboard(app: HTMLElement, { gateway, client, raw, initial }: Session, { onSignOut }: DashboardOptions): void {
  const state = createDashboardState();
  const stopped = state.stopped;

  // This page's id in a shared rollout's lease while it drives one: "dashboard" and a random suffix.
  const driver = `dashboard ${Math.random().toString(16).slice(2, 10)}`;
  // Made after the rollout card, which it acts through; the card asks for it only once it exists.
  let panelRef: RolloutsPanel | undefined;
  const rolloutView = createRolloutView({
    client,
    driver,
    sharedRecord: (id) => (panelRef?.shared() ? panelRef.record(id) : undefined),
    onRunning: (id) => panelRef?.setDriving(id),
    policy: () => editor.policyForRollout(),
    explain: (err) => explain(err, gateway),
    listSandboxes: async () => (await listAll(raw)).map((sb) => ({ name: sb.metadata?.name ?? "", labels: sb.metadata?.labels ?? {} })),
    onCommitted: (sandbox, operationId, policyVersion) => {
      state.sentPolicies.set(operationId, policyVersion);
      if (sandbox === state.selected) operations.render();
    },
    onFinished: () => void refreshList(),
  });
  const panel = (panelRef = createRolloutsPanel({
    client,
    raw,
    driver,
    explain: (err) => explain(err, gateway),
    signal: stopped.signal,
    act: (action, r) => rolloutView.act(action, r),
    show: (r) => void rolloutView.showShared(r),
    onShared: (shared) => rolloutView.setShared(shared),
    onRollouts: () => rolloutView.refresh(),
  }));
  const sandboxes = createSandboxesCard({ state, onSelect: select, onRefresh: () => void refreshList() });
  const resumeCard = createResumeCard({ client, gateway, signal: stopped.signal, changeOf: (v) => operations.changeOf(v) });
  const editor = createPolicyEditor({
    client,
    gateway,
    state,
    readConfig,
    onEnforcement: (view) => operations.setEnforcement(view),
    onPolicyValid: (valid) => rolloutView.setPolicyValid(valid),
    onCommitted: () => {
      operations.render();
      if (state.selected !== undefined) history.show(state.selected);
    },
    refreshOne: (name) => void refreshOne(name),
    resume: (operationId) => resumeCard.resume(operationId),
  });
  const settings = createSettingsCard({ client, gateway, signal: stopped.signal, onChanged: (name) => void refreshOne(name), resume: (id) => resumeCard.resume(id) });
  const history = createHistoryCard({ raw, gateway, signal: stopped.signal });
  const showSettings = (name: string) => {
    const row = state.rows.get(name);
    settings.show(name, row?.config, row?.configError);
  };
  const operations = createOperationsCard({
    raw,
    gateway,
    state,
    onPick: (operationId) => resumeCard.setOperationId(operationId),
    onChanged: () => state.selected !== undefined && void refreshOne(state.selected),
    onUnauthenticated: signOut,
  });

  app.replaceChildren(
    h(
      "header",
      { class: "topbar" },
      h("div", { class: "brand" }, h("span", { class: "logo" }, "◆"), " OpenShell ", h("span", { class: "brand-sub" }, "configuration")),
      h(
        "div",
        { class: "topbar-right" },
        h("span", { class: "gateway", title: `Gateway ${gateway}` }, gateway.replace(/^https?:\/\//, "")),
        h("button", { type: "button", class: "ghost", id: "signout", onclick: () => signOut() }, "Sign out"),
      ),
    ),
    h(
      "main",
      { class: "grid" },
      h("div", { class: "col" }, sandboxes.element, resumeCard.element, panel.element, rolloutView.element),
      h("div", { class: "col" }, editor.element, operations.element, settings.element, history.element),
    ),
  );

  // Sandboxes ---------------------------------------------------------------------------------
  async function readConfig(name: string): Promise<Pick<Row, "config" | "configError">> {
    try {
      return { config: await client.getConfig({ sandbox: name, signal: stopped.signal }), configError: undefined };
    } catch (err) {
      return { config: undefined, configError: explain(err, gateway) };
    }
  }

  async function setSandboxes(list: Sandbox[]): Promise<void> {
    const configs = await Promise.all(list.map((sb) => readConfig(sb.metadata?.name ?? "")));
    const before = new Map(state.rows);
    state.rows.clear();
    list.forEach((sb, i) => {
      const name = sb.metadata?.name ?? "";
      noteSettingKeys(state, name, before.get(name)?.config, configs[i]!.config);
      state.rows.set(name, { sandbox: sb, ...configs[i]! });
    });
    sandboxes.listed(new Date());
    sandboxes.render();
    if (state.selected !== undefined && state.rows.has(state.selected)) showSettings(state.selected);
    if (state.selected === undefined || !state.rows.has(state.selected)) {
      const first = state.rows.keys().next();
      if (!first.done) select(first.value);
    }
  }

  async function refreshList(): Promise<void> {
    try {
      await setSandboxes(await listAll(raw));
    } catch (err) {
      if (stopped.signal.aborted) return;
      if (isUnauthenticated(err)) return signOut(explain(err));
      sandboxes.refreshFailed(explain(err, gateway));
    }
  }

  async function refreshOne(name: string): Promise<void> {
    try {
      const [{ sandbox }, cfg] = await Promise.all([raw.getSandbox({ name, workspaceScope: workspaceScope() }, { signal: stopped.signal }), readConfig(name)]);
      if (!sandbox || !state.rows.has(name)) return;
      noteSettingKeys(state, name, state.rows.get(name)?.config, cfg.config);
      state.rows.set(name, { sandbox, ...cfg });
      sandboxes.render();
      if (name === state.selected) {
        editor.renderMeta();
        operations.render();
        showSettings(name);
      }
    } catch {
      // the periodic refresh catches up
    }
  }

  function select(name: string): void {
    if (name === state.selected) return;
    state.selected = name;
    sandboxes.render();
    editor.show(name);
    operations.show(name);
    showSettings(name);
    history.show(name);
  }

  // Session -----------------------------------------------------------------------------------
  const timer = setInterval(() => document.visibilityState === "visible" && void refreshList(), LIST_REFRESH_MS);

  function signOut(reason?: string): void {
    stopped.abort();
    rolloutView.stop();
    editor.stop();
    resumeCard.stop();
    operations.stop();
    settings.stop();
    clearInterval(timer);
    onSignOut(reason);
  }

  void setSandboxes(initial);
}
