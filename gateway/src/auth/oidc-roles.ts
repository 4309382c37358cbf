// Which principal a verified OIDC token stands for: its `sub` (as `oidc:<sub>`), a role from a
// roles claim or a scope mapped to admin or user, and its workspaces (every workspace, or the
// ones a workspaces claim lists). Configured by the auth file's "oidc" section; defaults below.

import { isObject, type Fail } from "./principal-entry.js";
import type { Principal } from "./principal.js";

/** The auth file's "oidc" section, with defaults filled in. */
export interface OidcRoleMapping {
  /** Claim holding the caller's roles: an array of strings or a space-separated string. A dotted path (`realm_access.roles`) reaches into objects when no claim has that exact name. */
  readonly rolesClaim: string;
  readonly adminRoles: readonly string[];
  readonly userRoles: readonly string[];
  /** Scopes (in `scope` or `scp`) that grant admin or user. */
  readonly adminScopes: readonly string[];
  readonly userScopes: readonly string[];
  /** Claim listing the caller's workspaces (array of names, or `"*"`); absent = every workspace. */
  readonly workspacesClaim: string | undefined;
}

export const DEFAULT_OIDC_ROLE_MAPPING: OidcRoleMapping = Object.freeze({
  rolesClaim: "roles",
  adminRoles: Object.freeze(["openshell-admin"]),
  userRoles: Object.freeze(["openshell-user"]),
  adminScopes: Object.freeze(["openshell:admin"]),
  userScopes: Object.freeze(["openshell:user"]),
  workspacesClaim: undefined,
});

/** Longest `sub` accepted: it becomes the principal's name in logs and provenance. */
const MAX_SUBJECT_LENGTH = 256;

/** A principal, or why a valid token grants nothing (PERMISSION_DENIED) or is unusable (UNAUTHENTICATED). */
export type ClaimsOutcome =
  | { readonly ok: true; readonly principal: Principal }
  | { readonly ok: false; readonly code: "denied" | "invalid"; readonly reason: string };

/** Maps the verified claims of a token to a principal. */
export function principalFromClaims(claims: Record<string, unknown>, mapping: OidcRoleMapping): ClaimsOutcome {
  const sub = claims.sub;
  if (typeof sub !== "string" || sub === "") return { ok: false, code: "invalid", reason: "no subject" };
  if (sub.length > MAX_SUBJECT_LENGTH) return { ok: false, code: "invalid", reason: `subject longer than ${MAX_SUBJECT_LENGTH} characters` };
  const roles = words(claim(claims, mapping.rolesClaim));
  const scopes = [...words(claims.scope), ...words(claims.scp)];
  const grants = (names: readonly string[], scopeNames: readonly string[]) =>
    roles.some((r) => names.includes(r)) || scopes.some((s) => scopeNames.includes(s));
  const role = grants(mapping.adminRoles, mapping.adminScopes) ? "admin" : grants(mapping.userRoles, mapping.userScopes) ? "user" : undefined;
  if (role === undefined) return { ok: false, code: "denied", reason: "the token grants no OpenShell role (admin or user)" };
  let workspaces: "*" | readonly string[] = "*";
  if (mapping.workspacesClaim !== undefined) {
    const value = claim(claims, mapping.workspacesClaim);
    const list = value === "*" ? "*" : words(value);
    if (list.length === 0) return { ok: false, code: "denied", reason: `the token names no workspace in claim "${mapping.workspacesClaim}"` };
    workspaces = list === "*" ? "*" : Object.freeze(list);
  }
  return { ok: true, principal: Object.freeze({ name: `oidc:${sub}`, role, workspaces }) };
}

/** Validates the auth file's "oidc" section (undefined = defaults). */
export function parseOidcRoleMapping(value: unknown, fail: Fail): OidcRoleMapping {
  if (value === undefined) return DEFAULT_OIDC_ROLE_MAPPING;
  if (!isObject(value)) fail(`"oidc" must be an object`);
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!OIDC_KEYS.includes(key)) fail(`oidc.${key}: unknown field (expected ${OIDC_KEYS.join(", ")})`);
  }
  const name = (key: "rolesClaim" | "workspacesClaim") => {
    const v = o[key];
    if (v === undefined) return undefined;
    if (typeof v !== "string" || v === "") fail(`oidc.${key}: must be a non-empty claim name`);
    return v as string;
  };
  const list = (key: "adminRoles" | "userRoles" | "adminScopes" | "userScopes") => {
    const v = o[key];
    if (v === undefined) return DEFAULT_OIDC_ROLE_MAPPING[key];
    if (!Array.isArray(v) || !v.every((s) => typeof s === "string" && s !== "" && !/\s/.test(s))) {
      fail(`oidc.${key}: must be an array of names without spaces ([] grants nothing)`);
    }
    return Object.freeze([...(v as string[])]);
  };
  return Object.freeze({
    rolesClaim: name("rolesClaim") ?? DEFAULT_OIDC_ROLE_MAPPING.rolesClaim,
    adminRoles: list("adminRoles"),
    userRoles: list("userRoles"),
    adminScopes: list("adminScopes"),
    userScopes: list("userScopes"),
    workspacesClaim: name("workspacesClaim"),
  });
}

const OIDC_KEYS = ["rolesClaim", "adminRoles", "userRoles", "adminScopes", "userScopes", "workspacesClaim"];

/** A claim by exact name, else by dotted path through nested objects. */
function claim(claims: Record<string, unknown>, name: string): unknown {
  if (Object.hasOwn(claims, name)) return claims[name];
  let at: unknown = claims;
  for (const part of name.split(".")) {
    if (!isObject(at) || !Object.hasOwn(at, part)) return undefined;
    at = at[part];
  }
  return at;
}

/** Strings of an array, or the words of a space-separated string; anything else is none. */
function words(value: unknown): string[] {
  if (typeof value === "string") return value.split(/\s+/).filter((w) => w !== "");
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === "string" && v !== "");
  return [];
}
