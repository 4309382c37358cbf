// Which gateway a command talks to, and with which credentials. The gateway comes from the first
// of these levels that names one:
//   1. flags:       --gateway-endpoint URL (the same as --url URL) and/or -g/--gateway NAME;
//   2. environment: OPENSHELL_GATEWAY_ENDPOINT (the same as OPENSHELL_GATEWAY_URL) and/or
//                   OPENSHELL_GATEWAY;
//   3. this CLI's config file: "url" (--config FILE, else $XDG_CONFIG_HOME/openshell-config/
//      config.json, else ~/.config/openshell-config/config.json);
//   4. the openshell CLI's registry: its active gateway ($XDG_CONFIG_HOME/openshell/active_gateway,
//      else the system registry's: $OPENSHELL_SYSTEM_GATEWAY_DIR or /etc/openshell).
// A NAME alone is the registered gateway (UPSTREAM.md §8: endpoint, auth_mode, mTLS bundle, OIDC
// token). An endpoint alone is used directly, without metadata; its mTLS bundle is looked up by
// OPENSHELL_GATEWAY, else by the URL's host (127.0.0.1 and localhost: `openshell`), and presented
// when it is there. An endpoint and a NAME at the same level, or an endpoint given as a flag with
// OPENSHELL_GATEWAY set, mean that endpoint with that name's credentials and auth_mode (upstream
// does the same). A -g flag beats an endpoint from the environment: flags beat the environment.
//
// The bearer token comes from the first of: --token, OPENSHELL_TOKEN, "token" in the config file
// (only for a gateway not chosen by name, and not for an endpoint named by the openshell CLI's
// --gateway-endpoint or OPENSHELL_GATEWAY_ENDPOINT unless it is the file's own "url": that token
// is for the config file's gateway), the registered gateway's oidc_token.json (auth_mode oidc).
// --gateway-insecure (OPENSHELL_GATEWAY_INSECURE) skips the verification of an https gateway's
// certificate. OPENSHELL_WORKSPACE is the default of --workspace (args.ts).
//
// Nothing secret is read here: the bundle and the OIDC token are read when connecting
// (gateway-connection.ts); `gateway current` shows this resolution without reading them.

import { homedir } from "node:os";
import { ConfigError } from "./config-error.js";
import { defaultConfigPath, readConfigFile, type FileConfig, type ReadText } from "./config-file.js";
import { checkEndpoint, type AuthMode } from "./registry-metadata.js";
import { checkGatewayName, createRegistry, type Registry, type RegistryEntry } from "./registry.js";
import { nameForEndpoint } from "./registry-paths.js";
import { didYouMean } from "./suggest.js";

export { ConfigError } from "./config-error.js";
export { defaultConfigPath, readConfigFile } from "./config-file.js";

export const URL_ENV = "OPENSHELL_GATEWAY_URL";
export const ENDPOINT_ENV = "OPENSHELL_GATEWAY_ENDPOINT";
export const GATEWAY_ENV = "OPENSHELL_GATEWAY";
export const INSECURE_ENV = "OPENSHELL_GATEWAY_INSECURE";
export const WORKSPACE_ENV = "OPENSHELL_WORKSPACE";
export const TOKEN_ENV = "OPENSHELL_TOKEN";

/** Where a value came from: a flag, the environment, the config file, the registry. */
export type Source = "flag" | "env" | "file" | "registry";

/** A registered gateway's name, and what named it. */
export interface ResolvedGateway {
  readonly name: string;
  /** `flag` (-g), `env` (OPENSHELL_GATEWAY), `active` (an active_gateway file). */
  readonly source: "flag" | "env" | "active";
  /** The active_gateway file, for `active`. */
  readonly activeFile?: string;
  /** Its registry entry; undefined only for a name given with an endpoint and not registered. */
  readonly entry: RegistryEntry | undefined;
}

export interface ResolvedConfig {
  /** The gateway URL. */
  readonly url: string;
  readonly urlSource: Source;
  /** What gave the URL: a flag or variable name, the config file or the metadata.json. */
  readonly urlFrom: string;
  /** A bearer token given as such (flag, environment, config file); undefined otherwise. */
  readonly token: string | undefined;
  /** `oidc`: the registered gateway's oidc_token.json (read when connecting). */
  readonly tokenSource: Source | "oidc" | undefined;
  /** The config file (whether or not it exists). */
  readonly file: string;
  /** True when the config file was read (the flags and the environment did not decide everything). */
  readonly fileConsulted: boolean;
  /** The registered gateway, when one was named (flag, environment, active). */
  readonly gateway: ResolvedGateway | undefined;
  /** The registry's auth_mode, or undefined for an endpoint used without metadata. */
  readonly authMode: AuthMode | undefined;
  /** How the connection is secured; undefined for http://. */
  readonly tls: ResolvedTls | undefined;
  /** --gateway-insecure or OPENSHELL_GATEWAY_INSECURE, when given (and the URL is https). */
  readonly insecure: "flag" | "env" | undefined;
  readonly registry: Registry;
}

