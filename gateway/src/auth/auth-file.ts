// The gateway's token file: which bearer tokens exist and whom they stand for. Loaded and checked
// once at startup; only SHA-256 digests of the tokens are kept in memory.

import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
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
}

/** Thrown for an unreadable or invalid auth file; the message names the entry and field. */
export class AuthFileError extends Error {
  override readonly name = "AuthFileError";
}

/** SHA-256 of a token. */
export function tokenDigest(token: string): Buffer {
  return createHash("sha256").update(token, "utf8").digest();
}

/** Reads and validates the auth file at `path`. */
export async function loadAuthFile(path: string): Promise<AuthFile> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw new AuthFileError(`auth file ${path}: cannot read: ${(err as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new AuthFileError(`auth file ${path}: not valid JSON: ${(err as Error).message}`);
  }
  return parseAuthFile(json, path);
}

/** Validates an auth file's parsed JSON. `source` prefixes error messages. */
export function parseAuthFile(json: unknown, source = "auth file"): AuthFile {
  const fail = (msg: string): never => {
    throw new AuthFileError(`${source}: ${msg}`);
  };
  if (!isObject(json)) fail(`expected an object with a "tokens" array`);
  const tokens = (json as Record<string, unknown>).tokens;
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
    entries.push({ digest, principal: entryPrincipal(e, at, fail) });
  });
  return { entries };
}

function entryDigest(e: Record<string, unknown>, at: (f: string) => string, fail: (m: string) => never): Buffer {
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

function entryPrincipal(e: Record<string, unknown>, at: (f: string) => string, fail: (m: string) => never): Principal {
  const name = e.principal;
  if (typeof name !== "string" || name.trim() === "") fail(`${at("principal")}: must be a non-empty string`);
  const role = e.role;
  if (role === "supervisor") {
    const workspace = e.workspace;
    const sandbox = e.sandbox;
    if (typeof workspace !== "string" || workspace === "") fail(`${at("workspace")}: a supervisor needs its sandbox's workspace`);
    if (typeof sandbox !== "string" || sandbox === "") fail(`${at("sandbox")}: a supervisor needs the name of its sandbox`);
    if (e.workspaces !== undefined) fail(`${at("workspaces")}: not allowed for a supervisor (use "workspace")`);
    return {
      name: name as string,
      role,
      workspaces: Object.freeze([workspace as string]),
      sandbox: Object.freeze({ workspace: workspace as string, name: sandbox as string }),
    };
  }
  if (role !== "admin" && role !== "user") fail(`${at("role")}: must be "admin", "user" or "supervisor"`);
  const ws = e.workspaces;
  let workspaces: "*" | readonly string[] = "*";
  if (ws !== "*") {
    if (!Array.isArray(ws) || ws.length === 0 || !ws.every((w) => typeof w === "string" && w !== "")) {
      fail(`${at("workspaces")}: must be "*" or a non-empty array of workspace names`);
    }
    workspaces = Object.freeze([...(ws as string[])]);
  }
  if (e.sandbox !== undefined || e.workspace !== undefined) {
    fail(`${at(e.sandbox !== undefined ? "sandbox" : "workspace")}: only supervisor entries name a sandbox`);
  }
  return Object.freeze({ name: name as string, role: role as "admin" | "user", workspaces });
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
