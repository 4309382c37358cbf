/**
 * The raw escape hatch: generated messages, enums and service descriptors.
 *
 * Everything here is produced by `buf generate` from `proto/` (see
 * `src/gen/`) and re-exported unchanged, for callers who need a wire-level
 * type the typed API does not cover. The three generated packages
 * (`openshell.v1`, `openshell.sandbox.v1`, `openshell.datamodel.v1`) have no
 * colliding export names, so they are re-exported flat.
 *
 * One helper goes with them: `workspaceScope(name?)` builds the `workspace_scope` every
 * sandbox-scoped request must carry (`default` when no name is given), as the upstream gateway
 * requires; `allWorkspacesScope()` selects every workspace on list requests.
 *
 * @example
 * ```ts
 * import { OpenShell, workspaceScope } from "openshell-config/raw";
 *
 * // A Connect client for the whole OpenShell service, on the client's transport and token:
 * const { sandboxes } = await client.raw(OpenShell).listSandboxes({ workspaceScope: workspaceScope() });
 * ```
 *
 * @module openshell-config/raw
 */
export * from "./gen/openshell/datamodel/v1/datamodel_pb.js";
export * from "./gen/openshell/sandbox/v1/sandbox_pb.js";
export * from "./gen/openshell/v1/openshell_pb.js";
export * from "./gen/openshell/v1/config_pb.js";
export * from "./gen/openshell/v1/sandboxes_pb.js";
export * from "./gen/openshell/v1/supervisor_pb.js";
export * from "./gen/openshell/v1/rollouts_pb.js";
export { workspaceScope, allWorkspacesScope, DEFAULT_WORKSPACE } from "./workspace.js";
