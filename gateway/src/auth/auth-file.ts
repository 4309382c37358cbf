// The gateway's auth file: which bearer tokens exist and whom they stand for, which principal a
// client certificate stands for, and how OIDC roles map to ours. Loaded and checked once at
// startup; only SHA-256 digests of the tokens are kept in memory.

import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { findJsonSyntaxError } from "./json-syntax.js";
import { parseCertificatePrincipals, type CertificatePrincipals } from "./certificate-principals.js";
import { parseOidcRoleMapping, type OidcRoleMapping } from "./oidc-roles.js";
import { tokenCredential } from "./principal-credential.js";
import { entryPrincipal, isObject, type Fail } from "./principal-entry.js";
import type { Principal } from "./principal.js";

/** One accepted token: its digest and the principal it authenticates. */
export interface TokenEntry {
  /** SHA-256 of the token's UTF-8 bytes. */
  readonly digest: Buffer;
  readonly principal: Principal;
}

/** A loaded auth file. */
export interface AuthFile {
  readonly entries: readonly TokenEntry[];
  /**
   * The "clientCertificates" and "defaultClientCertificate" sections; absent when the file has
   * neither (every verified client certificate is then the platform admin).
   */
  readonly clientCertificates?: CertificatePrincipals;
  /** The "oidc" section (role mapping of OIDC tokens); absent = the defaults. */
  readonly oidc?: OidcRoleMapping;
}

/** No tokens and no sections: what runs when only --tls-client-ca or --oidc-issuer authenticates. */
export const EMPTY_AUTH_FILE: AuthFile = Object.freeze({ entries: Object.freeze([]) });

/** Thrown for an unreadable or invalid auth file; the message names the entry and field. */
export class AuthFileError extends Error {
  override readonly name = "AuthFileError";
}

