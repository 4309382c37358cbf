// Policy status and history: GetSandboxPolicyStatus and ListSandboxPolicies, for the sandbox's
// own policy or the global one.

import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import { PolicyStatus } from "openshell-config/raw";
import type {
  GetSandboxPolicyStatusRequest,
  GetSandboxPolicyStatusResponse,
  ListSandboxPoliciesRequest,
  ListSandboxPoliciesResponse,
} from "openshell-config/raw";
import { toPolicyRevision } from "../model/convert.js";
import { fromEnforcementRecord } from "../model/enforcement.js";
import { assertWorkspace, requireUser, singleWorkspace } from "./access.js";
import type { GatewayDeps } from "./deps.js";

async function policyOwner(deps: GatewayDeps, ctx: HandlerContext, sandbox: string, global: boolean, selector: GetSandboxPolicyStatusRequest["workspaceScope"]) {
  const p = requireUser(ctx);
  if (global) {
    if (sandbox !== "") throw new ConnectError("sandbox must be omitted when global is true", Code.InvalidArgument);
    return { sandboxId: "" };
  }
  if (sandbox === "") throw new ConnectError("sandbox is required", Code.InvalidArgument);
  const workspace = singleWorkspace(selector);
  assertWorkspace(p, workspace, `sandbox "${sandbox}"`);
  const sb = await deps.store.sandboxByName(workspace, sandbox);
  if (!sb) throw new ConnectError(`sandbox "${sandbox}" not found`, Code.NotFound);
  return { sandboxId: sb.id };
}

export async function getSandboxPolicyStatus(
  deps: GatewayDeps,
  req: GetSandboxPolicyStatusRequest,
  ctx: HandlerContext,
): Promise<GetSandboxPolicyStatusResponse> {
  const owner = await policyOwner(deps, ctx, req.sandbox, req.global, req.workspaceScope);
  let version = req.version;
  if (version === 0) {
    const latest = await deps.store.listPolicyRevisions(owner.sandboxId, 1, "");
    version = latest.items[0]?.version ?? 0;
  }
  const rev = version === 0 ? undefined : await deps.store.policyRevision(owner.sandboxId, version);
  if (!rev) throw new ConnectError(`policy version ${req.version || "latest"} not found`, Code.NotFound);
  if (owner.sandboxId === "") {
    // The global policy: the newest version any supervisor reported loaded (0 = none yet).
    const recent = await deps.store.listPolicyRevisions("", 50, "");
    const active = recent.items.find((r) => r.status === PolicyStatus.LOADED);
    return { $typeName: "openshell.v1.GetSandboxPolicyStatusResponse", revision: toPolicyRevision(rev, false), activeVersion: active?.version ?? 0 };
  }
  // A sandbox: the version it enforces according to its latest result, which may be older than
  // the newest loaded one (a restart that lost the last known good fails closed: 0). A revision
  // asked for by version carries its policy (what a rollback returns a sandbox to); the latest
  // one (version 0, read by every getConfig) does not.
  const [record] = await deps.store.enforcements([owner.sandboxId]);
  return {
    $typeName: "openshell.v1.GetSandboxPolicyStatusResponse",
    revision: toPolicyRevision(rev, req.version !== 0),
    activeVersion: record?.policyVersion ?? 0,
    enforcement: record ? fromEnforcementRecord(record) : undefined,
  };
}

export async function listSandboxPolicies(
  deps: GatewayDeps,
  req: ListSandboxPoliciesRequest,
  ctx: HandlerContext,
): Promise<ListSandboxPoliciesResponse> {
  if (req.pageSize < 0) throw new ConnectError("page_size must not be negative", Code.InvalidArgument);
  const owner = await policyOwner(deps, ctx, req.sandbox, req.global, req.workspaceScope);
  const pageSize = req.pageSize === 0 ? 100 : Math.min(req.pageSize, 1000);
  const page = await deps.store.listPolicyRevisions(owner.sandboxId, pageSize, req.pageToken);
  return {
    $typeName: "openshell.v1.ListSandboxPoliciesResponse",
    revisions: page.items.map((r) => toPolicyRevision(r, false)),
    nextPageToken: page.nextPageToken,
  };
}
