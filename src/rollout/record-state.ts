// The rollout state as the shared record stores it: the same JSON as `RolloutState`, except that
// no policy body is stored twice. The change lives once in the record's `request`; every
// operation handle carries the request it replays, and those requests are the change (refs) or a
// sandbox's earlier configuration (undoRefs), so each handle here keeps only its own fields and
// `body`: "change" for the record's request, or the index of a distinct body in `bodies` (a
// fleet that had one policy before shares one body). Reading it back gives the identical state.

import type { JsonObject } from "@bufbuild/protobuf";
import { HANDLE_KIND, type OperationHandle } from "../handle.js";
import { restoreRolloutState, rolloutKey, undoKey, type RolloutState } from "./state.js";

/**
 * A handle without its request (`body` with the handle's sandbox and key) and without what the
 * state says already: its kind, its sandbox (the entry's name), its key when it is the one the
 * rollout derives, its workspace when it is the rollout's (`null`: it had none).
 */
type CompactHandle = Partial<Omit<OperationHandle, "request" | "workspace">> & {
  readonly body: "change" | number;
  readonly workspace?: string | null;
};

// Each undo handle's body as text, computed once per handle object (a write every 250 ms must not
// serialize every body again).
const bodyKeys = new WeakMap<object, string>();

function bodyOf(handle: OperationHandle): JsonObject {
  const { sandbox: _s, idempotencyKey: _k, ...rest } = handle.request as JsonObject & { sandbox?: unknown; idempotencyKey?: unknown };
  return rest;
}

function compact(handle: OperationHandle, name: string, derivedKey: string, workspace: string | undefined, body: CompactHandle["body"]): CompactHandle {
  const { request: _r, kind, sandbox, idempotencyKey, workspace: ws, ...rest } = handle;
  return {
    ...rest,
    ...(kind !== HANDLE_KIND ? { kind } : {}),
    ...(sandbox !== name ? { sandbox } : {}),
    ...(idempotencyKey !== derivedKey ? { idempotencyKey } : {}),
    ...(ws !== workspace ? { workspace: ws ?? null } : {}),
    body,
  };
}

function expand(h: Record<string, unknown>, name: string, derivedKey: string, workspace: string | undefined, request: JsonObject, bodies: readonly JsonObject[]) {
  const { body, kind, sandbox, idempotencyKey, workspace: ws, ...rest } = h;
  const handle: Record<string, unknown> = { kind: kind ?? HANDLE_KIND, ...rest, sandbox: sandbox ?? name, idempotencyKey: idempotencyKey ?? derivedKey };
  const w = ws === undefined ? workspace : ws;
  if (w !== null && w !== undefined) handle.workspace = w;
  const base = body === "change" ? request : bodies[body as number];
  handle.request = { ...base, sandbox: handle.sandbox, idempotencyKey: handle.idempotencyKey };
  return handle;
}

/** The state as record text: no `request`, and no handle repeats a body. */
export function encodeRecordState(state: RolloutState): string {
  const { request: _request, refs, undoRefs, ...rest } = state;
  // Every ref is the rollout's change sent to its sandbox under its rollout key (pool.ts builds
  // each one from the plan's change): its body is the record's request, never compared again.
  const compactRefs = Object.fromEntries(Object.entries(refs).map(([name, h]) => [name, compact(h, name, rolloutKey(state.id, name), state.workspace, "change")]));
  const bodies: JsonObject[] = [];
  const index = new Map<string, number>();
  const compactUndo = Object.fromEntries(
    Object.entries(undoRefs).map(([name, h]) => {
      let key = bodyKeys.get(h);
      if (key === undefined) {
        key = JSON.stringify(bodyOf(h));
        bodyKeys.set(h, key);
      }
      let i = index.get(key);
      if (i === undefined) {
        i = bodies.length;
        bodies.push(JSON.parse(key) as JsonObject);
        index.set(key, i);
      }
      return [name, compact(h, name, undoKey(state.id, name), state.workspace, i)];
    }),
  );
  return JSON.stringify({ ...rest, refs: compactRefs, undoRefs: compactUndo, bodies });
}

/** The state back from record text and the record's request (as protobuf JSON). */
export function decodeRecordState(text: string, request: JsonObject): RolloutState {
  const parsed = JSON.parse(text) as JsonObject & { id?: unknown; workspace?: unknown; refs?: unknown; undoRefs?: unknown; bodies?: unknown };
  const bodies = Array.isArray(parsed.bodies) ? (parsed.bodies as JsonObject[]) : [];
  const id = String(parsed.id);
  const workspace = typeof parsed.workspace === "string" ? parsed.workspace : undefined;
  const expandAll = (handles: unknown, key: (id: string, name: string) => string): Record<string, unknown> => {
    if (typeof handles !== "object" || handles === null) return {};
    return Object.fromEntries(
      Object.entries(handles as Record<string, Record<string, unknown>>).map(([name, h]) => [
        name,
        "body" in h ? expand(h, name, key(id, name), workspace, request, bodies) : h,
      ]),
    );
  };
  const { bodies: _b, ...state } = parsed;
  return restoreRolloutState({ ...state, request, refs: expandAll(parsed.refs, rolloutKey), undoRefs: expandAll(parsed.undoRefs, undoKey) });
}
