// The rollout state as the shared record stores it: the same JSON as `RolloutState`, except that
// no policy body is stored twice. The change lives once in the record's `request`; every
// operation handle carries the request it replays, and those requests are the change (refs) or a
// sandbox's earlier configuration (undoRefs), so each handle here keeps only its own fields and
// `body`: "change" for the record's request, or the index of a distinct body in `bodies` (a
// fleet that had one policy before shares one body). Reading it back gives the identical state.

import type { JsonObject } from "@bufbuild/protobuf";
import type { OperationHandle } from "../handle.js";
import { restoreRolloutState, type RolloutState } from "./state.js";

/** A handle without its request: the request is `body` with the handle's sandbox and key. */
type CompactHandle = Omit<OperationHandle, "request"> & { readonly body: "change" | number };

// Each undo handle's body as text, computed once per handle object (a write every 250 ms must not
// serialize every body again).
const bodyKeys = new WeakMap<object, string>();

function bodyOf(handle: OperationHandle): JsonObject {
  const { sandbox: _s, idempotencyKey: _k, ...rest } = handle.request as JsonObject & { sandbox?: unknown; idempotencyKey?: unknown };
  return rest;
}

function withoutRequest(handle: OperationHandle, body: CompactHandle["body"]): CompactHandle {
  const { request: _r, ...rest } = handle;
  return { ...rest, body };
}

/** The state as record text: no `request`, and no handle repeats a body. */
export function encodeRecordState(state: RolloutState): string {
  const { request: _request, refs, undoRefs, ...rest } = state;
  // Every ref is the rollout's change sent to its sandbox under its rollout key (pool.ts builds
  // each one from the plan's change): its body is the record's request, never compared again.
  const compactRefs = Object.fromEntries(Object.entries(refs).map(([name, h]) => [name, withoutRequest(h, "change")]));
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
      return [name, withoutRequest(h, i)];
    }),
  );
  return JSON.stringify({ ...rest, refs: compactRefs, undoRefs: compactUndo, bodies });
}

/** The state back from record text and the record's request (as protobuf JSON). */
export function decodeRecordState(text: string, request: JsonObject): RolloutState {
  const parsed = JSON.parse(text) as JsonObject & { refs?: unknown; undoRefs?: unknown; bodies?: unknown };
  const bodies = Array.isArray(parsed.bodies) ? (parsed.bodies as JsonObject[]) : [];
  const expand = (handles: unknown): Record<string, unknown> => {
    if (typeof handles !== "object" || handles === null) return {};
    return Object.fromEntries(
      Object.entries(handles as Record<string, Record<string, unknown>>).map(([name, h]) => {
        if (!("body" in h)) return [name, h];
        const { body, ...rest } = h;
        const base = body === "change" ? request : bodies[body as number];
        return [name, { ...rest, request: { ...base, sandbox: rest.sandbox, idempotencyKey: rest.idempotencyKey } }];
      }),
    );
  };
  const { bodies: _b, ...state } = parsed;
  return restoreRolloutState({ ...state, request, refs: expand(parsed.refs), undoRefs: expand(parsed.undoRefs) });
}
