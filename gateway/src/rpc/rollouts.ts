// Our extension RPCs for the shared rollout record (proto/openshell/v1/rollouts.proto): Create,
// Get, List, Update and Approve (WatchRollouts is in rollout-watch-stream.ts). The gateway stores
// what a rollout's driver writes and enforces the rules around it: who may act (admins write,
// users read, other workspaces see nothing), compare-and-swap on resource_version, one driver at
// a time by lease, no wave past an approval gate without its approval, and four eyes when asked.
// Writes answer with the record without request and state_json: the writer has them.

import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import {
  type ApproveRolloutRequest,
  type CreateRolloutRequest,
  type GetRolloutRequest,
  type ListRolloutsRequest,
  type ListRolloutsResponse,
  type RolloutResponse,
  type RolloutSummary,
  type UpdateConfigRequest,
  type UpdateRolloutRequest,
  UpdateConfigRequestSchema,
} from "openshell-config/raw";
import { toBinary } from "@bufbuild/protobuf";
import type { Principal } from "../auth/principal.js";
import { StoreConflictError } from "../store/store.js";
import type { RolloutLeaseRow, RolloutRow } from "../store/rollouts.js";
import { assertWorkspace, requireAdmin, requireUser, singleWorkspace } from "./access.js";
import type { GatewayDeps } from "./deps.js";
import { changeHash, decodeSummary, encodeSummary, toRolloutRecord } from "./rollout-convert.js";
import {
  checkTransition,
  invalid,
  leaseTtlMs,
  MAX_CHANGE_SUMMARY,
  MAX_LABEL_SELECTOR,
  fullView,
  validateDriver,
  validateLength,
  validatePhase,
  validateText,
  validateRequestTemplate,
  validateRolloutId,
  validateState,
} from "./rollout-validate.js";
import type { RolloutHub } from "./rollout-watch.js";

export interface RolloutDeps extends Pick<GatewayDeps, "store" | "logger" | "waiters"> {
  readonly hub: RolloutHub;
  /** How long a watch message may wait for its client (default WATCH_WRITE_TIMEOUT_MS, 20 s). */
  readonly watchWriteTimeoutMs?: number;
  /** The clock (tests may move it). */
  readonly now?: () => Date;
}

const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 500;
/** Approve with expected_resource_version 0 retries a lost CAS this often before ABORTED. */
const APPROVE_ATTEMPTS = 5;

export const rolloutNotFound = (id: string) => new ConnectError(`rollout "${id}" not found`, Code.NotFound);
const versionConflict = (id: string, current: bigint, expected: bigint) =>
  new ConnectError(`rollout "${id}" is at resource version ${current}, not ${expected}; read it again`, Code.Aborted);
const response = (row: RolloutRow, full = false): RolloutResponse => ({
  $typeName: "openshell.v1.RolloutResponse",
  rollout: toRolloutRecord(row, full),
});
const nowOf = (deps: RolloutDeps) => (deps.now ? deps.now() : new Date());

/** The workspace of a one-rollout request, checked: NOT_FOUND for a workspace the caller cannot see. */
function rolloutWorkspace(p: Principal, selector: GetRolloutRequest["workspaceScope"], id: string): string {
  validateRolloutId(id, "id");
  const workspace = singleWorkspace(selector);
  assertWorkspace(p, workspace, `rollout "${id}"`);
  return workspace;
}

async function existing(deps: RolloutDeps, workspace: string, id: string, withBody = false): Promise<RolloutRow> {
  const row = await deps.store.rollout(workspace, id, withBody);
  if (!row) throw rolloutNotFound(id);
  return row;
}

/**
 * The workspaces a list or watch of many covers: the named one, or with all_workspaces every
 * workspace the caller may see (undefined: all of them).
 */
export function rolloutScope(p: Principal, selector: ListRolloutsRequest["workspaceScope"]): readonly string[] | undefined {
  if (selector?.selection.case === "allWorkspaces") return p.workspaces === "*" ? undefined : [...p.workspaces];
  const workspace = singleWorkspace(selector);
  assertWorkspace(p, workspace, `workspace "${workspace}"`);
  return [workspace];
}

