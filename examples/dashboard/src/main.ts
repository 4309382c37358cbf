// The dashboard: sign in with a bearer token, list sandboxes, watch one sandbox's operations live,
// edit and send its policy (to one sandbox, or rolled out to all with a label: rollout-view.ts),
// and resume a wait by operation id. Everything goes through the SDK:
// the curated client for updates and waits, `client.raw(OpenShell)` for the rest.
//
// The token lives in sessionStorage only (gone when the tab closes) and is never logged or shown.

import "./style.css";
import { equals } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import {
  CompletionTimeoutError,
  InvalidArgumentError,
  NotFoundError,
  OpenShellConfigError,
  createConfigClient,
  type Completion,
  type ConfigClient,
  type SandboxConfig,
  type UpdateResult,
} from "openshell-config";
import { OpenShell, SandboxPolicySchema, workspaceScope, type Sandbox } from "openshell-config/raw";
import { breakable, byId, h } from "./dom.js";
import { formatPolicy, parsePolicy, type ParsedPolicy, type PolicyFormat } from "./policy.js";
import {
  badge,
  badgeStateOf,
  describe,
  fromStatus,
  fromWire,
  fullTime,
  labelOperations,
  timeEl,
  timeText,
  type BadgeState,
  type OperationView,
} from "./status.js";
import { createRolloutView } from "./rollout-view.js";
import { driftBadges, editorNotice, enforcementChip, fromConfig, fromListed, phaseCell, type EnforcementView } from "./enforcement.js";

const TOKEN_KEY = "openshell-dashboard.token";
const GATEWAY_KEY = "openshell-dashboard.gateway";
/** How long an update waits for the sandbox before the page hands over to "Resume a wait". */
const UPDATE_WAIT_MS = 30_000;
const RESUME_WAIT_MS = 60_000;
/** The sandbox list (phases, versions) is re-read this often; operations are pushed, not polled. */
const LIST_REFRESH_MS = 15_000;

type Raw = Client<typeof OpenShell>;

/** The timer that keeps an outcome panel's elapsed time counting, per panel. */
const tickers = new WeakMap<HTMLElement, ReturnType<typeof setInterval>>();
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)}\u00a0s`;

const app = byId("app");

function defaultGateway(): string {
  const configured = __OPENSHELL_GATEWAY_URL__;
  return configured === "" ? location.origin : configured;
}

// ---------------------------------------------------------------------------------------------
// Signing in
// ---------------------------------------------------------------------------------------------

/** A message for any error, naming what the user can do about it. Never includes the token. */
function explain(err: unknown, gateway?: string): string {
  if (err instanceof OpenShellConfigError) {
    if (err instanceof InvalidArgumentError && err.field) return `${err.message} (field ${err.field})`;
    return err.message;
  }
  const e = ConnectError.from(err);
  switch (e.code) {
    case Code.Unauthenticated:
      return "The gateway rejected the token (unauthenticated).";
    case Code.PermissionDenied:
      return `Permission denied: ${e.rawMessage}`;
    case Code.NotFound:
      return e.rawMessage;
    case Code.Unavailable:
    case Code.Unknown:
      if (/fetch|network|load failed/i.test(e.rawMessage)) {
        return `Cannot reach the gateway${gateway ? ` at ${gateway}` : ""}. Is it running, and does it allow this page's origin (${location.origin}) with --cors-origin?`;
      }
  }
  return `${Code[e.code] ?? "error"}: ${e.rawMessage}`;
}

function showSignIn(error?: string, gateway = localStorage.getItem(GATEWAY_KEY) ?? defaultGateway()): void {
  const message = h("p", { class: "form-error", role: "alert", "data-testid": "signin-error" }, error ?? "");
  const gatewayInput = h("input", { id: "gateway", name: "gateway", type: "url", required: true, value: gateway, spellcheck: "false" });
  const tokenInput = h("input", { id: "token", name: "token", type: "password", required: true, autocomplete: "off", placeholder: "admin-…" });
  const button = h("button", { type: "submit", class: "primary" }, "Sign in");
  const form = h(
    "form",
    {
      class: "card signin",
      "data-testid": "signin",
      onsubmit: (ev) => {
        ev.preventDefault();
        button.disabled = true;
        message.textContent = "";
        void signIn(gatewayInput.value.trim(), tokenInput.value.trim()).catch((err: unknown) => {
          button.disabled = false;
          message.textContent = explain(err, gatewayInput.value.trim());
        });
      },
    },
    h("h1", {}, "OpenShell configuration"),
    h("p", { class: "muted" }, "Sign in to a gateway with a bearer token. The token stays in this tab's session storage."),
    h("label", { for: "gateway" }, "Gateway URL"),
    gatewayInput,
    h("label", { for: "token" }, "Token"),
    tokenInput,
    button,
    message,
  );
  app.replaceChildren(h("main", { class: "signin-page" }, form));
  (gateway ? tokenInput : gatewayInput).focus();
}

