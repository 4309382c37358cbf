// Sandbox lifecycle: create, read, list, stop, start, delete. Stopping and deleting resolve the
// sandbox's pending operations (INACTIVE, CANCELLED) in the same transaction as the phase change.
// Creating and deleting record which principal did it (a log line, and a lifecycle record stored
// with the change and kept after the sandbox is gone); a re-created sandbox is a new instance,
// which the deleted one's supervisors do not serve (supervisor-identity.ts).

import { randomBytes, randomUUID } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  ConfigUpdateOperationState as State,
  DeletionOutcome,
  PolicyStatus,
  SandboxPhase,
  SandboxPolicySchema,
  SandboxSpecSchema,
  type CreateSandboxRequest,
  type DeleteSandboxRequest,
  type DeleteSandboxResponse,
  type GetSandboxRequest,
  type ListSandboxesRequest,
  type ListSandboxesResponse,
  type Sandbox,
  type SandboxResponse,
  type StartSandboxRequest,
  type StopSandboxRequest,
} from "openshell-config/raw";
import { StoreConflictError, type OperationRecord, type SandboxRecord, type StoreTx } from "../store/store.js";
import { policyHash, validatePolicy } from "../model/policy.js";
import { toSandbox } from "../model/convert.js";
import { resolveInTx } from "../operations/transitions.js";
import { assertWorkspace, requireUser, singleWorkspace } from "./access.js";
import type { GatewayDeps } from "./deps.js";
import { encodeMessage } from "../model/binary-encoder.js";
import { assertCreatable } from "../operations/snapshot-cap.js";

const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function invalid(message: string): ConnectError {
  return new ConnectError(message, Code.InvalidArgument);
}

/** The sandboxes as callers see them, each with what it enforces (one read for the lot). */
async function withEnforcement(deps: GatewayDeps, sbs: readonly SandboxRecord[]): Promise<Sandbox[]> {
  const records = new Map((await deps.store.enforcements(sbs.map((sb) => sb.id))).map((e) => [e.sandboxId, e]));
  return sbs.map((sb) => toSandbox(sb, records.get(sb.id)));
}

async function response(deps: GatewayDeps, sb: SandboxRecord): Promise<SandboxResponse> {
  const [sandbox] = await withEnforcement(deps, [sb]);
  return { $typeName: "openshell.v1.SandboxResponse", sandbox, serviceUrls: {} };
}

export function parseLabelSelector(selector: string): Record<string, string> {
  const labels: Record<string, string> = {};
  if (selector.trim() === "") return labels;
  for (const part of selector.split(",")) {
    const m = /^\s*([^=\s]+)\s*=\s*([^=\s]*)\s*$/.exec(part);
    if (!m) throw invalid(`label_selector: "${part}" is not key=value`);
    labels[m[1]!] = m[2]!;
  }
  return labels;
}

export async function createSandbox(deps: GatewayDeps, req: CreateSandboxRequest, ctx: HandlerContext): Promise<SandboxResponse> {
  const p = requireUser(ctx);
  const workspace = singleWorkspace(req.workspaceScope);
  assertWorkspace(p, workspace, "workspace");
  const name = req.name === "" ? `sandbox-${randomBytes(4).toString("hex")}` : req.name;
  if (!NAME.test(name)) throw invalid("name must be 1-63 lowercase letters, digits or '-', starting and ending with a letter or digit");
  const spec = req.spec ?? create(SandboxSpecSchema);
  const policy = spec.policy ?? create(SandboxPolicySchema);
  validatePolicy(policy, "spec.policy");
  spec.policy = policy;
  const now = new Date();
  try {
    const sb = await deps.store.transaction(async (tx) => {
      for (const provider of spec.providers) {
        if (!(await tx.providerByName(workspace, provider))) throw invalid(`spec.providers: provider "${provider}" not found`);
      }
      const record: SandboxRecord = {
        id: randomUUID(),
        workspace,
        name,
        labels: { ...req.labels },
        annotations: { ...req.annotations },
        spec: encodeMessage(SandboxSpecSchema, spec),
        phase: SandboxPhase.PROVISIONING,
        resourceVersion: 1n,
        policyVersion: 1,
        policyHash: policyHash(policy),
        settingsRevision: 0n,
        providerEnvRevision: 1n,
        providers: [...spec.providers],
        createdAt: now,
        deletionAt: undefined,
      };
      // A first configuration larger than a supervisor accepts could never be delivered.
      const policyBytes = encodeMessage(SandboxPolicySchema, policy);
      await assertCreatable(tx, record, policy, policyBytes.length, deps.maxSnapshotBytes);
      await tx.insertSandbox(record);
      await tx.recordSandboxEvent({ sandboxId: record.id, event: "created", workspace, name, principal: p.name, at: now });
      await tx.insertPolicyRevision({
        sandboxId: record.id,
        version: 1,
        policy: policyBytes,
        hash: record.policyHash,
        status: PolicyStatus.PENDING,
        loadError: "",
        createdAt: now,
        loadedAt: undefined,
        provenance: {},
      });
      return record;
    });
    deps.logger.info({ sandbox: name, workspace, id: sb.id, principal: p.name }, "sandbox created");
    return response(deps, sb);
  } catch (err) {
    if (err instanceof StoreConflictError) throw new ConnectError(`sandbox "${name}" already exists`, Code.AlreadyExists);
    throw err;
  }
}

async function visibleSandbox(deps: GatewayDeps, ctx: HandlerContext, name: string, selector: GetSandboxRequest["workspaceScope"]) {
  const p = requireUser(ctx);
  if (name === "") throw invalid("name is required");
  const workspace = singleWorkspace(selector);
  assertWorkspace(p, workspace, `sandbox "${name}"`);
  return { p, workspace };
}

