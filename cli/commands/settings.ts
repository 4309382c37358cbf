// `settings set` and `settings delete` (one sandbox setting, upserted or removed), and `settings
// get` and `settings list` (the effective settings, from the SDK's getConfig, with their type and
// whether the sandbox or the global scope sets them).

import type { EffectiveSettingOutput } from "openshell-config";
import type { Command } from "../types.js";
import { EXIT } from "../outcome.js";
import { formatSettingValue, settingJson } from "../setting-format.js";
import { runUpdate } from "./update.js";
import type { CommandContext } from "./context.js";

type SettingsSet = Extract<Command, { name: "settings set" }>;
type SettingsDelete = Extract<Command, { name: "settings delete" }>;
type SettingsGet = Extract<Command, { name: "settings get" }>;
type SettingsList = Extract<Command, { name: "settings list" }>;

export { formatSettingValue } from "../setting-format.js";

export function settingsSet(ctx: CommandContext, cmd: SettingsSet): Promise<number> {
  return runUpdate(ctx, {
    ...cmd,
    what: `setting ${cmd.key}`,
    change: { key: cmd.key, value: cmd.value },
    send: ({ idempotencyKey, signal, wait }) => {
      const update = { sandbox: cmd.sandbox, workspace: cmd.workspace, key: cmd.key, value: cmd.value, idempotencyKey, signal };
      return wait ? ctx.client.updateSettings({ ...update, wait }) : ctx.client.updateSettings(update);
    },
    subject: () => `setting ${cmd.key} of sandbox ${cmd.sandbox}`,
    rows: (res) => [
      ["sandbox", cmd.sandbox],
      ["workspace", cmd.workspace],
      ["key", cmd.key],
      ["value", `${formatSettingValue(cmd.value)} (${cmd.type})`],
      ["settings revision", String(res.settingsRevision)],
    ],
    json: (res) => ({
      sandbox: cmd.sandbox,
      workspace: cmd.workspace ?? null,
      key: cmd.key,
      ...settingJson(cmd.value),
      settingsRevision: res.settingsRevision,
    }),
  });
}

export function settingsDelete(ctx: CommandContext, cmd: SettingsDelete): Promise<number> {
  return runUpdate(ctx, {
    ...cmd,
    what: `deletion of setting ${cmd.key}`,
    change: { key: cmd.key, delete: true },
    send: ({ idempotencyKey, signal, wait }) => {
      const update = { sandbox: cmd.sandbox, workspace: cmd.workspace, key: cmd.key, delete: true as const, idempotencyKey, signal };
      return wait ? ctx.client.updateSettings({ ...update, wait }) : ctx.client.updateSettings(update);
    },
    subject: () => `deletion of setting ${cmd.key} of sandbox ${cmd.sandbox}`,
    rows: (res) => [
      ["sandbox", cmd.sandbox],
      ["workspace", cmd.workspace],
      ["key", cmd.key],
      ["deleted", res.deleted ? "yes" : "no (it was not set)"],
      ["settings revision", String(res.settingsRevision)],
    ],
    json: (res) => ({ sandbox: cmd.sandbox, workspace: cmd.workspace ?? null, key: cmd.key, deleted: res.deleted, settingsRevision: res.settingsRevision }),
  });
}

/** One setting as JSON and YAML print it. */
export function settingEntry(key: string, s: EffectiveSettingOutput) {
  return { key, ...settingJson(s.value), scope: s.scope };
}

function settingRow(key: string, s: EffectiveSettingOutput): string[] {
  return [key, settingJson(s.value).type ?? "-", formatSettingValue(s.value), s.scope];
}

const HEADERS = ["KEY", "TYPE", "VALUE", "SCOPE"];
/** On a terminal a long value is cut first, so that SCOPE stays; piped, -o wide and -o json have it whole. */
const VALUE = HEADERS.indexOf("VALUE");

async function effectiveSettings(ctx: CommandContext, cmd: SettingsGet | SettingsList) {
  const cfg = await ctx.client.getConfig({ sandbox: cmd.sandbox, workspace: cmd.workspace, signal: ctx.signal });
  return { workspace: cfg.workspace ?? "default", settings: Object.entries(cfg.desired.settings).sort(([a], [b]) => a.localeCompare(b)) };
}

export async function settingsGet(ctx: CommandContext, cmd: SettingsGet): Promise<number> {
  const { settings } = await effectiveSettings(ctx, cmd);
  const found = settings.find(([key]) => key === cmd.key);
  if (found === undefined || found[1].value === undefined) {
    ctx.out.error(`setting ${cmd.key} is not set on sandbox ${cmd.sandbox}${settings.length > 0 ? ` (it has ${settings.map(([k]) => k).join(", ")})` : ""}`);
    return EXIT.failed;
  }
  ctx.out.table(HEADERS, [settingRow(...found)], { cut: VALUE });
  ctx.out.json({ sandbox: cmd.sandbox, ...settingEntry(...found) });
  return EXIT.ok;
}

export async function settingsList(ctx: CommandContext, cmd: SettingsList): Promise<number> {
  const { workspace, settings } = await effectiveSettings(ctx, cmd);
  if (settings.length === 0) ctx.out.line(`sandbox ${cmd.sandbox} has no settings`);
  else ctx.out.table(HEADERS, settings.map(([key, s]) => settingRow(key, s)), { cut: VALUE });
  ctx.out.json({ sandbox: cmd.sandbox, workspace, settings: settings.map(([key, s]) => settingEntry(key, s)) });
  return EXIT.ok;
}