async function signIn(gateway: string, token: string): Promise<void> {
  let url: URL;
  try {
    url = new URL(gateway);
  } catch {
    throw new Error(`${JSON.stringify(gateway)} is not a URL (e.g. http://127.0.0.1:8080)`);
  }
  const baseUrl = url.href.replace(/\/$/, "");
  // Throws InsecureTransportError for a token over plain http to another machine.
  const client = createConfigClient({ baseUrl, token });
  const raw = client.raw(OpenShell);
  const first = await listAll(raw); // proves the token before anything is stored
  sessionStorage.setItem(TOKEN_KEY, token);
  localStorage.setItem(GATEWAY_KEY, baseUrl);
  showDashboard(baseUrl, client, raw, first);
}

async function listAll(raw: Raw): Promise<Sandbox[]> {
  const out: Sandbox[] = [];
  let pageToken = "";
  do {
    const page = await raw.listSandboxes({ pageSize: 200, pageToken, workspaceScope: workspaceScope() });
    out.push(...page.sandboxes);
    pageToken = page.nextPageToken;
  } while (pageToken !== "" && out.length < 2_000);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The dashboard
// ---------------------------------------------------------------------------------------------

interface Row {
  sandbox: Sandbox;
  /** Desired and enforced (the SDK's getConfig); undefined when it could not be read. */
  config: SandboxConfig | undefined;
  configError: string | undefined;
}

/** What the row shows of desired versus enforced: getConfig's answer, else the list entry's own fields. */
const viewOf = (row: Row): EnforcementView => (row.config ? fromConfig(row.config) : fromListed(row.sandbox));

interface OutcomeView {
  readonly state: BadgeState;
  readonly label?: string;
  readonly title: string;
  readonly detail?: string | undefined;
  readonly operationId?: string | undefined;
  /** What the operation changes ("policy v3", "setting log_level"), once known. */
  readonly change?: string | undefined;
  readonly outcome?: string | undefined;
  /** Time spent so far; while `startedAt` is given the panel keeps counting. */
  readonly elapsedMs?: number | undefined;
  readonly startedAt?: number | undefined;
  readonly action?: HTMLElement | undefined;
}

function showDashboard(gateway: string, client: ConfigClient, raw: Raw, initial: Sandbox[]): void {
  const rows = new Map<string, Row>();
  const ops = new Map<string, OperationView>();
  let selected: string | undefined;
  let watchCtl: AbortController | undefined;
  let format: PolicyFormat = "yaml";
  let flash: string | undefined;
  /** Operations committed from this page, by id: the policy version committed (the wire record does not say). */
  const sentPolicies = new Map<string, number>();
  /** Per sandbox: the setting keys seen changing to each settings revision (two reads of its config). */
  const settingKeys = new Map<string, Map<bigint, string[]>>();
  /** The editor's content parses (Apply is enabled only then). */
  let editorValid = false;
  let applying = false;
  const stopped = new AbortController();

  // Layout ------------------------------------------------------------------------------------
  const listBody = h("tbody", { "data-testid": "sandbox-rows" });
  const listNote = h("p", { class: "muted small", "data-testid": "list-note" });
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
  const opsTitle = h("h2", {}, "Operations");
  const opsChip = h("span", { class: "chip-slot", "data-testid": "operations-enforcement" });
  const live = h("span", { class: "live", "data-live": "idle", "data-testid": "live" }, "not watching");
  const opsBody = h("tbody", { "data-testid": "operation-rows" });
  const resumeInput = h("input", { id: "resume-id", type: "text", placeholder: "operation id, e.g. 0f3c2d9e-…", spellcheck: "false", autocomplete: "off" });
  const resumeBtn = h("button", { type: "submit", id: "resume" }, "Wait for outcome");
  const resumeOut = h("div", { class: "outcome-slot", "data-testid": "resume-outcome" });

  const rolloutView = createRolloutView({
    client,
    policy: () => {
      clearTimeout(typing);
      const parsed = validate();
      return parsed.ok ? parsed : { ok: false, message: `the policy in the editor is invalid: ${parsed.message}` };
    },
    explain: (err) => explain(err, gateway),
    onCommitted: (sandbox, operationId, policyVersion) => {
      sentPolicies.set(operationId, policyVersion);
      if (sandbox === selected) renderOps();
    },
    onFinished: () => void refreshList(),
  });

  const table = (head: string[], body: HTMLElement, cls?: string) =>
    h("table", { class: cls }, h("thead", {}, h("tr", {}, ...head.map((c) => h("th", {}, c)))), body);

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
      h(
        "div",
        { class: "col" },
        h(
          "section",
          { class: "card", "data-testid": "sandboxes" },
          h("div", { class: "card-head" }, h("h2", {}, "Sandboxes"), h("button", { type: "button", class: "ghost", id: "refresh", onclick: () => void refreshList() }, "Refresh")),
          table(["Name", "Phase", "Policy", "Settings"], listBody, "sandbox-table"),
          listNote,
        ),
        h(
          "section",
          { class: "card", "data-testid": "resume-card" },
          h("div", { class: "card-head" }, h("h2", {}, "Resume a wait")),
          h("p", { class: "muted small" }, "Wait for the outcome of any operation by its id, e.g. after a wait timed out or from another session."),
          h("form", { class: "inline-form", onsubmit: (ev: Event) => (ev.preventDefault(), void resume()) }, resumeInput, resumeBtn),
          resumeOut,
        ),
        rolloutView.element,
      ),
      h(
        "div",
        { class: "col" },
        h(
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
        ),
        h(
          "section",
          { class: "card", "data-testid": "operations" },
          h("div", { class: "card-head wrap" }, h("div", { class: "head-text" }, opsTitle, opsChip), live),
          table(["Operation", "Change", "State", "Detail", "Updated"], opsBody, "ops-table"),
        ),
      ),
    ),
  );
  renderOutcome(outcome, undefined);
  renderOutcome(resumeOut, undefined, "Operation ids are listed under Operations; click one to copy it here.");

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
    const before = new Map(rows);
    rows.clear();
    list.forEach((sb, i) => {
      const name = sb.metadata?.name ?? "";
      noteSettingKeys(name, before.get(name)?.config, configs[i]!.config);
      rows.set(name, { sandbox: sb, ...configs[i]! });
    });
    const now = new Date();
    listNote.textContent = rows.size === 0 ? "No sandboxes in this workspace." : `Updated ${timeText(now)}`;
    listNote.title = fullTime(now) ?? "";
    renderList();
    if (selected === undefined || !rows.has(selected)) {
      const first = rows.keys().next();
      if (!first.done) select(first.value);
    }
  }

  async function refreshList(): Promise<void> {
    try {
      await setSandboxes(await listAll(raw));
    } catch (err) {
      if (stopped.signal.aborted) return;
      if (ConnectError.from(err).code === Code.Unauthenticated) return signOut(explain(err));
      listNote.textContent = `Could not refresh: ${explain(err, gateway)}`;
    }
  }

  async function refreshOne(name: string): Promise<void> {
    try {
      const [{ sandbox }, cfg] = await Promise.all([raw.getSandbox({ name, workspaceScope: workspaceScope() }, { signal: stopped.signal }), readConfig(name)]);
      if (!sandbox || !rows.has(name)) return;
      noteSettingKeys(name, rows.get(name)?.config, cfg.config);
      rows.set(name, { sandbox, ...cfg });
      renderList();
      if (name === selected) {
        renderEditorMeta();
        renderOps();
      }
    } catch {
      // the periodic refresh catches up
    }
  }

  // The wire record of an operation does not name the setting it changed: when two reads of a
  // sandbox's config are one settings revision apart, the keys whose value differs are that
  // revision's (an operation for a revision seen only in history shows its revision instead).
  function noteSettingKeys(name: string, before: SandboxConfig | undefined, after: SandboxConfig | undefined): void {
    if (!before || !after || after.desired.settingsRevision !== before.desired.settingsRevision + 1n) return;
    const a = before.desired.settings;
    const b = after.desired.settings;
    const text = (v: unknown) => (v instanceof Uint8Array ? `bytes:${[...v].join(",")}` : `${typeof v}:${String(v)}`);
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => a[k]?.scope !== b[k]?.scope || text(a[k]?.value) !== text(b[k]?.value));
    if (keys.length === 0) return;
    if (!settingKeys.has(name)) settingKeys.set(name, new Map());
    settingKeys.get(name)!.set(after.desired.settingsRevision, keys.sort());
  }

  function renderList(): void {
    listBody.replaceChildren(
      ...[...rows.values()].map((row) => {
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
            class: name === selected ? "selected" : undefined,
            tabindex: 0,
            onclick: () => select(name),
            onkeydown: (e) => (e as KeyboardEvent).key === "Enter" && select(name),
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

  // Selection, editor -------------------------------------------------------------------------
  function select(name: string): void {
    if (name === selected) return;
    selected = name;
    renderList();
    editorTitle.textContent = `Policy of ${name}`;
    opsTitle.textContent = `Operations of ${name}`;
    renderOutcome(outcome, undefined);
    void loadEditor(false);
    startWatch(name);
  }

  /** The header of the editor and of the operations: the desired version and what the sandbox enforces. */
  function renderEditorMeta(): void {
    const row = selected === undefined ? undefined : rows.get(selected);
    const cfg = row?.config;
    editorMeta.textContent = cfg ? `desired v${cfg.desired.policyVersion} · sha256 ${cfg.desired.policyHash.slice(0, 12)}` : "";
    editorMeta.title = cfg ? `sha256 ${cfg.desired.policyHash}` : "";
    const view = row && viewOf(row);
    editorChip.replaceChildren(...(view ? [enforcementChip(view)] : []));
    opsChip.replaceChildren(...(view ? [enforcementChip(view)] : []));
    // The editor loads the desired policy: say so when the sandbox does not enforce it.
    const n = view && editorNotice(view);
    notice.replaceChildren(...(n ? [n] : []));
    if (!text.disabled) validate();
  }

  async function loadEditor(fresh: boolean): Promise<void> {
    const name = selected;
    if (name === undefined) return;
    if (fresh || rows.get(name)?.config === undefined) {
      const cfg = await readConfig(name);
      if (rows.has(name)) Object.assign(rows.get(name)!, cfg);
    }
    if (name !== selected) return;
    const row = rows.get(name);
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
    const row = selected === undefined ? undefined : rows.get(selected);
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
    rolloutView.setPolicyValid(!text.disabled && editorValid);
  }

  function validate(): ParsedPolicy {
    const parsed = parsePolicy(text.value, format);
    setValidation(parsed);
    return parsed;
  }

  let typing: ReturnType<typeof setTimeout> | undefined;
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

  // Updates -----------------------------------------------------------------------------------
  // Commit first (no wait), so that the panel shows the committed version and operation id as
  // soon as the gateway has them, then wait for the outcome by the update's handle.
  async function apply(): Promise<void> {
    const sandbox = selected;
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
      committed = await client.updatePolicy({ sandbox, policy: parsed.policy, signal: stopped.signal });
    } catch (err) {
      renderOutcome(outcome, failureView(err, elapsed()));
      applying = false;
      syncButtons();
      return;
    }
    const policyVersion = committed.policyVersion;
    const operationId = committed.operation?.operationId || committed.handle.operationId || undefined;
    if (operationId) sentPolicies.set(operationId, policyVersion);
    const pending = (label?: string, title?: string): OutcomeView => ({
      state: "pending",
      label,
      title: title ?? `Policy v${policyVersion} is committed; waiting for ${sandbox} to apply it…`,
      operationId,
      change: `policy v${policyVersion}`,
      startedAt: started,
    });
    renderOutcome(outcome, pending());
    renderOps();
    void refreshOne(sandbox); // the list shows v<N> being applied
    try {
      const completion = await client.awaitCompletion(committed.handle, {
        timeoutMs: UPDATE_WAIT_MS,
        signal: stopped.signal,
        onProgress: (e) => {
          if (e.type === "retry") renderOutcome(outcome, pending("retrying", `The gateway is unreachable; retrying (attempt ${e.attempt})…`));
        },
      });
      renderOutcome(outcome, completionView(completion, elapsed(), `policy v${policyVersion}`));
    } catch (err) {
      renderOutcome(outcome, failureView(err, elapsed(), operationId, `policy v${policyVersion}`));
    } finally {
      applying = false;
      syncButtons();
    }
    void refreshOne(sandbox);
  }

  async function resume(): Promise<void> {
    const operationId = resumeInput.value.trim();
    if (operationId === "") {
      renderOutcome(resumeOut, { state: "invalid", label: "missing", title: "Enter an operation id." });
      return;
    }
    resumeBtn.disabled = true;
    const started = performance.now();
    renderOutcome(resumeOut, { state: "pending", label: "waiting…", title: "Waiting for the outcome…", operationId, startedAt: started });
    try {
      const completion = await client.awaitCompletion(
        { operationId },
        {
          timeoutMs: RESUME_WAIT_MS,
          signal: stopped.signal,
          onProgress: (e) => {
            if (e.type !== "state") return;
            const v = fromStatus(e.status);
            const change = changeOf(v);
            renderOutcome(resumeOut, { state: "pending", title: describe(v, change), operationId, change: change ?? (v.target || undefined), startedAt: started });
          },
        },
      );
      renderOutcome(resumeOut, completionView(completion, performance.now() - started, changeOf(fromStatus(completion))));
    } catch (err) {
      renderOutcome(resumeOut, failureView(err, performance.now() - started, operationId));
    } finally {
      resumeBtn.disabled = false;
    }
  }

  /**
   * What an operation changed, when this page can tell (it is listed under Operations, or was
   * sent from here); undefined otherwise: a resumed id may be a policy or a setting change.
   */
  function changeOf(v: OperationView): string | undefined {
    const sent = sentPolicies.get(v.operationId);
    if (sent !== undefined) return `policy v${sent}`;
    if (!ops.has(v.operationId)) return undefined;
    const label = labelOperations(ops.values(), { sentPolicies, settingKeys: (selected !== undefined && settingKeys.get(selected)) || new Map() }).get(v.operationId);
    return label && label.kind !== "unknown" ? label.label : undefined;
  }

  /** `change`: what the operation changed; when unknown, the panel names the target revision instead. */
  function completionView(c: Completion, elapsedMs: number, change: string | undefined): OutcomeView {
    const v = fromStatus(c);
    return { state: badgeStateOf(v), title: describe(v, change), detail: c.error, operationId: c.operationId, change: change ?? (v.target || undefined), outcome: c.outcome, elapsedMs };
  }

  function failureView(err: unknown, elapsedMs: number, operationId?: string, change?: string): OutcomeView {
    if (err instanceof CompletionTimeoutError) {
      const id = err.operationId ?? operationId;
      return {
        state: "timeout",
        title: `The wait ended here after ${Math.round(elapsedMs / 1000)} s; the operation continues at the gateway.`,
        operationId: id,
        change,
        elapsedMs,
        action: id ? h("button", { type: "button", onclick: () => ((resumeInput.value = id), void resume()) }, "Resume the wait") : undefined,
      };
    }
    if (err instanceof NotFoundError) return { state: "rejected", label: "not found", title: "No such operation or sandbox in your workspace.", detail: err.message, operationId, elapsedMs };
    return { state: "rejected", title: "The gateway refused the request.", detail: explain(err, gateway), operationId, change, elapsedMs };
  }

  // Operations, live --------------------------------------------------------------------------
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
        if (ConnectError.from(err).code === Code.Unauthenticated) return signOut(explain(err));
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
    if (!initial && selected !== undefined) void refreshOne(selected);
  }

  function renderOps(): void {
    const list = [...ops.values()].sort((a, b) => (b.createdAt?.getTime() ?? 0) - (a.createdAt?.getTime() ?? 0)).slice(0, 50);
    if (list.length === 0) {
      opsBody.replaceChildren(h("tr", {}, h("td", { colspan: 5, class: "muted empty" }, "No operations yet. Apply a policy to create one.")));
      return;
    }
    const labels = labelOperations(ops.values(), { sentPolicies, settingKeys: (selected !== undefined && settingKeys.get(selected)) || new Map() });
    opsBody.replaceChildren(
      ...list.map((v) => {
        const state = badgeStateOf(v);
        const outcomeNote = v.outcome !== "unspecified" && v.outcome !== v.state ? v.outcome : "";
        const label = labels.get(v.operationId);
        // Only a failure is an error; superseded, inactive and cancelled explain themselves in grey.
        const errorClass = state === "failed" ? "error-text" : state === "degraded" ? "warn-text" : "note-text";
        return h(
          "tr",
          { "data-operation-id": v.operationId, "data-state": state, "data-kind": label?.kind, class: v.operationId === flash ? "flash" : undefined },
          h(
            "td",
            { class: "op-cell" },
            h("button", { type: "button", class: "op-id", title: `${v.operationId}: click to resume its wait`, onclick: () => (resumeInput.value = v.operationId) }, v.operationId.slice(0, 8)),
          ),
          h(
            "td",
            { class: "target", "data-testid": "operation-change", title: [label?.title, v.target].filter(Boolean).join(" · ") || undefined },
            label?.label ?? (v.target || "—"),
          ),
          h("td", { class: "state-cell" }, badge(state)),
          h("td", { class: "detail" }, outcomeNote && h("div", { class: "muted small" }, outcomeNote), v.error && h("div", { class: errorClass }, breakable(v.error))),
          h("td", { class: "small muted when", "data-testid": "operation-time" }, timeEl(v.updatedAt ?? v.createdAt)),
        );
      }),
    );
  }

  // Outcome panels ----------------------------------------------------------------------------
  function renderOutcome(slot: HTMLElement, o: OutcomeView | undefined, empty = "No update sent from this page yet."): void {
    clearInterval(tickers.get(slot));
    if (o === undefined) {
      slot.replaceChildren(h("p", { class: "muted small" }, empty));
      return;
    }
    const elapsed = h("span", { "data-testid": "elapsed" });
    const meta: (Node | string)[] = [];
    if (o.change) meta.push(h("span", { "data-testid": "outcome-change" }, o.change));
    if (o.operationId) meta.push(h("span", {}, "operation ", h("code", { "data-testid": "operation-id" }, o.operationId)));
    if (o.outcome && o.outcome !== "unspecified") meta.push(`outcome ${o.outcome}`);
    if (o.elapsedMs !== undefined || o.startedAt !== undefined) meta.push(elapsed);
    const tick = () => (elapsed.textContent = seconds(o.startedAt !== undefined ? performance.now() - o.startedAt : o.elapsedMs!));
    tick();
    if (o.startedAt !== undefined) tickers.set(slot, setInterval(tick, 500));
    slot.replaceChildren(
      h(
        "div",
        { class: `outcome outcome-${o.state}`, "data-state": o.state },
        badge(o.state, o.label),
        h(
          "div",
          { class: "outcome-body" },
          h("p", { class: "outcome-title" }, o.title),
          o.detail && h("p", { class: "outcome-detail", "data-testid": "outcome-detail" }, breakable(o.detail)),
          meta.length > 0 && h("p", { class: "muted small outcome-meta" }, ...meta.flatMap((m, i) => (i === 0 ? [m] : [" · ", m]))),
          o.action,
        ),
      ),
    );
  }

  // Session -----------------------------------------------------------------------------------
  const timer = setInterval(() => document.visibilityState === "visible" && void refreshList(), LIST_REFRESH_MS);

  function signOut(reason?: string): void {
    stopped.abort();
    rolloutView.stop();
    for (const slot of [outcome, resumeOut]) clearInterval(tickers.get(slot));
    watchCtl?.abort();
    clearInterval(timer);
    sessionStorage.removeItem(TOKEN_KEY);
    showSignIn(reason, gateway);
  }

  void setSandboxes(initial);
}

// ---------------------------------------------------------------------------------------------

const savedToken = sessionStorage.getItem(TOKEN_KEY);
if (savedToken) {
  const gateway = localStorage.getItem(GATEWAY_KEY) ?? defaultGateway();
  app.replaceChildren(h("p", { class: "muted loading" }, "Signing in…"));
  signIn(gateway, savedToken).catch((err: unknown) => {
    sessionStorage.removeItem(TOKEN_KEY);
    showSignIn(explain(err, gateway), gateway);
  });
} else {
  showSignIn();
}
