// Setting values as the command line prints them, with their type kept. Text: strings quoted
// (`"64"`), integers bare (`64`), booleans `true`/`false`, bytes `base64:AQID`. JSON and YAML:
// `{ "type": "int", "value": "64" }`, one shape for every type, the type named as `--type` names
// it (string, bool, int, bytes-base64) and the value as `--value` takes it: a JSON string for
// string, int (decimal, so that no 64-bit value is rounded) and bytes-base64 (base64), a JSON
// boolean for bool. So `settings set --type "$type" --value "$value"` writes back what was read.

import type { SettingInput, SettingOutput } from "openshell-config";
import type { SettingType } from "./types.js";

/** The `--type` name of a value. */
export function settingType(value: SettingInput | SettingOutput): SettingType {
  if (typeof value === "string") return "string";
  if (typeof value === "boolean") return "bool";
  if (value instanceof Uint8Array) return "bytes-base64";
  return "int";
}

/** A setting value for people: strings quoted, bytes as base64. */
export function formatSettingValue(value: SettingInput | SettingOutput | undefined): string {
  if (value === undefined) return "(unset)";
  if (typeof value === "string") return JSON.stringify(value);
  if (value instanceof Uint8Array) return `base64:${Buffer.from(value).toString("base64")}`;
  return String(value);
}

/** A typed value for JSON and YAML: `{ type, value }`; `{ type: null, value: null }` when unset. */
export function settingJson(value: SettingInput | SettingOutput | undefined): { type: SettingType | null; value: string | boolean | null } {
  if (value === undefined) return { type: null, value: null };
  const type = settingType(value);
  if (value instanceof Uint8Array) return { type, value: Buffer.from(value).toString("base64") };
  if (typeof value === "bigint" || typeof value === "number") return { type, value: String(value) };
  return { type, value };
}