export interface ResolvedTls {
  /** The mTLS bundle directory (ca.crt, tls.crt, tls.key). */
  readonly bundleDir: string;
  /** The name the directory was looked up by. */
  readonly bundleName: string;
  /** `required`: all three files (auth_mode mtls); `optional`: the files that are there. */
  readonly bundle: "required" | "optional";
}

export interface ConnectionFlags {
  readonly url?: string | undefined;
  readonly gatewayEndpoint?: string | undefined;
  readonly gateway?: string | undefined;
  readonly gatewayInsecure?: boolean | undefined;
  readonly token?: string | undefined;
  readonly config?: string | undefined;
}

export interface ResolveOptions {
  readonly home?: string;
  readonly read?: ReadText;
  readonly registry?: Registry;
}

/** True for a set boolean variable: not empty, "0" or "false" (upstream's reading of OPENSHELL_GATEWAY_INSECURE). */
export function envFlag(value: string | undefined): boolean {
  return value !== undefined && value !== "" && value !== "0" && value.toLowerCase() !== "false";
}

const nonEmpty = (v: string | undefined) => (v === undefined || v === "" ? undefined : v);

interface Endpoint {
  readonly url: string;
  readonly source: Source;
  readonly from: string;
}

/** Resolves the gateway and the token (see the first comment). Throws ConfigError. */
export function resolveConfig(flags: ConnectionFlags, env: NodeJS.ProcessEnv = process.env, options: ResolveOptions = {}): ResolvedConfig {
  const home = options.home ?? homedir();
  const registry = options.registry ?? createRegistry(env, home);
  const file = flags.config ?? defaultConfigPath(env, home);
  // Read the file only when it is needed, so a broken file the flags and env override is harmless.
  let fromFile: FileConfig | undefined;
  const fileConfig = () => (fromFile ??= readConfigFile(file, flags.config !== undefined, options.read));
  if (flags.config !== undefined) fileConfig();

  const flagEndpoint = pair(flags.url, "--url", flags.gatewayEndpoint, "--gateway-endpoint", "flag");
  const envEndpoint = pair(nonEmpty(env[URL_ENV]), URL_ENV, nonEmpty(env[ENDPOINT_ENV]), ENDPOINT_ENV, "env");
  const flagName = flags.gateway;
  const envName = nonEmpty(env[GATEWAY_ENV]?.trim());
  if (flagName !== undefined) checkGatewayName(flagName, `-g "${flagName}"`);
  if (envName !== undefined) checkGatewayName(envName, `${GATEWAY_ENV} "${envName}"`);

  let endpoint: Endpoint | undefined;
  let named: { name: string; source: ResolvedGateway["source"]; activeFile?: string } | undefined;
  if (flagEndpoint !== undefined || flagName !== undefined) {
    endpoint = flagEndpoint;
    const name = flagName ?? (flagEndpoint !== undefined ? envName : undefined);
    if (name !== undefined) named = { name, source: flagName !== undefined ? "flag" : "env" };
  } else if (envEndpoint !== undefined || envName !== undefined) {
    endpoint = envEndpoint;
    if (envName !== undefined) named = { name: envName, source: "env" };
  } else if (fileConfig().url !== undefined) {
    endpoint = { url: fileConfig().url!, source: "file", from: `"url" in ${file}` };
  } else {
    const active = registry.active();
    if (active === undefined) {
      throw new ConfigError(
        `no gateway: pass -g NAME or --url URL, set ${GATEWAY_ENV} or ${URL_ENV}, put "url" in ${file}, or register one with the openshell CLI (no active_gateway in ${registry.userDir} or ${registry.systemDir})`,
      );
    }
    named = { name: active.name, source: "active", activeFile: active.file };
  }

  let gateway: ResolvedGateway | undefined;
  if (named !== undefined) {
    const entry = registry.entry(named.name);
    // A name with an endpoint needs no metadata (upstream: the endpoint is used directly).
    if (entry === undefined && endpoint === undefined) throw unknownGateway(named, registry);
    gateway = { ...named, entry };
  }
  const entry = gateway?.entry;
  if (endpoint === undefined) endpoint = { url: entry!.metadata.endpoint, source: "registry", from: entry!.metadataFile };
  else checkEndpoint(endpoint.url, (what) => failUrl(endpoint!.from, what));

  const authMode = entry?.metadata.authMode;

  const https = new URL(endpoint.url).protocol === "https:";
  // Mutual TLS needs https: an http:// endpoint left over in the environment (or given as a flag)
  // for a gateway registered with mTLS and an https endpoint would reach nothing but a TLS port's
  // hang-up. Either of the two may be the one left over.
  if (authMode === "mtls" && !https && endpoint.source !== "registry" && new URL(entry!.metadata.endpoint).protocol === "https:") {
    const mode = entry!.metadata.authModeDefaulted ? "no auth_mode, which means mtls" : "auth_mode mtls";
    const nameFrom = gateway!.source === "flag" ? "-g" : gateway!.source === "env" ? GATEWAY_ENV : "the active gateway";
    throw new ConfigError(
      `gateway "${gateway!.name}" (${nameFrom}) is registered for mutual TLS (${mode}) at ${entry!.metadata.endpoint}, but ${endpoint.from} gives ${endpoint.url}, plain HTTP: leave ${endpoint.from} out to use the registered endpoint, or ${gateway!.source === "env" ? `unset ${GATEWAY_ENV}` : `drop ${nameFrom}`} to use ${endpoint.url} on its own`,
    );
  }
  let tls: ResolvedTls | undefined;
  if (https) {
    const bundleName = gateway?.name ?? nameForEndpoint(endpoint.url);
    tls = { bundleDir: registry.bundleDir(bundleName, entry), bundleName, bundle: authMode === "mtls" ? "required" : "optional" };
  }
  const insecure = !https ? undefined : flags.gatewayInsecure ? "flag" : envFlag(env[INSECURE_ENV]) ? "env" : undefined;

  let token: string | undefined;
  let tokenSource: ResolvedConfig["tokenSource"];
  if (flags.token !== undefined) [token, tokenSource] = [flags.token, "flag"];
  else if (nonEmpty(env[TOKEN_ENV]) !== undefined) [token, tokenSource] = [env[TOKEN_ENV], "env"];
  else if (gateway === undefined && fileConfig().token !== undefined && fileTokenFits(endpoint, fileConfig(), flags, env)) [token, tokenSource] = [fileConfig().token, "file"];
  else if (authMode === "oidc") tokenSource = "oidc";

  const fileConsulted = fromFile !== undefined;
  return { url: endpoint.url, urlSource: endpoint.source, urlFrom: endpoint.from, token, tokenSource, file, fileConsulted, gateway, authMode, tls, insecure, registry };
}

