// The command line's own config file: --config FILE, else $XDG_CONFIG_HOME/openshell-config/
// config.json, else ~/.config/openshell-config/config.json; `{ "url": ..., "token": ... }`. Read
// with a bound (a config file is a few hundred bytes), checked key by key, never echoing a value.

import { homedir } from "node:os";
import { join } from "node:path";
import { readBounded } from "./bounded-file.js";
import { ConfigError, jsonErrorPosition } from "./config-error.js";

/** The largest config file read. */
export const MAX_CONFIG_BYTES = 64 * 1024;

/** The config file used when `--config` is not given. */
export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const base = env.XDG_CONFIG_HOME ? env.XDG_CONFIG_HOME : join(home, ".config");
  return join(base, "openshell-config", "config.json");
}

export interface FileConfig {
  readonly url?: string;
  readonly token?: string;
}

/** The text of a file, or why it cannot be had (`missing`: it does not exist). */
export type ReadText = (path: string) => string | { readonly missing: true } | { readonly problem: string };

const readText: ReadText = (path) => {
  const r = readBounded(path, MAX_CONFIG_BYTES);
  return "text" in r ? r.text : r;
};

/** Reads and checks a config file; a missing file is `{}` unless `required`. */
export function readConfigFile(path: string, required: boolean, read: ReadText = readText): FileConfig {
  const text = read(path);
  if (typeof text !== "string") {
    if ("missing" in text && !required) return {};
    throw new ConfigError(`cannot read config file ${path}: ${"missing" in text ? "no such file" : text.problem}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON${jsonErrorPosition(err)}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConfigError(`config file ${path} must hold a JSON object like { "url": "...", "token": "..." }`);
  }
  const out: { url?: string; token?: string } = {};
  for (const [key, v] of Object.entries(value)) {
    if (key !== "url" && key !== "token") throw new ConfigError(`config file ${path}: unknown key "${key}" (expected "url" and "token")`);
    if (v === null || v === undefined) continue;
    // Never echo the value: it may be the token.
    if (typeof v !== "string" || v === "") throw new ConfigError(`config file ${path}: "${key}" must be a non-empty string`);
    out[key] = v;
  }
  return out;
}