/** SHA-256 of a token. */
export function tokenDigest(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/** The fewest bytes a bearer token in the auth file may have: a short one can be guessed. */
export const MIN_TOKEN_BYTES = 16;

export interface LoadAuthFileOptions {
  /**
   * Refuse a file that holds tokens (not only their digests) and that others may read, and any
   * file that others may change (the gateway's command line does, unless
   * --allow-readable-auth-file). Default false.
   */
  readonly refuseShared?: boolean;
  /** Called when `refuseShared` is off and the file holds tokens others may read. */
  readonly onReadableByOthers?: (mode: number) => void;
}

/** Reads and validates the auth file at `path`. */
export async function loadAuthFile(path: string, options: LoadAuthFileOptions = {}): Promise<AuthFile> {
  let text: string;
  let mode: number;
  try {
    // One open file for the mode and the text: the file checked is the file read.
    const file = await open(path, "r");
    try {
      mode = (await file.stat()).mode & 0o777;
      text = await file.readFile("utf8");
    } finally {
      await file.close();
    }
  } catch (err) {
    throw new AuthFileError(`auth file ${path}: cannot read: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text around the error, which may be a token: only where.
    const at = findJsonSyntaxError(text);
    const where = at ? ` at line ${at.line}, column ${at.column} (${at.problem})` : "";
    throw new AuthFileError(`auth file ${path}: not valid JSON${where}; the text is not shown, as it may hold tokens`);
  }
  const auth = parseAuthFile(json, path);
  const octal = mode.toString(8).padStart(4, "0");
  if (options.refuseShared && (mode & 0o022) !== 0) {
    throw new AuthFileError(`auth file ${path}: others can change it (mode ${octal}), and anyone who can write it can make themselves an admin: chmod 600 ${path}`);
  }
  if ((mode & 0o044) !== 0 && holdsTokens(json)) {
    if (options.refuseShared) {
      throw new AuthFileError(
        `auth file ${path}: it holds bearer tokens and others can read it (mode ${octal}): chmod 600 ${path}, keep only their digests ("tokenSha256"), or pass --allow-readable-auth-file`,
      );
    }
    options.onReadableByOthers?.(mode);
  }
  return auth;
}

/** Whether a valid auth file's JSON has an entry with a plain "token" (not just its digest). */
function holdsTokens(json: unknown): boolean {
  const tokens = (json as { tokens?: unknown }).tokens;
  return Array.isArray(tokens) && tokens.some((t) => isObject(t) && (t as Record<string, unknown>).token !== undefined);
}

/** Validates an auth file's parsed JSON. `source` prefixes error messages. */
export function parseAuthFile(json: unknown, source = "auth file"): AuthFile {
  const fail = (msg: string): never => {
    throw new AuthFileError(`${source}: ${msg}`);
  };
  if (!isObject(json)) fail(`expected an object with a "tokens" array`);
  const file = json as Record<string, unknown>;
  for (const key of Object.keys(file)) {
    // A misspelt section must not pass silently: "clientCertificate" ignored would leave every
    // verified certificate the platform admin.
    if (!TOP_LEVEL_KEYS.includes(key)) fail(`unknown field "${key}" (expected ${TOP_LEVEL_KEYS.join(", ")})`);
  }
  const otherSections = file.clientCertificates !== undefined || file.defaultClientCertificate !== undefined || file.oidc !== undefined;
  const tokens = file.tokens === undefined && otherSections ? [] : file.tokens;
  if (!Array.isArray(tokens)) fail(`"tokens" must be an array`);
  const entries: TokenEntry[] = [];
  const seen = new Map<string, number>();
  (tokens as unknown[]).forEach((raw, i) => {
    const at = (field: string) => `tokens[${i}].${field}`;
    if (!isObject(raw)) fail(`tokens[${i}]: expected an object`);
    const e = raw as Record<string, unknown>;
    const digest = entryDigest(e, at, fail);
    const hex = digest.toString("hex");
    const previous = seen.get(hex);
    if (previous !== undefined) fail(`${at("token")}: same token as tokens[${previous}]`);
    seen.set(hex, i);
    const principal = entryPrincipal(e, at, fail, tokenCredential(digest));
    // After the entry's other fields, so that a mistake there is named first.
    if (typeof e.token === "string" && Buffer.byteLength(e.token, "utf8") < MIN_TOKEN_BYTES) {
      fail(`${at("token")}: too short (${Buffer.byteLength(e.token, "utf8")} bytes; at least ${MIN_TOKEN_BYTES}, e.g. from "openssl rand -hex 32")`);
    }
    entries.push({ digest, principal });
  });
  const certificates =
    file.clientCertificates !== undefined || file.defaultClientCertificate !== undefined
      ? parseCertificatePrincipals(file.clientCertificates, file.defaultClientCertificate, fail)
      : undefined;
  const oidc = file.oidc !== undefined ? parseOidcRoleMapping(file.oidc, fail) : undefined;
  return { entries, ...(certificates ? { clientCertificates: certificates } : {}), ...(oidc ? { oidc } : {}) };
}

/**
 * Refuses sections for a mechanism the gateway runs without: they would silently do nothing.
 * `source` prefixes the message, as for parse errors.
 */
export function checkAuthFileSections(auth: AuthFile, enabled: { readonly clientCertificates: boolean; readonly oidc: boolean }, source = "auth file"): void {
  if (auth.clientCertificates && !enabled.clientCertificates) {
    throw new AuthFileError(`${source}: "clientCertificates"/"defaultClientCertificate" need --tls-client-ca`);
  }
  if (auth.oidc && !enabled.oidc) throw new AuthFileError(`${source}: "oidc" needs --oidc-issuer and --oidc-audience`);
}

const TOP_LEVEL_KEYS = ["tokens", "clientCertificates", "defaultClientCertificate", "oidc"];

function entryDigest(e: Record<string, unknown>, at: (f: string) => string, fail: Fail): Buffer {
  const hasToken = e.token !== undefined;
  const hasSha = e.tokenSha256 !== undefined;
  if (hasToken === hasSha) fail(`${at("token")}: exactly one of "token" and "tokenSha256" is required`);
  if (hasToken) {
    if (typeof e.token !== "string" || e.token === "" || e.token.trim() !== e.token) {
      fail(`${at("token")}: must be a non-empty string without surrounding whitespace`);
    }
    return tokenDigest(e.token as string);
  }
  if (typeof e.tokenSha256 !== "string" || !/^[0-9a-fA-F]{64}$/.test(e.tokenSha256)) {
    fail(`${at("tokenSha256")}: must be 64 hexadecimal characters (a SHA-256 digest)`);
  }
  return Buffer.from(e.tokenSha256 as string, "hex");
}
