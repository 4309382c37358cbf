// Who may do what: the principal of a call, role checks, and workspace resolution. A resource
// in a workspace the caller cannot see is reported as not found, so its existence does not leak.

import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type { WorkspaceSelector } from "openshell-config/raw";
import { principalKey } from "../auth/interceptor.js";
import { canAccessWorkspace, type Principal } from "../auth/principal.js";
import { isWorkspaceName, quotedName, WORKSPACE_NAME_RULE } from "../model/workspace-name.js";

export const DEFAULT_WORKSPACE = "default";

export function principalOf(ctx: HandlerContext): Principal {
  const p = ctx.values.get(principalKey);
  if (!p) throw new ConnectError("missing bearer token", Code.Unauthenticated);
  return p;
}

/** Users and admins; supervisors may only use their own stream and config reads. */
export function requireUser(ctx: HandlerContext): Principal {
  const p = principalOf(ctx);
  if (p.role === "supervisor") throw new ConnectError("supervisor tokens cannot call this method", Code.PermissionDenied);
  return p;
}

export function requireAdmin(ctx: HandlerContext): Principal {
  const p = requireUser(ctx);
  if (p.role !== "admin") throw new ConnectError("this method requires the admin role", Code.PermissionDenied);
  return p;
}

/** A platform admin: admin of every workspace (global configuration). */
export function requirePlatformAdmin(ctx: HandlerContext): Principal {
  const p = requireAdmin(ctx);
  if (p.workspaces !== "*") throw new ConnectError("global configuration requires a platform admin", Code.PermissionDenied);
  return p;
}

/**
 * The single workspace a request names. As upstream (UPSTREAM.md §2.1: "Single-resource requests
 * need a named workspace (`default` = default workspace; empty is invalid)"; §7: "An absent scope
 * is not the upstream form"), a missing selector, or one with no selection, is INVALID_ARGUMENT
 * "workspace_scope is required", like the upstream gateway's `selected_workspace`; callers name
 * `default` for the default workspace. The one exception: a supervisor reading its own
 * configuration may omit the scope (§2.6: GetSandboxConfig, "scope optional for sandbox callers at
 * bootstrap"), so getSandboxConfig does not call this for supervisor principals (nor, under
 * --no-auth, for a request without a scope, which may be a tokenless polling supervisor). Global
 * requests must omit it (§2.2) and never get here. A name not of the form workspace-name.ts
 * defines is INVALID_ARGUMENT, for reads as for writes.
 */
export function singleWorkspace(selector: WorkspaceSelector | undefined, field = "workspace_scope"): string {
  const s = selector?.selection;
  if (s === undefined || s.case === undefined) throw new ConnectError(`${field} is required`, Code.InvalidArgument);
  if (s.case === "allWorkspaces") throw new ConnectError(`${field} must name one workspace for this method`, Code.InvalidArgument);
  if (s.value === "") throw new ConnectError(`${field}.workspace must not be empty`, Code.InvalidArgument);
  if (!isWorkspaceName(s.value)) {
    throw new ConnectError(`${field}.workspace ${quotedName(s.value)} is not a workspace name: ${WORKSPACE_NAME_RULE}`, Code.InvalidArgument);
  }
  return s.value;
}

/** Throws NOT_FOUND (`what` not found) unless `p` may see `workspace`. */
export function assertWorkspace(p: Principal, workspace: string, what: string): void {
  if (!canAccessWorkspace(p, workspace)) throw new ConnectError(`${what} not found`, Code.NotFound);
  if (p.sandbox && p.sandbox.workspace !== workspace) throw new ConnectError(`${what} not found`, Code.NotFound);
}
