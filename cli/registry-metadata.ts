// A gateway's `metadata.json` in the upstream registry (UPSTREAM.md §8; upstream's
// crates/openshell-bootstrap/src/metadata.rs), checked field by field: every error names the file
// and the field, and never echoes a value that could be a secret. Unknown fields are ignored, as
// upstream's serde does; `cf_team_domain` and `cf_auth_url` are the old names of `edge_team_domain`
// and `edge_auth_url`.

import { ConfigError, jsonErrorPosition } from "./config-error.js";

export const AUTH_MODES = ["mtls", "plaintext", "oidc", "cloudflare_jwt"] as const;
/** How the gateway authenticates clients; an absent `auth_mode` is `mtls`. */
export type AuthMode = (typeof AUTH_MODES)[number];

/** The fields the command line uses, plus the rest for `gateway current -o json`. */
export interface GatewayMetadata {
  readonly name: string;
  /** The gateway's URL (http:// or https://). */
  readonly endpoint: string;
  /** `auth_mode`, with absent as `mtls`. */
  readonly authMode: AuthMode;
  /** True when `auth_mode` was absent (so `mtls` by default). */
  readonly authModeDefaulted: boolean;
  readonly isRemote: boolean | undefined;
  readonly gatewayPort: number | undefined;
  readonly remoteHost: string | undefined;
  readonly resolvedHost: string | undefined;
  readonly edgeTeamDomain: string | undefined;
  readonly edgeAuthUrl: string | undefined;
  readonly oidcIssuer: string | undefined;
  readonly oidcClientId: string | undefined;
  /** `oidc_audience`, defaulting to the client id as upstream does. */
  readonly oidcAudience: string | undefined;
  /** `oidc_scopes`, split on spaces. */
  readonly oidcScopes: readonly string[] | undefined;
  readonly vmDriverStateDir: string | undefined;
}

/** The largest metadata.json read (upstream's are a few hundred bytes). */
export const MAX_METADATA_BYTES = 64 * 1024;

/**
 * Parses and checks the text of `file`, the metadata.json of the gateway whose directory is
 * `dirName`. Throws ConfigError naming the file and the field.
 */
export function parseGatewayMetadata(text: string, file: string, dirName: string): GatewayMetadata {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`gateway metadata ${file} is not valid JSON${jsonErrorPosition(err)}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ConfigError(`gateway metadata ${file} must hold a JSON object`);
  }
  const o = value as Record<string, unknown>;
  const fail = (field: string, what: string): never => {
    throw new ConfigError(`gateway metadata ${file}: "${field}" ${what}`);
  };
  const optString = (field: string): string | undefined => {
    const v = o[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "string") fail(field, "must be a string");
    return v as string;
  };
  const aliased = (field: string, alias: string): string | undefined => {
    if (o[field] !== undefined && o[alias] !== undefined) fail(field, `and its old name "${alias}" are both set; keep one`);
    return optString(field) ?? optString(alias);
  };
  const reqString = (field: string): string => {
    const v = optString(field);
    if (v === undefined || v === "") fail(field, "is required (a non-empty string)");
    return v!;
  };

  const name = reqString("name");
  if (name !== dirName) fail("name", `is "${name}", but the gateway's directory is "${dirName}"`);
  const endpoint = reqString("gateway_endpoint");
  checkEndpoint(endpoint, (what) => fail("gateway_endpoint", what));

  const isRemote = o.is_remote;
  if (isRemote !== undefined && isRemote !== null && typeof isRemote !== "boolean") fail("is_remote", "must be true or false");
  const port = o.gateway_port;
  if (port !== undefined && port !== null && !(typeof port === "number" && Number.isInteger(port) && port >= 0 && port <= 65535)) {
    fail("gateway_port", "must be a port number (0 to 65535)");
  }

  const mode = optString("auth_mode");
  if (mode !== undefined && !(AUTH_MODES as readonly string[]).includes(mode)) {
    fail("auth_mode", `must be ${AUTH_MODES.slice(0, -1).join(", ")} or ${AUTH_MODES.at(-1)} (absent means mtls); got "${clip(mode)}"`);
  }
  const clientId = optString("oidc_client_id");
  const scopes = optString("oidc_scopes");
  return {
    name,
    endpoint,
    authMode: (mode as AuthMode | undefined) ?? "mtls",
    authModeDefaulted: mode === undefined,
    isRemote: typeof isRemote === "boolean" ? isRemote : undefined,
    gatewayPort: typeof port === "number" ? port : undefined,
    remoteHost: optString("remote_host"),
    resolvedHost: optString("resolved_host"),
    edgeTeamDomain: aliased("edge_team_domain", "cf_team_domain"),
    edgeAuthUrl: aliased("edge_auth_url", "cf_auth_url"),
    oidcIssuer: optString("oidc_issuer"),
    oidcClientId: clientId,
    oidcAudience: optString("oidc_audience") ?? clientId,
    oidcScopes: scopes === undefined ? undefined : scopes.split(/\s+/).filter((s) => s !== ""),
    vmDriverStateDir: optString("vm_driver_state_dir"),
  };
}

/** Checks a gateway URL: http(s), with a host, without credentials. `fail` gets what is wrong. */
export function checkEndpoint(value: string, fail: (what: string) => never): URL {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    return fail(`is not a URL: "${clip(value)}" (expected e.g. https://127.0.0.1:17670)`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return fail(`must be an http:// or https:// URL; got "${clip(value)}"`);
  // Never echo it: the credentials are the secret.
  if (u.username !== "" || u.password !== "") return fail("must not contain credentials");
  return u;
}

/** A value for an error line: any `user:password@` cut out (never echoed), then cut to 80 characters. */
function clip(value: string): string {
  const s = value.replace(/^([^/?#]*\/\/)[^/?#]*@/, "$1…@");
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}
