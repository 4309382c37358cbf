// The settings card: the selected sandbox's effective settings (key, type, value, scope: its own,
// or the gateway-wide value that applies), a form that sets one (typed, as the command line's
// --type takes it) at the sandbox's scope (a click on a row fills it in), and ✕ to delete a
// sandbox-scoped one (the global value, if any, applies again). Each change waits for the sandbox's outcome, shown below the form.

import type { ConfigClient, SandboxConfig } from "openshell-config";
import { h, table } from "./dom.js";
import { explain } from "./explain.js";
import { completionView, failureView, renderOutcome, stopOutcome } from "./outcome-panel.js";
import { parseSetting, SETTING_TYPES, settingRows, type SettingType } from "./settings-model.js";

const SETTING_WAIT_MS = 60_000;

export interface SettingsCardOptions {
  readonly client: ConfigClient;
  readonly gateway: string;
  readonly signal: AbortSignal;
  /** A setting changed (or failed to): read the sandbox again. */
  readonly onChanged: (sandbox: string) => void;
  /** Waits again for an operation whose wait timed out. */
  readonly resume: (operationId: string) => void;
}

export interface SettingsCard {
  readonly element: HTMLElement;
  /** Shows the settings of `sandbox` as `config` has them (undefined: not read, with `error`). */
  show(sandbox: string, config: SandboxConfig | undefined, error?: string): void;
  stop(): void;
}

export function createSettingsCard({ client, gateway, signal, onChanged, resume }: SettingsCardOptions): SettingsCard {
  let sandbox: string | undefined;
  const title = h("h2", {}, "Settings");
  const revision = h("span", { class: "muted small", "data-testid": "settings-card-revision" });
  const body = h("tbody", { "data-testid": "setting-rows" });
  const key = h("input", { id: "setting-key", type: "text", placeholder: "key, e.g. log_level", spellcheck: "false", autocomplete: "off" });
  const type = h("select", { id: "setting-type", "aria-label": "type" }, ...SETTING_TYPES.map((t) => h("option", { value: t }, t)));
  const value = h("input", { id: "setting-value", type: "text", placeholder: "value", spellcheck: "false", autocomplete: "off" });
  const set = h("button", { type: "submit", id: "setting-set" }, "Set");
  const problem = h("p", { class: "error small", "data-testid": "setting-error", role: "alert" });
  const out = h("div", { class: "outcome-slot", "data-testid": "setting-outcome" });
  const failure = { explain: (err: unknown) => explain(err, gateway), resume };

  const element = h(
    "section",
    { class: "card", "data-testid": "settings-card" },
    h("div", { class: "card-head wrap" }, h("div", { class: "head-text" }, title, " ", revision)),
    table(["Key", "Type", "Value", "Scope", ""], body, "settings-table"),
    h(
      "form",
      { class: "inline-form settings-form", onsubmit: (ev: Event) => (ev.preventDefault(), void submit()) },
      key,
      type,
      value,
      set,
    ),
    problem,
    out,
  );
  renderOutcome(out, undefined, "Set a setting of this sandbox; it applies at the sandbox's scope.");

  function show(name: string, config: SandboxConfig | undefined, error?: string): void {
    if (name !== sandbox) {
      sandbox = name;
      // Another sandbox: the form starts empty, not with the last one's setting.
      key.value = "";
      value.value = "";
      problem.textContent = "";
      renderOutcome(out, undefined, "Set a setting of this sandbox; it applies at the sandbox's scope.");
    }
    title.textContent = `Settings of ${name}`;
    revision.textContent = config ? `r${config.desired.settingsRevision}` : "";
    const rows = config ? settingRows(config.desired.settings) : [];
    if (config === undefined) body.replaceChildren(h("tr", {}, h("td", { colspan: 5, class: "muted" }, error ?? "Not read yet.")));
    else if (rows.length === 0) body.replaceChildren(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No settings.")));
    else
      body.replaceChildren(
        ...rows.map((r) =>
          h(
            "tr",
            // A click on a row puts its setting in the form, to change it.
            { "data-key": r.key, "data-scope": r.scope, class: "clickable", title: `Edit ${r.key}`, onclick: () => edit(r.key, r.type, r.text) },
            h("td", { class: "mono key" }, r.key),
            h("td", {}, r.type),
            h("td", { class: "mono value" }, r.type === "string" ? JSON.stringify(r.text) : r.text),
            h("td", {}, r.scope),
            h(
              "td",
              { class: "actions" },
              // Only the sandbox's own value can be deleted (the global one, if any, applies again).
              r.scope === "sandbox"
                ? h(
                    "button",
                    {
                      type: "button",
                      class: "ghost icon",
                      "data-action": "delete",
                      "aria-label": `Delete ${r.key}`,
                      title: `Delete ${r.key} (a global value, if any, applies again)`,
                      onclick: (ev: Event) => (ev.stopPropagation(), void change(r.key, undefined)),
                    },
                    "✕",
                  )
                : null,
            ),
          ),
        ),
      );
  }

  function edit(k: string, t: SettingType | "unset", text: string): void {
    key.value = k;
    if (t !== "unset") type.value = t;
    value.value = text;
    value.focus();
  }

  async function submit(): Promise<void> {
    const parsed = parseSetting(key.value.trim(), type.value as SettingType, value.value);
    if (!parsed.ok) {
      problem.textContent = parsed.message;
      (parsed.field === "key" ? key : value).setAttribute("aria-invalid", "true");
      return;
    }
    for (const el of [key, value]) el.removeAttribute("aria-invalid");
    problem.textContent = "";
    await change(parsed.key, parsed.value);
  }

  /** Sets `k` to `v`, or deletes it (`v` undefined), and waits for the sandbox's outcome. */
  async function change(k: string, v: string | boolean | bigint | Uint8Array | undefined): Promise<void> {
    const name = sandbox;
    if (name === undefined) return;
    const what = v === undefined ? `delete setting ${k}` : `setting ${k}`;
    set.disabled = true;
    const started = performance.now();
    renderOutcome(out, { state: "pending", label: "sending…", title: `Sending ${what}…`, change: what, startedAt: started });
    try {
      const wait = { timeoutMs: SETTING_WAIT_MS, signal };
      const res = v === undefined ? await client.updateSettings({ sandbox: name, key: k, delete: true, wait }) : await client.updateSettings({ sandbox: name, key: k, value: v, wait });
      renderOutcome(out, completionView(res.completion, performance.now() - started, what));
    } catch (err) {
      renderOutcome(out, failureView(failure, err, performance.now() - started, undefined, what));
    } finally {
      set.disabled = false;
      onChanged(name);
    }
  }

  return { element, show, stop: () => stopOutcome(out) };
}
