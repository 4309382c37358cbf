// How an auth-file entry names a principal (`principal`, `role`, `workspaces`, or a supervisor's
// `workspace` and `sandbox`): shared by token entries and client-certificate entries, so both
// validate the same way and report the same field names.

import type { Principal } from "./principal.js";

/** Reports a validation error; never returns. */
export type Fail = (message: string) => never;

/** The principal an entry describes. `at(field)` names a field in errors, e.g. `tokens[2].role`. */
export function entryPrincipal(e: Record<string, unknown>, at: (field: string) => string, fail: Fail): Principal {
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
  const workspaces = workspaceList(e.workspaces, at("workspaces"), fail);
  if (e.sandbox !== undefined || e.workspace !== undefined) {
    fail(`${at(e.sandbox !== undefined ? "sandbox" : "workspace")}: only supervisor entries name a sandbox`);
  }
  return Object.freeze({ name: name as string, role: role as "admin" | "user", workspaces });
}

/** `"*"` or a non-empty array of workspace names. */
export function workspaceList(value: unknown, field: string, fail: Fail): "*" | readonly string[] {
  if (value === "*") return "*";
  if (!Array.isArray(value) || value.length === 0 || !value.every((w) => typeof w === "string" && w !== "")) {
    fail(`${field}: must be "*" or a non-empty array of workspace names`);
  }
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
