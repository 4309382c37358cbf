// Reading operations: GetConfigUpdateOperation, and our extensions WatchConfigUpdateOperations,
// which streams the current state and then every transition, so that no client needs to poll,
// and ListConfigUpdateOperations, one sandbox's operations newest first, in pages.

import { Code, ConnectError, type HandlerContext } from "@connectrpc/connect";
import type {
  GetConfigUpdateOperationRequest,
  GetConfigUpdateOperationResponse,
  ListConfigUpdateOperationsRequest,
  ListConfigUpdateOperationsResponse,
  WatchConfigUpdateOperationsRequest,
  WatchConfigUpdateOperationsResponse,
} from "openshell-config/raw";
import { create } from "@bufbuild/protobuf";
import { WatchConfigUpdateOperationsResponseSchema } from "openshell-config/raw";
import type { OperationRecord } from "../store/store.js";
import { toOperation } from "../model/convert.js";
import { isTerminalState } from "../operations/states.js";
import { canAccessWorkspace, type Principal } from "../auth/principal.js";
import { requireUser, singleWorkspace, assertWorkspace } from "./access.js";
import type { GatewayDeps } from "./deps.js";

const MAX_WATCHED_IDS = 100;
/** Operations of a sandbox sent as the initial state of a sandbox watch. */
const SANDBOX_WATCH_INITIAL = 50;

/** Loads an operation the principal may see, or throws NOT_FOUND (also for other workspaces). */
async function visibleOperation(deps: GatewayDeps, p: Principal, id: string, workspace: string): Promise<OperationRecord> {
  const op = await deps.store.operation(id);
  if (!op || !canAccessWorkspace(p, op.workspace) || workspace !== op.workspace) {
    throw new ConnectError("update operation not found", Code.NotFound);
  }
  return op;
}

export async function getConfigUpdateOperation(
  deps: GatewayDeps,
  req: GetConfigUpdateOperationRequest,
  ctx: HandlerContext,
): Promise<GetConfigUpdateOperationResponse> {
  const p = requireUser(ctx);
  if (req.operationId === "") throw new ConnectError("operation_id is required", Code.InvalidArgument);
  const workspace = singleWorkspace(req.workspaceScope);
  const op = await visibleOperation(deps, p, req.operationId, workspace);
  return { $typeName: "openshell.v1.GetConfigUpdateOperationResponse", operation: toOperation(op) };
}

export async function listConfigUpdateOperations(
  deps: GatewayDeps,
  req: ListConfigUpdateOperationsRequest,
  ctx: HandlerContext,
): Promise<ListConfigUpdateOperationsResponse> {
  const p = requireUser(ctx);
  if (req.pageSize < 0) throw new ConnectError("page_size must not be negative", Code.InvalidArgument);
  if (req.sandbox === "") throw new ConnectError("sandbox is required", Code.InvalidArgument);
  const workspace = singleWorkspace(req.workspaceScope);
  assertWorkspace(p, workspace, `sandbox "${req.sandbox}"`);
  const sb = await deps.store.sandboxByName(workspace, req.sandbox);
  if (!sb) throw new ConnectError(`sandbox "${req.sandbox}" not found`, Code.NotFound);
  const pageSize = req.pageSize === 0 ? 100 : Math.min(req.pageSize, 1000);
  const page = await deps.store.listOperationsOfSandbox(sb.id, pageSize, req.pageToken);
  return {
    $typeName: "openshell.v1.ListConfigUpdateOperationsResponse",
    operations: page.items.map(toOperation),
    nextPageToken: page.nextPageToken,
  };
}

/** A queue fed by bus listeners and drained by the stream; wakes the stream when non-empty. */
function createQueue(signal: AbortSignal) {
  const items: OperationRecord[] = [];
  let failure: Error | undefined;
  let wake: (() => void) | undefined;
  const onAbort = () => wake?.();
  signal.addEventListener("abort", onAbort, { once: true });
  return {
    push(op: OperationRecord) {
      items.push(op);
      wake?.();
    },
    /** Ends the stream with `err` (gateway shutdown) once the queued items are sent. */
    fail(err: Error) {
      failure = err;
      wake?.();
    },
    async next(): Promise<OperationRecord | undefined> {
      while (items.length === 0) {
        if (signal.aborted) return undefined;
        if (failure) throw failure;
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
      }
      return items.shift();
    },
    dispose: () => signal.removeEventListener("abort", onAbort),
  };
}

export async function* watchConfigUpdateOperations(
  deps: GatewayDeps,
  req: WatchConfigUpdateOperationsRequest,
  ctx: HandlerContext,
): AsyncGenerator<WatchConfigUpdateOperationsResponse> {
  const p = requireUser(ctx);
  const ids = [...new Set(req.operationIds)];
  if ((ids.length > 0) === (req.sandbox !== "")) {
    throw new ConnectError("exactly one of operation_ids and sandbox is required", Code.InvalidArgument);
  }
  if (ids.length > MAX_WATCHED_IDS) {
    throw new ConnectError(`operation_ids has ${ids.length} entries; at most ${MAX_WATCHED_IDS} are allowed`, Code.InvalidArgument);
  }
  const queue = createQueue(ctx.signal);
  const unsubscribe: (() => void)[] = [deps.waiters.onShutdown((err) => queue.fail(err))];
  const message = (op: OperationRecord, initial: boolean) =>
    create(WatchConfigUpdateOperationsResponseSchema, { operation: toOperation(op), initial });
  try {
    if (ids.length > 0) {
      const workspace = singleWorkspace(req.workspaceScope);
      // Subscribe first, then read: a transition in between is queued, not lost.
      for (const id of ids) unsubscribe.push(deps.bus.onOperation(id, queue.push));
      const open = new Set<string>();
      for (const id of ids) {
        const op = await visibleOperation(deps, p, id, workspace);
        if (!isTerminalState(op.state)) open.add(id);
        yield message(op, true);
      }
      while (open.size > 0) {
        const op = await queue.next();
        if (!op) return;
        if (!open.has(op.id)) continue;
        if (isTerminalState(op.state)) open.delete(op.id);
        yield message(op, false);
      }
      return;
    }
    const workspace = singleWorkspace(req.workspaceScope);
    assertWorkspace(p, workspace, `sandbox "${req.sandbox}"`);
    const sb = await deps.store.sandboxByName(workspace, req.sandbox);
    if (!sb) throw new ConnectError(`sandbox "${req.sandbox}" not found`, Code.NotFound);
    unsubscribe.push(deps.bus.onSandbox(sb.id, queue.push));
    const recent = await deps.store.operationsOfSandbox(sb.id, SANDBOX_WATCH_INITIAL);
    for (const op of recent.reverse()) yield message(op, true);
    for (;;) {
      const op = await queue.next();
      if (!op) return;
      yield message(op, false);
    }
  } finally {
    for (const u of unsubscribe) u();
    queue.dispose();
  }
}
