// The workspace a request applies to, in the form the upstream gateway requires: every
// sandbox-scoped request names one workspace, `default` when the caller names none (the fork's
// TypeScript SDK does the same; an absent scope is rejected with INVALID_ARGUMENT
// "workspace_scope is required"). List requests may select all workspaces instead.

import { create } from "@bufbuild/protobuf";
import { WorkspaceSelectorSchema, type WorkspaceSelector } from "./gen/openshell/datamodel/v1/datamodel_pb.js";

/** The name of the gateway's default workspace. */
export const DEFAULT_WORKSPACE = "default";

/**
 * The `workspace_scope` of a request: the named workspace, or `default` when `workspace` is
 * undefined. Use it on raw requests too, e.g.
 * `raw.getSandbox({ name: "dev", workspaceScope: workspaceScope() })`.
 */
export function workspaceScope(workspace?: string): WorkspaceSelector {
  return create(WorkspaceSelectorSchema, { selection: { case: "workspace", value: workspace ?? DEFAULT_WORKSPACE } });
}

/** The `workspace_scope` that selects every workspace (list requests only; platform admins). */
export function allWorkspacesScope(): WorkspaceSelector {
  return create(WorkspaceSelectorSchema, { selection: { case: "allWorkspaces", value: {} } });
}
