// The policy editor card: the selected sandbox's desired policy as YAML or JSON, validated as it
// is typed, and "Apply policy": commit first (no wait), so that the panel shows the committed
// version and operation id as soon as the gateway has them, then wait for the outcome by the
// update's handle.

import { equals } from "@bufbuild/protobuf";
import type { ConfigClient, UpdateResult } from "openshell-config";
import { SandboxPolicySchema } from "openshell-config/raw";
import { breakable, h } from "./dom.js";
import { explain } from "./explain.js";
import { editorNotice, enforcementChip, type EnforcementView } from "./enforcement.js";
import { completionView, failureView, renderOutcome, stopOutcome, type OutcomeView } from "./outcome-panel.js";
import { selectedRow, viewOf, type DashboardState, type Row } from "./dashboard-state.js";
import { formatPolicy, parsePolicy, type ParsedPolicy, type PolicyFormat } from "./policy.js";

/** How long an update waits for the sandbox before the page hands over to "Resume a wait". */
const UPDATE_WAIT_MS = 30_000;

export interface PolicyEditorOptions {
  readonly client: ConfigClient;
  readonly gateway: string;
  readonly state: DashboardState;
  /** Reads a sandbox's config (desired and enforced), or the reason it cannot. */
  readonly readConfig: (name: string) => Promise<Pick<Row, "config" | "configError">>;
  /** The editor's header changed to this view of the selected sandbox. */
  readonly onEnforcement: (view: EnforcementView | undefined) => void;
  /** Whether the editor holds a policy that can be sent (for "Roll out"). */
  readonly onPolicyValid: (valid: boolean) => void;
  /** An update was committed from here (its operation can now be named). */
  readonly onCommitted: () => void;
  /** Re-reads one sandbox, e.g. after an update. */
  readonly refreshOne: (name: string) => void;
  /** Waits again for an operation whose wait timed out. */
  readonly resume: (operationId: string) => void;
}

export interface PolicyEditor {
  readonly element: HTMLElement;
  /** Loads the policy of the newly selected sandbox. */
  show(name: string): void;
  /** Re-renders the header (the desired version and what the sandbox enforces), and re-validates. */
  renderMeta(): void;
  /** The editor's policy for a rollout, or why it cannot be sent. */
  policyForRollout(): ParsedPolicy;
  stop(): void;
}

