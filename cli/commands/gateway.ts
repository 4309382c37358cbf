// `gateway list` and `gateway current`: the openshell CLI's gateway registry as this command line
// reads it. Neither talks to a gateway, and neither prints a secret: `current` says where each
// value came from and which files a command would read, whether they exist, and what the OIDC
// token file says about its expiry, never a token or a key.

import { kindOf } from "../bounded-file.js";
import { WORKSPACE_ENV, type ResolvedConfig } from "../config.js";
import { EXIT } from "../outcome.js";
import type { Output } from "../output.js";
import { isExpired, readOidcTokenFile } from "../oidc-token-file.js";
import type { ActiveGateway, Registry } from "../registry.js";
import { bundleFiles } from "../registry-paths.js";

const HEADERS = ["ACTIVE", "NAME", "ENDPOINT", "AUTH", "SOURCE"];

/** `gateway list`: every registered gateway, the active one marked. */
export function gatewayList(out: Output, registry: Registry): number {
  const { entries, problems } = registry.list();
  for (const p of problems) out.warn(p);
  let active: ActiveGateway | undefined;
  try {
    active = registry.active();
  } catch (err) {
    out.warn((err as Error).message);
  }
  if (active !== undefined && !entries.some((e) => e.name === active.name)) {
    out.warn(`the active gateway "${active.name}" (named in ${active.file}) is not registered`);
  }
  const gateways = entries.map((e) => ({
    name: e.name,
    endpoint: e.metadata.endpoint,
    authMode: e.metadata.authMode,
    source: e.source,
    active: e.name === active?.name,
    metadataFile: e.metadataFile,
  }));
  if (gateways.length === 0) {
    out.note(`no gateways registered in ${registry.userDir} or ${registry.systemDir}; register one with "openshell gateway add URL", or pass --gateway-endpoint URL`);
  } else {
    out.table(
      HEADERS,
      gateways.map((g) => [g.active ? "*" : "", g.name, g.endpoint, g.authMode, g.source]),
    );
  }
  out.json({ gateways, active: active === undefined ? null : { name: active.name, file: active.file } });
  return EXIT.ok;
}

interface FileState {
  readonly role: "config" | "active" | "metadata" | "ca" | "cert" | "key" | "oidc-token";
  readonly path: string;
  readonly exists: boolean;
  /** A command fails without it. */
  readonly required: boolean;
}

/** `gateway current`: what a command would use with these flags and this environment. */
export function gatewayCurrent(out: Output, config: ResolvedConfig, env: NodeJS.ProcessEnv): number {
  const files: FileState[] = [];
  const add = (role: FileState["role"], path: string, required: boolean) => files.push({ role, path, exists: kindOf(path) === "file", required });
  if (config.fileConsulted) add("config", config.file, false);
  const gw = config.gateway;
  if (gw?.activeFile !== undefined) add("active", gw.activeFile, true);
  if (gw?.entry !== undefined) add("metadata", gw.entry.metadataFile, true);
  if (config.tls !== undefined) {
    const b = bundleFiles(config.tls.bundleDir);
    const required = config.tls.bundle === "required";
    add("ca", b.ca, required);
    add("cert", b.cert, required);
    add("key", b.key, required);
  }
  let token: { from: ResolvedConfig["tokenSource"] | null; file: string | null; expiresAt: string | null; expired: boolean | null; refreshable: boolean | null; problem: string | null } = {
    from: config.tokenSource ?? null,
    file: null,
    expiresAt: null,
    expired: null,
    refreshable: null,
    problem: null,
  };
  if (config.tokenSource === "oidc") {
    const path = config.registry.oidcTokenFiles(gw!.entry!).read;
    add("oidc-token", path, true);
    token = { ...token, file: path };
    try {
      const t = readOidcTokenFile(path);
      if (t !== undefined) {
        token = {
          ...token,
          expiresAt: t.expiresAt === undefined ? null : new Date(t.expiresAt * 1000).toISOString(),
          expired: isExpired(t),
          refreshable: t.refreshToken !== undefined,
        };
      }
    } catch (err) {
      token = { ...token, problem: (err as Error).message };
    }
  }
  const workspace = env[WORKSPACE_ENV] ? env[WORKSPACE_ENV] : null;
  const doc = {
    gateway: gw === undefined ? null : { name: gw.name, from: gw.source, registry: gw.entry?.source ?? null },
    endpoint: config.url,
    endpointFrom: config.urlSource,
    endpointSource: config.urlFrom,
    authMode: config.authMode ?? null,
    tls: config.tls === undefined ? null : { bundleDir: config.tls.bundleDir, bundle: config.tls.bundle, insecure: config.insecure !== undefined },
    token,
    workspace,
    systemRegistry: { dir: config.registry.systemDir, ignored: config.registry.systemDirIgnored ?? null },
    files,
  };

  out.fields([
    ["gateway", gw === undefined ? "none (an endpoint given directly)" : `${gw.name} (${nameFrom(gw.source)}; ${gw.entry === undefined ? "not registered" : `${gw.entry.source} registry`})`],
    ["endpoint", `${config.url} (${urlFrom(config)})`],
    ["auth", authLine(config)],
    ["tls", tlsLine(config)],
    ["token", tokenLine(config, token)],
    ["workspace", workspace === null ? "the gateway's default (no --workspace, no OPENSHELL_WORKSPACE)" : `${workspace} (${WORKSPACE_ENV})`],
    ["system dir", config.registry.systemDirIgnored === undefined ? undefined : `${config.registry.systemDir} (OPENSHELL_SYSTEM_GATEWAY_DIR is ${config.registry.systemDirIgnored}: ignored)`],
  ]);
  if (files.length > 0) {
    out.line();
    out.line("files:");
    for (const f of files) out.line(`  ${f.exists ? "present" : "missing"}  ${f.path}${!f.exists && f.required ? " (required)" : ""}`);
  }
  out.json(doc);
  return EXIT.ok;
}

