// What the dashboard knows while signed in, as plain data shared by its cards: the sandboxes with
// their configs, the selected one, and what this page learned about operations that the wire
// records do not say (the policy version sent, the setting keys changed).

import type { SandboxConfig } from "openshell-config";
import type { Sandbox } from "openshell-config/raw";
import { fromConfig, fromListed, type EnforcementView } from "./enforcement.js";
import type { OperationKnowledge } from "./status.js";

export interface Row {
  sandbox: Sandbox;
  /** Desired and enforced (the SDK's getConfig); undefined when it could not be read. */
  config: SandboxConfig | undefined;
  configError: string | undefined;
}

export interface DashboardState {
  readonly rows: Map<string, Row>;
  selected: string | undefined;
  /** Operations committed from this page, by id: the policy version committed (the wire record does not say). */
  readonly sentPolicies: Map<string, number>;
  /** Per sandbox: the setting keys seen changing to each settings revision (two reads of its config). */
  readonly settingKeys: Map<string, Map<bigint, string[]>>;
  /** Aborted when the page signs out: ends every request and wait. */
  readonly stopped: AbortController;
}

export function createDashboardState(): DashboardState {
  return { rows: new Map(), selected: undefined, sentPolicies: new Map(), settingKeys: new Map(), stopped: new AbortController() };
}

/** What the row shows of desired versus enforced: getConfig's answer, else the list entry's own fields. */
export const viewOf = (row: Row): EnforcementView => (row.config ? fromConfig(row.config) : fromListed(row.sandbox));

export const selectedRow = (state: DashboardState): Row | undefined => (state.selected === undefined ? undefined : state.rows.get(state.selected));

/** What labelOperations needs to name the selected sandbox's operations. */
export const labelContext = (state: DashboardState): OperationKnowledge => ({
  sentPolicies: state.sentPolicies,
  settingKeys: (state.selected !== undefined && state.settingKeys.get(state.selected)) || new Map(),
});

// The wire record of an operation does not name the setting it changed: when two reads of a
// sandbox's config are one settings revision apart, the keys whose value differs are that
// revision's (an operation for a revision seen only in history shows its revision instead).
export function noteSettingKeys(state: DashboardState, name: string, before: SandboxConfig | undefined, after: SandboxConfig | undefined): void {
  if (!before || !after || after.desired.settingsRevision !== before.desired.settingsRevision + 1n) return;
  const a = before.desired.settings;
  const b = after.desired.settings;
  const text = (v: unknown) => (v instanceof Uint8Array ? `bytes:${[...v].join(",")}` : `${typeof v}:${String(v)}`);
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => a[k]?.scope !== b[k]?.scope || text(a[k]?.value) !== text(b[k]?.value));
  if (keys.length === 0) return;
  if (!state.settingKeys.has(name)) state.settingKeys.set(name, new Map());
  state.settingKeys.get(name)!.set(after.desired.settingsRevision, keys.sort());
}