export function createPolicyEditor(opts: PolicyEditorOptions): PolicyEditor {
  const { client, gateway, state } = opts;
  let format: PolicyFormat = "yaml";
  /** The editor's content parses (Apply is enabled only then). */
  let editorValid = false;
  let applying = false;
  let typing: ReturnType<typeof setTimeout> | undefined;

  const editorTitle = h("h2", {}, "Policy");
  const editorMeta = h("span", { class: "muted small", "data-testid": "policy-meta" });
  const editorChip = h("span", { class: "chip-slot", "data-testid": "policy-enforcement" });
  const notice = h("div", { class: "notice-slot" });
  const yamlBtn = h("button", { type: "button", class: "seg active", "data-format": "yaml", onclick: () => switchFormat("yaml") }, "YAML");
  const jsonBtn = h("button", { type: "button", class: "seg", "data-format": "json", onclick: () => switchFormat("json") }, "JSON");
  const text = h("textarea", { id: "policy-text", spellcheck: "false", autocomplete: "off", rows: 18, "aria-label": "Policy", disabled: true });
  const validation = h("div", { class: "validation", "data-testid": "validation", role: "status" });
  const applyBtn = h("button", { type: "button", class: "primary", id: "apply", disabled: true, title: "Load a sandbox's policy first", onclick: () => void apply() }, "Apply policy");
  const resetBtn = h("button", { type: "button", id: "reset", disabled: true, onclick: () => void loadEditor(true) }, "Load current");
  const outcome = h("div", { class: "outcome-slot", "data-testid": "update-outcome" });

  const element = h(
    "section",
    { class: "card", "data-testid": "editor" },
    h(
      "div",
      { class: "card-head wrap" },
      h("div", { class: "head-text" }, editorTitle, editorMeta, editorChip),
      h("div", { class: "segmented", role: "group", "aria-label": "Format" }, yamlBtn, jsonBtn),
    ),
    notice,
    text,
    validation,
    h("div", { class: "actions" }, applyBtn, resetBtn, h("span", { class: "muted small" }, `waits up to ${UPDATE_WAIT_MS / 1000} s for the sandbox`)),
    outcome,
  );
  renderOutcome(outcome, undefined);

  const failure = { explain: (err: unknown) => explain(err, gateway), resume: opts.resume };

  /** The header of the editor and of the operations: the desired version and what the sandbox enforces. */
  function renderEditorMeta(): void {
    const row = selectedRow(state);
    const cfg = row?.config;
    editorMeta.textContent = cfg ? `desired v${cfg.desired.policyVersion} · sha256 ${cfg.desired.policyHash.slice(0, 12)}` : "";
    editorMeta.title = cfg ? `sha256 ${cfg.desired.policyHash}` : "";
    const view = row && viewOf(row);
    editorChip.replaceChildren(...(view ? [enforcementChip(view)] : []));
    opts.onEnforcement(view);
    // The editor loads the desired policy: say so when the sandbox does not enforce it.
    const n = view && editorNotice(view);
    notice.replaceChildren(...(n ? [n] : []));
    if (!text.disabled) validate();
  }

  async function loadEditor(fresh: boolean): Promise<void> {
    const name = state.selected;
    if (name === undefined) return;
    if (fresh || state.rows.get(name)?.config === undefined) {
      const cfg = await opts.readConfig(name);
      if (state.rows.has(name)) Object.assign(state.rows.get(name)!, cfg);
    }
    if (name !== state.selected) return;
    const row = state.rows.get(name);
    if (!row?.config) {
      text.value = "";
      text.disabled = true;
      renderEditorMeta();
      setValidation({ ok: false, message: `Cannot read the policy of ${name}: ${row?.configError ?? "unknown error"}` });
      return;
    }
    text.value = formatPolicy(row.config.desired.policy, format);
    text.disabled = false;
    resetBtn.disabled = false;
    renderEditorMeta(); // validates
  }

  /**
   * When the editor holds exactly the selected sandbox's desired policy and the sandbox did not
   * take it (rejected, failing closed, overridden locally), what the validity line must add.
   */
  function notTaken(policy: ParsedPolicy & { ok: true }): string | undefined {
    const row = selectedRow(state);
    const desired = row?.config?.desired.policy;
    if (!row || desired === undefined || !equals(SandboxPolicySchema, policy.policy, desired)) return undefined;
    const view = viewOf(row);
    const v = `v${view.desiredVersion}`;
    const closed = view.enforced.state === "failed-closed";
    if (view.drift?.includes("last-update-failed")) return `Valid format — but the sandbox rejected ${v}${closed ? " and fails closed" : ""}; correct it before applying again.`;
    if (closed) return `Valid format — but the sandbox fails closed with ${v} (it denies all traffic).`;
    if (view.enforced.state === "local-override") return `Valid format — but a local policy in the sandbox wins over ${v}.`;
    return undefined;
  }

  function setValidation(p: ParsedPolicy): void {
    editorValid = p.ok;
    syncButtons(p.ok ? undefined : p.message);
    const warning = p.ok ? notTaken(p) : undefined;
    validation.className = `validation ${!p.ok ? "error" : warning ? "warn" : "ok"}`;
    validation.dataset["valid"] = String(p.ok);
    if (warning) validation.dataset["warning"] = "not-taken";
    else delete validation.dataset["warning"];
    validation.replaceChildren(
      !p.ok ? h("span", {}, h("strong", {}, "✗ Invalid policy: "), breakable(p.message)) : warning ? h("span", {}, h("strong", {}, "⚠ "), warning) : "✓ Valid SandboxPolicy",
    );
  }

  /** Apply (and Roll out) only for a policy that parses, and not while an update is being sent. */
  function syncButtons(invalid?: string): void {
    applyBtn.disabled = applying || text.disabled || !editorValid;
    applyBtn.title = text.disabled ? "Load a sandbox's policy first" : !editorValid ? `Fix the policy first: ${invalid ?? "it is invalid"}` : applying ? "An update is being sent" : "";
    opts.onPolicyValid(!text.disabled && editorValid);
  }

  function validate(): ParsedPolicy {
    const parsed = parsePolicy(text.value, format);
    setValidation(parsed);
    return parsed;
  }

  text.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(validate, 200);
  });

  function switchFormat(next: PolicyFormat): void {
    if (next === format) return;
    const parsed = validate();
    if (!parsed.ok) {
      setValidation({ ok: false, message: `fix the policy before switching to ${next.toUpperCase()}: ${parsed.message}` });
      return;
    }
    format = next;
    text.value = formatPolicy(parsed.policy, format);
    yamlBtn.classList.toggle("active", format === "yaml");
    jsonBtn.classList.toggle("active", format === "json");
    validate();
  }

  async function apply(): Promise<void> {
    const sandbox = state.selected;
    if (sandbox === undefined) return;
    clearTimeout(typing);
    const parsed = validate();
    if (!parsed.ok) {
      renderOutcome(outcome, { state: "invalid", label: "not sent", title: "Not sent: the policy is invalid.", detail: parsed.message });
      text.focus();
      return;
    }
    applying = true;
    syncButtons();
    const started = performance.now();
    const elapsed = () => performance.now() - started;
    renderOutcome(outcome, { state: "committing", title: `Sending the policy to ${sandbox}…`, startedAt: started });
    let committed: UpdateResult;
    try {
      committed = await client.updatePolicy({ sandbox, policy: parsed.policy, signal: state.stopped.signal });
    } catch (err) {
      renderOutcome(outcome, failureView(failure, err, elapsed()));
      applying = false;
      syncButtons();
      return;
    }
    const policyVersion = committed.policyVersion;
    const operationId = committed.operation?.operationId || committed.handle.operationId || undefined;
    if (operationId) state.sentPolicies.set(operationId, policyVersion);
    const pending = (label?: string, title?: string): OutcomeView => ({
      state: "pending",
      label,
      title: title ?? `Policy v${policyVersion} is committed; waiting for ${sandbox} to apply it…`,
      operationId,
      change: `policy v${policyVersion}`,
      startedAt: started,
    });
    renderOutcome(outcome, pending());
    opts.onCommitted();
    opts.refreshOne(sandbox); // the list shows v<N> being applied
    try {
      const completion = await client.awaitCompletion(committed.handle, {
        timeoutMs: UPDATE_WAIT_MS,
        signal: state.stopped.signal,
        onProgress: (e) => {
          if (e.type === "retry") renderOutcome(outcome, pending("retrying", `The gateway is unreachable; retrying (attempt ${e.attempt})…`));
        },
      });
      renderOutcome(outcome, completionView(completion, elapsed(), `policy v${policyVersion}`));
    } catch (err) {
      renderOutcome(outcome, failureView(failure, err, elapsed(), operationId, `policy v${policyVersion}`));
    } finally {
      applying = false;
      syncButtons();
    }
    opts.refreshOne(sandbox);
  }

  return {
    element,
    show(name) {
      editorTitle.textContent = `Policy of ${name}`;
      renderOutcome(outcome, undefined);
      void loadEditor(false);
    },
    renderMeta: renderEditorMeta,
    policyForRollout() {
      clearTimeout(typing);
      const parsed = validate();
      return parsed.ok ? parsed : { ok: false, message: `the policy in the editor is invalid: ${parsed.message}` };
    },
    stop: () => stopOutcome(outcome),
  };
}