/**
 * Whether the config file's token may go to `endpoint`. As before the registry, with a URL from
 * this command line's own names (--url, OPENSHELL_GATEWAY_URL, the file): the URL and the token
 * are taken independently. Not to a URL from the openshell CLI's OPENSHELL_GATEWAY_ENDPOINT or
 * --gateway-endpoint, which are set for that tool and its gateways, unless it is the file's own
 * gateway (same origin as its "url").
 */
function fileTokenFits(endpoint: Endpoint, file: FileConfig, flags: { readonly url?: string | undefined }, env: NodeJS.ProcessEnv): boolean {
  if (endpoint.source === "file") return true;
  const ours = endpoint.source === "flag" ? flags.url !== undefined : endpoint.source === "env" && nonEmpty(env[URL_ENV]) !== undefined;
  return ours || (file.url !== undefined && sameOrigin(file.url, endpoint.url));
}

function sameOrigin(a: string, b: string): boolean {
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}

/** Throws ConfigError for a gateway this command line cannot talk to (Cloudflare Access). */
export function assertSupported(config: ResolvedConfig): void {
  if (config.authMode === "cloudflare_jwt") {
    throw new ConfigError(
      `gateway "${config.gateway!.name}" uses Cloudflare Access (auth_mode cloudflare_jwt), which openshell-config does not support; use a gateway with mtls, oidc or plaintext`,
    );
  }
}

/** One endpoint from two names for it (--url and --gateway-endpoint; their variables). */
function pair(a: string | undefined, aName: string, b: string | undefined, bName: string, source: Source): Endpoint | undefined {
  if (a !== undefined && b !== undefined && a !== b) {
    // Not the values: a URL may carry credentials (refused later, never echoed).
    throw new ConfigError(`${aName} and ${bName} name different gateways; give one`);
  }
  if (b !== undefined) return { url: b, source, from: bName };
  if (a !== undefined) return { url: a, source, from: aName };
  return undefined;
}

function failUrl(from: string, what: string): never {
  // checkEndpoint's phrases start with "is"/"must": `--url is not a URL: ...`.
  throw new ConfigError(`${from} ${what}`);
}

function unknownGateway(named: { name: string; source: ResolvedGateway["source"]; activeFile?: string }, registry: Registry): ConfigError {
  const where = `no metadata.json in ${registry.userDir}/gateways/${named.name} or ${registry.systemDir}/gateways/${named.name}`;
  if (named.source === "active") return new ConfigError(`the active gateway "${named.name}" (named in ${named.activeFile}) is not registered: ${where}`);
  const by = named.source === "flag" ? "-g" : GATEWAY_ENV;
  const near = didYouMean(named.name, registry.names());
  return new ConfigError(`unknown gateway "${named.name}" (${by}): ${where}${near || '; "openshell-config gateway list" shows the registered ones'}`);
}
