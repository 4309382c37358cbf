// A gateway's `oidc_token.json` in the upstream registry (UPSTREAM.md §8; upstream's
// crates/openshell-bootstrap/src/oidc_token.rs): read and checked (errors name the file and the
// field, never a value), and written back after a refresh atomically (a temporary file in the same
// directory, mode 0600, fsync, rename, fsync of the directory), so that a crash or a second
// command line never sees half a file, and a rotated refresh token is never lost once the issuer
// has spent the old one. Fields this module does not know are kept as they were.

import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, unlinkSync, writeSync, constants } from "node:fs";
import { randomBytes } from "node:crypto";
import { basename, dirname, join } from "node:path";
import { readBounded } from "./bounded-file.js";
import { ConfigError, jsonErrorPosition } from "./config-error.js";

/** The largest oidc_token.json read (a JWT access token and a refresh token: a few KiB). */
export const MAX_TOKEN_FILE_BYTES = 64 * 1024;
/** A token this close to its expiry counts as expired (upstream's 30 s). */
export const EXPIRY_MARGIN_S = 30;

/** What to run to sign in to gateway `name` again (the openshell CLI owns the login). */
export const loginHint = (name: string) => `run "openshell gateway login ${name}"`;

export interface OidcTokenFile {
  readonly file: string;
  readonly accessToken: string;
  /** Absent for tokens from the client-credentials grant. */
  readonly refreshToken: string | undefined;
  /** Unix seconds; absent: the expiry is unknown (used as is, as upstream does). */
  readonly expiresAt: number | undefined;
  readonly issuer: string;
  readonly clientId: string;
  /** The file's permission bits. */
  readonly mode: number;
  /** Every field as read, for a rewrite that keeps the ones not known here. */
  readonly fields: Readonly<Record<string, unknown>>;
}

/** Reads and checks `file`; undefined when it does not exist. Throws ConfigError otherwise. */
export function readOidcTokenFile(file: string): OidcTokenFile | undefined {
  const read = readBounded(file, MAX_TOKEN_FILE_BYTES);
  if ("missing" in read) return undefined;
  if ("problem" in read) throw new ConfigError(`cannot read OIDC token file ${file}: ${read.problem}`);
  let value: unknown;
  try {
    value = JSON.parse(read.text);
  } catch (err) {
    throw new ConfigError(`OIDC token file ${file} is not valid JSON${jsonErrorPosition(err)}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new ConfigError(`OIDC token file ${file} must hold a JSON object`);
  const o = value as Record<string, unknown>;
  const fail = (field: string, what: string): never => {
    throw new ConfigError(`OIDC token file ${file}: "${field}" ${what}`);
  };
  const str = (field: string, required: boolean): string | undefined => {
    const v = o[field];
    if (v === undefined || v === null) return required ? fail(field, "is required (a non-empty string)") : undefined;
    if (typeof v !== "string" || v === "") fail(field, "must be a non-empty string");
    return v as string;
  };
  const expiresAt = o.expires_at;
  if (expiresAt !== undefined && expiresAt !== null && !(typeof expiresAt === "number" && Number.isSafeInteger(expiresAt) && expiresAt >= 0)) {
    fail("expires_at", "must be a time in Unix seconds");
  }
  return {
    file,
    accessToken: str("access_token", true)!,
    refreshToken: str("refresh_token", false),
    expiresAt: typeof expiresAt === "number" ? expiresAt : undefined,
    issuer: str("issuer", true)!,
    clientId: str("client_id", true)!,
    mode: read.mode,
    fields: o,
  };
}

/** True when the access token expires within EXPIRY_MARGIN_S of `nowS` (Unix seconds). */
export function isExpired(token: Pick<OidcTokenFile, "expiresAt">, nowS: number = Date.now() / 1000): boolean {
  return token.expiresAt !== undefined && nowS + EXPIRY_MARGIN_S >= token.expiresAt;
}

/** True when other users may read or change the file (upstream writes it 0600). */
export function tooOpen(mode: number): boolean {
  return (mode & 0o077) !== 0;
}

/**
 * Writes `fields` to `file` as upstream's store_oidc_token does (pretty JSON, mode 0600), but
 * atomically: the directory is created 0700 when missing.
 */
export function writeOidcTokenFile(file: string, fields: Readonly<Record<string, unknown>>): void {
  const dir = dirname(file);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.${basename(file)}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`);
  // O_EXCL: never write through a file (or a link) someone put there first.
  const fd = openSync(temp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  let closed = false;
  let renamed = false;
  try {
    const data = Buffer.from(`${JSON.stringify(fields, null, 2)}\n`);
    for (let off = 0; off < data.length; ) off += writeSync(fd, data, off);
    fsyncSync(fd);
    closed = true;
    closeSync(fd);
    renameSync(temp, file);
    renamed = true;
  } finally {
    if (!closed) closeSync(fd);
    if (!renamed) {
      try {
        unlinkSync(temp);
      } catch {
        // not created, or already gone
      }
    }
  }
  // The rename itself is durable once the directory is synced.
  try {
    const dfd = openSync(dir, constants.O_RDONLY);
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // Some file systems cannot sync a directory; the file itself is complete either way.
  }
}

/** The fields of `previous` with a new access token (and refresh token and expiry, when given). */
export function rotatedFields(
  previous: Readonly<Record<string, unknown>>,
  next: { readonly accessToken: string; readonly refreshToken?: string | undefined; readonly expiresAt?: number | undefined },
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...previous, access_token: next.accessToken };
  if (next.refreshToken !== undefined) out.refresh_token = next.refreshToken;
  if (next.expiresAt !== undefined) out.expires_at = next.expiresAt;
  else delete out.expires_at;
  return out;
}