export async function createRollout(deps: RolloutDeps, req: CreateRolloutRequest, ctx: HandlerContext): Promise<RolloutResponse> {
  const p = requireAdmin(ctx);
  const workspace = singleWorkspace(req.workspaceScope);
  assertWorkspace(p, workspace, `workspace "${workspace}"`);
  const r = req.rollout;
  if (!r) throw invalid("rollout is required");
  validateRolloutId(r.id, "rollout.id");
  validateDriver(req.driver);
  const ttl = leaseTtlMs(req.leaseTtlMs);
  validateText(r.labelSelector, MAX_LABEL_SELECTOR, "rollout.label_selector");
  validateText(r.changeSummary, MAX_CHANGE_SUMMARY, "rollout.change_summary");
  const request = validateRequestTemplate(r.request, "rollout.request");
  if (r.stateJson === "") throw invalid("rollout.state_json is required");
  const summary = validateState(r.stateJson, r.summary, r.id, { state: "rollout.state_json", summary: "rollout.summary" });
  const now = nowOf(deps);
  const row: RolloutRow = {
    workspace,
    id: r.id,
    resourceVersion: 1n,
    createdBy: p.name,
    createdAt: now,
    updatedAt: now,
    labelSelector: r.labelSelector,
    changeHash: changeHash(request),
    changeSummary: r.changeSummary,
    phase: summary.phase,
    summary: encodeSummary(summary),
    approvals: [],
    lease: { holder: req.driver, principal: p.name, until: new Date(now.getTime() + ttl) },
    requireDistinctApprover: r.requireDistinctApprover,
    request: encodeRequest(request),
    state: r.stateJson,
  };
  try {
    await deps.store.insertRollout(row);
  } catch (err) {
    if (err instanceof StoreConflictError) throw new ConnectError(`rollout "${r.id}" already exists`, Code.AlreadyExists);
    throw err;
  }
  deps.logger.info({ rollout: r.id, workspace, principal: p.name, driver: req.driver, changeHash: row.changeHash }, "rollout created");
  await deps.hub.changed(workspace, r.id);
  return response(row);
}

const encodeRequest = (request: UpdateConfigRequest) => toBinary(UpdateConfigRequestSchema, request);

export async function getRollout(deps: RolloutDeps, req: GetRolloutRequest, ctx: HandlerContext): Promise<RolloutResponse> {
  const p = requireUser(ctx);
  const workspace = rolloutWorkspace(p, req.workspaceScope, req.id);
  const full = fullView(req.view);
  return response(await existing(deps, workspace, req.id, full), full);
}

export async function listRollouts(deps: RolloutDeps, req: ListRolloutsRequest, ctx: HandlerContext): Promise<ListRolloutsResponse> {
  const p = requireUser(ctx);
  if (req.pageSize < 0) throw invalid("page_size must not be negative");
  const pageSize = req.pageSize === 0 ? DEFAULT_PAGE_SIZE : Math.min(req.pageSize, MAX_PAGE_SIZE);
  req.phases.forEach((phase, i) => validatePhase(phase, `phases[${i}]`));
  validateLength(req.labelSelector, MAX_LABEL_SELECTOR, "label_selector");
  const workspaces = rolloutScope(p, req.workspaceScope);
  if (workspaces?.length === 0) return { $typeName: "openshell.v1.ListRolloutsResponse", rollouts: [], nextPageToken: "" };
  const page = await deps.store.listRollouts({
    workspaces,
    phases: [...new Set(req.phases)],
    labelSelector: req.labelSelector === "" ? undefined : req.labelSelector,
    pageSize,
    pageToken: req.pageToken,
  });
  return {
    $typeName: "openshell.v1.ListRolloutsResponse",
    rollouts: page.items.map((row) => toRolloutRecord(row, false)),
    nextPageToken: page.nextPageToken,
  };
}