function nameFrom(source: "flag" | "env" | "active"): string {
  return source === "flag" ? "-g" : source === "env" ? "OPENSHELL_GATEWAY" : "the active gateway";
}

/** A flag or variable by name (--url, OPENSHELL_GATEWAY_ENDPOINT), the config file, or metadata.json. */
function urlFrom(config: ResolvedConfig): string {
  return config.urlSource === "registry" ? "metadata.json" : config.urlFrom;
}

function authLine(config: ResolvedConfig): string {
  const entry = config.gateway?.entry;
  if (entry === undefined) return `none from the registry (an endpoint without metadata)`;
  const mode = entry.metadata.authMode;
  const why = entry.metadata.authModeDefaulted ? "auth_mode absent" : "auth_mode in metadata.json";
  if (mode === "cloudflare_jwt") return `cloudflare_jwt (${why}): not supported by openshell-config`;
  return `${mode} (${why})`;
}

function tlsLine(config: ResolvedConfig): string {
  if (config.tls === undefined) return "none (http://)";
  const insecure = config.insecure === undefined ? "" : `; the gateway's certificate is NOT verified (${config.insecure === "flag" ? "--gateway-insecure" : "OPENSHELL_GATEWAY_INSECURE"})`;
  const bundle = config.tls.bundle === "required" ? "the mTLS bundle below, all three files required" : "the files of the mTLS bundle below that exist, else the system's CAs";
  return `https with ${bundle}${insecure}`;
}

function tokenLine(config: ResolvedConfig, token: { expiresAt: string | null; expired: boolean | null; refreshable: boolean | null; problem: string | null }): string {
  switch (config.tokenSource) {
    case undefined:
      return "none";
    case "flag":
      return "--token";
    case "env":
      return "OPENSHELL_TOKEN";
    case "file":
      return `"token" in ${config.file}`;
    case "oidc": {
      if (token.problem !== null) return `OIDC session: ${token.problem}`;
      if (token.refreshable === null) return "OIDC session: no oidc_token.json (run \"openshell gateway login\")";
      const expiry = token.expiresAt === null ? "no expiry recorded" : `${token.expired ? "expired" : "expires"} ${token.expiresAt}`;
      return `OIDC session from oidc_token.json (${expiry}; ${token.refreshable ? "refreshed with its refresh token when needed" : "no refresh token"})`;
    }
    default:
      return "none";
  }
}