export async function getSandbox(deps: GatewayDeps, req: GetSandboxRequest, ctx: HandlerContext): Promise<SandboxResponse> {
  const { workspace } = await visibleSandbox(deps, ctx, req.name, req.workspaceScope);
  const sb = await deps.store.sandboxByName(workspace, req.name);
  if (!sb) throw new ConnectError(`sandbox "${req.name}" not found`, Code.NotFound);
  return response(deps, sb);
}

export async function listSandboxes(deps: GatewayDeps, req: ListSandboxesRequest, ctx: HandlerContext): Promise<ListSandboxesResponse> {
  const p = requireUser(ctx);
  if (req.pageSize < 0) throw invalid("page_size must not be negative");
  const pageSize = req.pageSize === 0 ? 100 : Math.min(req.pageSize, 1000);
  let workspace: string | undefined;
  if (req.workspaceScope?.selection.case === "allWorkspaces") {
    if (p.workspaces !== "*") throw new ConnectError("listing every workspace requires access to every workspace", Code.PermissionDenied);
  } else {
    workspace = singleWorkspace(req.workspaceScope);
    assertWorkspace(p, workspace, "workspace");
  }
  const page = await deps.store.listSandboxes({ workspace, labels: parseLabelSelector(req.labelSelector), pageSize, pageToken: req.pageToken });
  return { $typeName: "openshell.v1.ListSandboxesResponse", sandboxes: await withEnforcement(deps, page.items), nextPageToken: page.nextPageToken };
}

/** Resolves every pending operation of `sb` inside `tx`. */
async function resolvePending(tx: StoreTx, sb: SandboxRecord, state: State, error: string): Promise<OperationRecord[]> {
  const done: OperationRecord[] = [];
  for (const op of await tx.pendingOperations(sb.id)) {
    const next = await resolveInTx(tx, op, { state, error });
    if (next) done.push(next);
  }
  return done;
}

async function changePhase(
  deps: GatewayDeps,
  ctx: HandlerContext,
  req: StopSandboxRequest | StartSandboxRequest,
  to: SandboxPhase,
  resolve?: { state: State; error: string },
): Promise<SandboxResponse> {
  const { workspace } = await visibleSandbox(deps, ctx, req.name, req.workspaceScope);
  const { sb, touched } = await deps.store.transaction(async (tx) => {
    const current = await tx.sandboxByName(workspace, req.name);
    if (!current) throw new ConnectError(`sandbox "${req.name}" not found`, Code.NotFound);
    if (current.phase === SandboxPhase.DELETING) throw new ConnectError(`sandbox "${req.name}" is being deleted`, Code.FailedPrecondition);
    if (current.phase === to) return { sb: current, touched: [] };
    const touched = resolve ? await resolvePending(tx, current, resolve.state, resolve.error) : [];
    return { sb: await tx.updateSandbox(current.id, { phase: to }), touched };
  });
  deps.transitions.announce(touched);
  deps.publish(sb.id);
  return response(deps, sb);
}

export function stopSandbox(deps: GatewayDeps, req: StopSandboxRequest, ctx: HandlerContext): Promise<SandboxResponse> {
  return changePhase(deps, ctx, req, SandboxPhase.STOPPED, {
    state: State.INACTIVE,
    error: "the sandbox was stopped; the change applies when it starts",
  });
}

export function startSandbox(deps: GatewayDeps, req: StartSandboxRequest, ctx: HandlerContext): Promise<SandboxResponse> {
  // PROVISIONING until its supervisor has applied the bootstrap.
  return changePhase(deps, ctx, req, SandboxPhase.PROVISIONING);
}

export async function deleteSandbox(deps: GatewayDeps, req: DeleteSandboxRequest, ctx: HandlerContext): Promise<DeleteSandboxResponse> {
  const { p, workspace } = await visibleSandbox(deps, ctx, req.name, req.workspaceScope);
  const result = await deps.store.transaction(async (tx) => {
    const sb = await tx.sandboxByName(workspace, req.name);
    if (!sb) return undefined;
    // The row lock serializes this with concurrent commits: they see the sandbox gone.
    const touched = await resolvePending(tx, sb, State.CANCELLED, "sandbox no longer exists");
    await tx.deleteSandbox(sb.id);
    // Kept after the sandbox: who deleted it, and what its supervisors are told when they return.
    await tx.recordSandboxEvent({ sandboxId: sb.id, event: "deleted", workspace, name: sb.name, principal: p.name, at: new Date() });
    return { sb, touched };
  });
  if (!result) {
    if (!req.allowMissing) throw new ConnectError(`sandbox "${req.name}" not found`, Code.NotFound);
    return { $typeName: "openshell.v1.DeleteSandboxResponse", outcome: DeletionOutcome.ALREADY_ABSENT, sandboxId: "" };
  }
  deps.transitions.announce(result.touched);
  // Its supervisor session, if any, finds the sandbox gone and ends (NOT_FOUND). When the
  // supervisor reconnects it is refused: its credential served this instance, and a sandbox
  // re-created under the same name is another one (supervisor-identity.ts).
  deps.publish(result.sb.id);
  deps.logger.info({ sandbox: req.name, workspace, id: result.sb.id, principal: p.name }, "sandbox deleted");
  return { $typeName: "openshell.v1.DeleteSandboxResponse", outcome: DeletionOutcome.COMPLETED, sandboxId: result.sb.id };
}