export async function updateRollout(deps: RolloutDeps, req: UpdateRolloutRequest, ctx: HandlerContext): Promise<RolloutResponse> {
  const p = requireAdmin(ctx);
  const workspace = rolloutWorkspace(p, req.workspaceScope, req.id);
  if (req.expectedResourceVersion <= 0n) throw invalid("expected_resource_version is required: the record's current resource_version");
  validateDriver(req.driver);
  const ttl = leaseTtlMs(req.leaseTtlMs);
  let summary: RolloutSummary | undefined;
  if (req.stateJson !== "") {
    summary = validateState(req.stateJson, req.summary, req.id, { state: "state_json", summary: "summary" });
  } else if (req.summary) {
    throw invalid("summary is taken only with state_json: an update without state_json changes only the lease");
  }
  const id = req.id;
  const current = await existing(deps, workspace, id);
  if (current.resourceVersion !== req.expectedResourceVersion) throw versionConflict(id, current.resourceVersion, req.expectedResourceVersion);
  const now = nowOf(deps);
  const held = current.lease;
  // The lease is the holder's driver id under its principal: ids are public (every reader sees
  // them) and chosen by clients, so another principal naming the same id is another driver.
  const other = held !== undefined && (held.holder !== req.driver || held.principal !== p.name);
  if (held && other && held.until.getTime() > now.getTime()) {
    throw new ConnectError(
      `rollout "${id}" is driven by ${held.holder} (${held.principal}) until ${held.until.toISOString()}; it can be taken over after that`,
      Code.FailedPrecondition,
    );
  }
  if (summary) checkTransition(decodeSummary(current.summary), summary, (wave) => current.approvals.some((a) => a.wave === wave), id);
  const lease: RolloutLeaseRow | null = req.releaseLease ? null : { holder: req.driver, principal: p.name, until: new Date(now.getTime() + ttl) };
  const updated = await deps.store.updateRollout(workspace, id, current.resourceVersion, {
    ...(summary ? { phase: summary.phase, summary: encodeSummary(summary), state: req.stateJson } : {}),
    lease,
    updatedAt: now,
  });
  if (!updated) {
    const latest = await existing(deps, workspace, id);
    throw versionConflict(id, latest.resourceVersion, req.expectedResourceVersion);
  }
  if (held && other) {
    deps.logger.info(
      {
        rollout: id,
        workspace,
        from: { holder: held.holder, principal: held.principal, expired: held.until.toISOString() },
        to: { holder: req.driver, principal: p.name },
        released: req.releaseLease,
      },
      "rollout lease taken over",
    );
  }
  await deps.hub.changed(workspace, id);
  return response(updated);
}

export async function approveRollout(deps: RolloutDeps, req: ApproveRolloutRequest, ctx: HandlerContext): Promise<RolloutResponse> {
  const p = requireAdmin(ctx);
  const workspace = rolloutWorkspace(p, req.workspaceScope, req.id);
  if (req.expectedResourceVersion < 0n) throw invalid("expected_resource_version must not be negative (0: whatever the current one is)");
  if (req.wave < 0) throw invalid("wave must not be negative");
  const id = req.id;
  for (let attempt = 1; ; attempt++) {
    const current = await existing(deps, workspace, id);
    // Before the version check: a retry of an approval that went through finds it, whoever gave it.
    if (current.approvals.some((a) => a.wave === req.wave)) return response(current);
    if (req.expectedResourceVersion !== 0n && current.resourceVersion !== req.expectedResourceVersion) {
      throw versionConflict(id, current.resourceVersion, req.expectedResourceVersion);
    }
    const summary = decodeSummary(current.summary);
    if (!summary.awaitingApproval) throw new ConnectError(`rollout "${id}" is not waiting for an approval`, Code.FailedPrecondition);
    if (req.wave !== summary.wavesDone) {
      throw new ConnectError(`rollout "${id}" waits for an approval of wave ${summary.wavesDone}, not wave ${req.wave}`, Code.FailedPrecondition);
    }
    if (current.requireDistinctApprover && p.name === current.createdBy) {
      throw new ConnectError(`rollout "${id}" needs an approver other than its creator (${p.name})`, Code.PermissionDenied);
    }
    const now = nowOf(deps);
    const updated = await deps.store.updateRollout(workspace, id, current.resourceVersion, {
      approvals: [...current.approvals, { wave: req.wave, principal: p.name, at: now }],
      updatedAt: now,
    });
    if (updated) {
      deps.logger.info({ rollout: id, workspace, wave: req.wave, principal: p.name, createdBy: current.createdBy }, "rollout wave approved");
      await deps.hub.changed(workspace, id);
      return response(updated);
    }
    // The CAS lost: with a version given that is the caller's conflict; without, read again.
    if (req.expectedResourceVersion !== 0n || attempt >= APPROVE_ATTEMPTS) {
      const again = await existing(deps, workspace, id);
      if (again.approvals.some((a) => a.wave === req.wave)) return response(again);
      throw versionConflict(id, again.resourceVersion, req.expectedResourceVersion === 0n ? current.resourceVersion : req.expectedResourceVersion);
    }
  }
}
