// Where the gateway URL and the token come from. Each is taken, independently, from the first of:
// the flag (--url, --token), the environment (OPENSHELL_GATEWAY_URL, OPENSHELL_TOKEN), the config
// file (--config FILE, else $XDG_CONFIG_HOME/openshell-config/config.json, else
// ~/.config/openshell-config/config.json; `{ "url": ..., "token": ... }`).

import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export type Source = "flag" | "env" | "file";

export interface ResolvedConfig {
  /** The gateway URL. */
  readonly url: string;
  readonly urlSource: Source;
  /** The bearer token; `undefined` when none was given anywhere. */
  readonly token: string | undefined;
  readonly tokenSource: Source | undefined;
  /** The config file consulted (whether or not it exists). */
  readonly file: string;
}

/** A config file or value that cannot be used (exit status 2). */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export const URL_ENV = "OPENSHELL_GATEWAY_URL";
export const TOKEN_ENV = "OPENSHELL_TOKEN";

/** The config file used when `--config` is not given. */
export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env, home: string = homedir()): string {
  const base = env.XDG_CONFIG_HOME ? env.XDG_CONFIG_HOME : join(home, ".config");
  return join(base, "openshell-config", "config.json");
}

interface FileConfig {
  readonly url?: string;
  readonly token?: string;
}

/** Reads and checks a config file; a missing file is `{}` unless `required`. */
export function readConfigFile(path: string, required: boolean, read: (path: string) => string = (p) => readFileSync(p, "utf8")): FileConfig {
  let text: string;
  try {
    text = read(path);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === "ENOENT" && !required) return {};
    throw new ConfigError(`cannot read config file ${path}: ${code === "ENOENT" ? "no such file" : (err as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(err as Error).message}`);
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

/** Resolves the URL and token: flags win over the environment, which wins over the file. */
export function resolveConfig(
  flags: { readonly url?: string | undefined; readonly token?: string | undefined; readonly config?: string | undefined },
  env: NodeJS.ProcessEnv = process.env,
  options: { readonly home?: string; readonly read?: (path: string) => string } = {},
): ResolvedConfig {
  const file = flags.config ?? defaultConfigPath(env, options.home ?? homedir());
  // Read the file only when it is needed, so a broken file the flags and env override is harmless.
  let fromFile: FileConfig | undefined;
  const fileConfig = () => (fromFile ??= readConfigFile(file, flags.config !== undefined, options.read));
  if (flags.config !== undefined) fileConfig();

  const pick = (flag: string | undefined, envName: string, key: "url" | "token"): { value: string | undefined; source: Source | undefined } => {
    if (flag !== undefined) return { value: flag, source: "flag" };
    const e = env[envName];
    if (e !== undefined && e !== "") return { value: e, source: "env" };
    const f = fileConfig()[key];
    return f !== undefined ? { value: f, source: "file" } : { value: undefined, source: undefined };
  };

  const url = pick(flags.url, URL_ENV, "url");
  if (url.value === undefined) {
    throw new ConfigError(`no gateway URL: pass --url, set ${URL_ENV}, or put "url" in ${file}`);
  }
  checkUrl(url.value, url.source!, file);
  const token = pick(flags.token, TOKEN_ENV, "token");
  return { url: url.value, urlSource: url.source!, token: token.value, tokenSource: token.source, file };
}

function checkUrl(value: string, source: Source, file: string): void {
  const from = source === "flag" ? "--url" : source === "env" ? URL_ENV : `"url" in ${file}`;
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new ConfigError(`${from} is not a URL: "${value}" (expected e.g. http://127.0.0.1:8080)`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new ConfigError(`${from} must be an http:// or https:// URL; got "${value}"`);
  }
  if (u.username !== "" || u.password !== "") {
    throw new ConfigError(`${from} must not contain credentials; use --token or ${TOKEN_ENV}`);
  }
}
