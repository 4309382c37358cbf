// The settings card's model, without a page: a setting's value as text and type (as the command
// line's --value and --type take them: string, bool, int, bytes-base64) ⇄ the SDK's typed value,
// checked before anything is sent, with errors that name the field.

import type { EffectiveSettingOutput } from "openshell-config";

export const SETTING_TYPES = ["string", "bool", "int", "bytes-base64"] as const;
export type SettingType = (typeof SETTING_TYPES)[number];

/** What the gateway keeps as a key (256 bytes at most, printable, no surrounding spaces). */
const KEY = /^[^\s\p{Cc}](?:[^\p{Cc}]*[^\s\p{Cc}])?$/u;
const MAX_KEY_BYTES = 256;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

export type ParsedSetting =
  | { readonly ok: true; readonly key: string; readonly value: string | boolean | bigint | Uint8Array }
  | { readonly ok: false; readonly field: "key" | "value"; readonly message: string };

/** Checks the form's key and value for `type`; never throws. */
export function parseSetting(key: string, type: SettingType, text: string): ParsedSetting {
  if (key === "") return { ok: false, field: "key", message: "key: give the setting's key" };
  if (new TextEncoder().encode(key).length > MAX_KEY_BYTES || !KEY.test(key)) {
    return { ok: false, field: "key", message: `key: at most ${MAX_KEY_BYTES} bytes of printable text, without spaces around it` };
  }
  switch (type) {
    case "string":
      return { ok: true, key, value: text };
    case "bool":
      if (text === "true" || text === "false") return { ok: true, key, value: text === "true" };
      return { ok: false, field: "value", message: `value: a bool is true or false, not "${text}"` };
    case "int": {
      if (!/^-?\d+$/.test(text.trim())) return { ok: false, field: "value", message: `value: an int is a whole number such as 64 or -5, not "${text}"` };
      const n = BigInt(text.trim());
      if (n < INT64_MIN || n > INT64_MAX) return { ok: false, field: "value", message: "value: out of range for a 64-bit int" };
      return { ok: true, key, value: n };
    }
    case "bytes-base64": {
      const t = text.trim();
      if (t.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(t)) return { ok: false, field: "value", message: "value: bytes are given as base64 (e.g. aGVsbG8=)" };
      const bin = atob(t);
      return { ok: true, key, value: Uint8Array.from(bin, (c) => c.charCodeAt(0)) };
    }
  }
}

/** A stored value as the form shows it: its type and its text (base64 for bytes). */
export function settingText(s: EffectiveSettingOutput): { readonly type: SettingType | "unset"; readonly text: string } {
  const v = s.value;
  if (v === undefined) return { type: "unset", text: "" };
  if (typeof v === "boolean") return { type: "bool", text: String(v) };
  if (typeof v === "bigint") return { type: "int", text: v.toString() };
  if (v instanceof Uint8Array) return { type: "bytes-base64", text: btoa(String.fromCharCode(...v)) };
  return { type: "string", text: v };
}

/** The settings, sorted by key, as rows to show. */
export function settingRows(settings: Readonly<Record<string, EffectiveSettingOutput>>): { key: string; type: SettingType | "unset"; text: string; scope: string }[] {
  return Object.keys(settings)
    .sort()
    .map((key) => ({ key, ...settingText(settings[key]!), scope: settings[key]!.scope }));
}
