// `settings set` and `settings delete`: one sandbox setting, upserted or removed.

import type { SettingOutput, SettingInput } from "openshell-config";
import type { Command } from "../args.js";
import { runUpdate } from "./update.js";
import type { CommandContext } from "./context.js";

type SettingsSet = Extract<Command, { name: "settings set" }>;
type SettingsDelete = Extract<Command, { name: "settings delete" }>;

/** A setting value for people: strings quoted, bytes as base64. */
export function formatSettingValue(value: SettingInput | SettingOutput | undefined): string {
  if (value === undefined) return "(unset)";
  if (typeof value === "string") return JSON.stringify(value);
  if (value instanceof Uint8Array) return `base64:${Buffer.from(value).toString("base64")}`;
  return String(value);
}

/** A setting value for JSON: bytes as base64, 64-bit integers as decimal strings. */
function jsonValue(value: SettingInput): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value).toString("base64");
  if (typeof value === "bigint") return value.toString();
  return value;
}

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
      type: cmd.type,
      value: jsonValue(cmd.value),
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
