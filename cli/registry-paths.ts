// Where the upstream `openshell` CLI keeps its gateway registry (UPSTREAM.md §8), and the names in
// it: the user registry under $XDG_CONFIG_HOME/openshell, the read-only system registry under
// $OPENSHELL_SYSTEM_GATEWAY_DIR or /etc/openshell, a gateway's directory, its mTLS bundle directory
// (whose name is sanitised, as upstream's tls.rs does) and its files. Nothing here touches the disk.

import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";

export const SYSTEM_DIR_ENV = "OPENSHELL_SYSTEM_GATEWAY_DIR";
export const DEFAULT_SYSTEM_DIR = "/etc/openshell";

/** Which registry an entry or a file belongs to. */
export type RegistrySource = "user" | "system";

/** `$XDG_CONFIG_HOME/openshell`, else `~/.config/openshell`. */
export function userRegistryDir(env: NodeJS.ProcessEnv, home: string = homedir()): string {
  const base = env.XDG_CONFIG_HOME ? env.XDG_CONFIG_HOME : join(home, ".config");
  return join(base, "openshell");
}

/**
 * `$OPENSHELL_SYSTEM_GATEWAY_DIR` when it is an absolute path, else `/etc/openshell`. As upstream:
 * an empty or relative value is ignored (`ignored` says so, for `gateway current` to show).
 */
export function systemRegistryDir(env: NodeJS.ProcessEnv): { readonly dir: string; readonly fromEnv: boolean; readonly ignored?: string } {
  const value = env[SYSTEM_DIR_ENV];
  if (value === undefined) return { dir: DEFAULT_SYSTEM_DIR, fromEnv: false };
  if (value === "" || !isAbsolute(value)) return { dir: DEFAULT_SYSTEM_DIR, fromEnv: false, ignored: value === "" ? "empty" : "relative" };
  return { dir: value, fromEnv: true };
}

/** The longest gateway name accepted: one file name on common file systems. */
export const MAX_NAME_BYTES = 255;

/**
 * Why `name` cannot be a gateway name, or undefined when it can: a gateway name is one path
 * component (upstream's `validated_gateway_name`), so it can never reach outside `gateways/`.
 */
export function gatewayNameProblem(name: string): string | undefined {
  if (name === "") return "it is empty";
  if (name === "." || name === "..") return `"${name}" is not a directory name`;
  if (name.includes("/")) return "it contains /";
  if (name.includes("\0")) return "it contains a NUL character";
  if (Buffer.byteLength(name) > MAX_NAME_BYTES) return `it is longer than ${MAX_NAME_BYTES} bytes`;
  return undefined;
}

/** The name with every character outside [A-Za-z0-9._-] replaced by `_` (upstream's `sanitize_name`). */
export function sanitizeName(name: string): string {
  return name.replace(/[^A-Za-z0-9._-]/g, "_");
}

/** A gateway's directory in a registry: `<root>/gateways/<name>`. `name` must be valid. */
export function gatewayDir(root: string, name: string): string {
  return join(root, "gateways", name);
}

export const metadataFile = (root: string, name: string) => join(gatewayDir(root, name), "metadata.json");
export const oidcTokenFile = (root: string, name: string) => join(gatewayDir(root, name), "oidc_token.json");

/**
 * The mTLS bundle directory of the gateway called `name`: `<root>/gateways/<sanitised>/mtls`. A
 * sanitised name of `.` or `..` (from a host or a name given with an endpoint) is made `_`, so
 * that the directory stays under `gateways/`.
 */
export function mtlsDir(root: string, name: string): string {
  const safe = sanitizeName(name);
  return join(root, "gateways", safe === "." || safe === ".." || safe === "" ? "_" : safe, "mtls");
}

/** The three files of an mTLS bundle directory, as upstream names them. */
export function bundleFiles(dir: string): { readonly ca: string; readonly cert: string; readonly key: string } {
  return { ca: join(dir, "ca.crt"), cert: join(dir, "tls.crt"), key: join(dir, "tls.key") };
}

/**
 * The registry name a bare endpoint's bundle is looked up by when no gateway name is given: the
 * URL's host, with 127.0.0.1 and localhost mapped to `openshell` (the stock install's name).
 */
export function nameForEndpoint(url: string): string {
  let host: string;
  try {
    host = new URL(url).hostname;
  } catch {
    return "openshell";
  }
  if (host === "" || host === "127.0.0.1" || host.toLowerCase() === "localhost") return "openshell";
  return host;
}
