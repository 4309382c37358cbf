// Desired-configuration reads: GetSandboxConfig (the snapshot a supervisor would receive; a
// supervisor token may read only its own sandbox) and GetGatewayConfig (global settings).

import { create, fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  GetGatewayConfigResponseSchema,
  GetSandboxConfigResponseSchema,
  SandboxConfigSnapshotSchema,
  SettingValueSchema,
  type GetGatewayConfigResponse,
  type GetSandboxConfigRequest,
  type GetSandboxConfigResponse,
} from "openshell-config/raw";

import { buildSnapshot } from "../model/snapshot.js";
import { NO_AUTH_PRINCIPAL } from "../auth/principal.js";
import { assertWorkspace, DEFAULT_WORKSPACE, principalOf, requireUser, singleWorkspace } from "./access.js";
import type { GatewayDeps } from "./deps.js";
import { encodeMessage } from "../model/binary-encoder.js";
import type { SandboxRecord } from "../store/store.js";
import { supervisorSandbox, supervisorScope } from "./supervisor-identity.js";

/** The newest global policy version (0 = none). */
export async function globalPolicyVersion(deps: Pick<GatewayDeps, "store">): Promise<number> {
  // The version alone: globalVersions reads no revision row (nor its policy bytes).
  return (await deps.store.globalVersions()).policyVersion;
}

export async function getSandboxConfig(deps: GatewayDeps, req: GetSandboxConfigRequest, ctx: HandlerContext): Promise<GetSandboxConfigResponse> {
  const p = principalOf(ctx);
  let workspace: string;
  let own: SandboxRecord | undefined;
  if (p.role === "supervisor") {
    // A supervisor may omit the scope; it can only ever read its own sandbox, the instance its
    // credential serves (supervisor-identity.ts).
    if (!p.sandbox || (req.name !== "" && req.name !== p.sandbox.name)) {
      throw new ConnectError(`sandbox "${req.name}" not found`, Code.NotFound);
    }
    workspace = p.sandbox.workspace;
    req.name = p.sandbox.name;
    own = await supervisorSandbox(deps, supervisorScope(p, "GetSandboxConfig"), req.name);
    if (!own) throw new ConnectError(`sandbox "${req.name}" not found`, Code.NotFound);
  } else {
    requireUser(ctx);
    if (req.name === "") throw new ConnectError("name is required", Code.InvalidArgument);
    // Under --no-auth a polling supervisor has no token, so it is not told apart from an admin;
    // like a supervisor with a token it may omit the scope, and then names a sandbox of the
    // default workspace (supervisor-identity.ts).
    const omitted = p === NO_AUTH_PRINCIPAL && req.workspaceScope?.selection.case === undefined;
    workspace = omitted ? DEFAULT_WORKSPACE : singleWorkspace(req.workspaceScope);
    assertWorkspace(p, workspace, `sandbox "${req.name}"`);
  }
  const sb = own ?? (await deps.store.sandboxByName(workspace, req.name));
  if (!sb) throw new ConnectError(`sandbox "${req.name}" not found`, Code.NotFound);
  const snapshot = await buildSnapshot(deps.store, sb, await globalPolicyVersion(deps));
  // Same field numbers, different message: convert through the wire format.
  return fromBinary(GetSandboxConfigResponseSchema, encodeMessage(SandboxConfigSnapshotSchema, snapshot));
}

export async function getGatewayConfig(deps: GatewayDeps, ctx: HandlerContext): Promise<GetGatewayConfigResponse> {
  requireUser(ctx);
  const settings = await deps.store.settings("");
  return create(GetGatewayConfigResponseSchema, {
    settings: Object.fromEntries(settings.map((s) => [s.key, fromBinary(SettingValueSchema, s.value)])),
    settingsRevision: await deps.store.globalSettingsRevision(),
  });
}
