// How an auth-file entry names a principal (`principal`, `role`, `workspaces`, or a supervisor's
// `workspace`, `sandbox` and optionally `sandboxId`): shared by token entries and
// client-certificate entries, so both validate the same way and report the same field names.

import { withCredential } from "./principal-credential.js";
import type { Principal } from "./principal.js";
import { isWorkspaceName, quotedName, WORKSPACE_NAME_RULE } from "../model/workspace-name.js";

/** Reports a validation error; never returns. */
export type Fail = (message: string) => never;

/** Longest `sandboxId` accepted (sandbox ids are UUIDs; this leaves room for other stores' ids). */
const MAX_SANDBOX_ID = 128;

/**
 * The principal an entry describes. `at(field)` names a field in errors, e.g. `tokens[2].role`.
 * `credential`: the entry's credential key (principal-credential.ts), kept for supervisors.
 */
export function entryPrincipal(e: Record<string, unknown>, at: (field: string) => string, fail: Fail, credential?: string): Principal {
  const name = e.principal;
  if (typeof name !== "string" || name.trim() === "") fail(`${at("principal")}: must be a non-empty string`);
  const role = e.role;
  if (role === "supervisor") {
    const workspace = e.workspace;
    const sandbox = e.sandbox;
    if (typeof workspace !== "string" || workspace === "") fail(`${at("workspace")}: a supervisor needs its sandbox's workspace`);
    if (!isWorkspaceName(workspace as string)) fail(`${at("workspace")}: ${quotedName(workspace as string)} is not a workspace name (${WORKSPACE_NAME_RULE})`);
    if (typeof sandbox !== "string" || sandbox === "") fail(`${at("sandbox")}: a supervisor needs the name of its sandbox`);
    if (e.workspaces !== undefined) fail(`${at("workspaces")}: not allowed for a supervisor (use "workspace")`);
    const id = e.sandboxId;
    if (id !== undefined && (typeof id !== "string" || !/^[\x21-\x7e]+$/.test(id) || id.length > MAX_SANDBOX_ID)) {
      fail(`${at("sandboxId")}: must be the id of the sandbox instance (1-${MAX_SANDBOX_ID} printable ASCII characters, no spaces)`);
    }
    const principal: Principal = {
      name: name as string,
      role,
      workspaces: Object.freeze([workspace as string]),
      sandbox: Object.freeze({ workspace: workspace as string, name: sandbox as string, ...(id !== undefined ? { id: id as string } : {}) }),
    };
    return credential === undefined ? principal : withCredential(principal, credential);
  }
  if (role !== "admin" && role !== "user") fail(`${at("role")}: must be "admin", "user" or "supervisor"`);
  const workspaces = workspaceList(e.workspaces, at("workspaces"), fail);
  for (const field of ["sandbox", "sandboxId", "workspace"]) {
    if (e[field] !== undefined) fail(`${at(field)}: only supervisor entries name a sandbox`);
  }
  return Object.freeze({ name: name as string, role: role as "admin" | "user", workspaces });
}

/** `"*"` or a non-empty array of workspace names. */
export function workspaceList(value: unknown, field: string, fail: Fail): "*" | readonly string[] {
  if (value === "*") return "*";
  if (!Array.isArray(value) || value.length === 0 || !value.every((w) => typeof w === "string" && w !== "")) {
    fail(`${field}: must be "*" or a non-empty array of workspace names`);
  }
  (value as string[]).forEach((w, i) => {
    if (!isWorkspaceName(w)) fail(`${field}[${i}]: ${quotedName(w)} is not a workspace name (${WORKSPACE_NAME_RULE})`);
  });
  return Object.freeze([...(value as string[])]);
}

/** A non-empty array of non-empty strings. */
export function stringList(value: unknown, field: string, fail: Fail): readonly string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((s) => typeof s === "string" && s !== "")) {
    fail(`${field}: must be a non-empty array of non-empty strings`);
  }
  return Object.freeze([...(value as string[])]);
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
