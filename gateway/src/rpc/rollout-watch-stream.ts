// WatchRollouts: one rollout (its current record, then every change), or every rollout of a
// scope (the newest 500 as initial messages, initial_done, then every change of any of them),
// until the client cancels or the gateway shuts down (UNAVAILABLE). The stream is released (its
// hub listener, dirty set and shutdown hook) when its peer goes away or reads nothing for 20 s,
// even while a write is stuck and the generator never resumes (stream-lifetime.ts, as supervisor
// streams do): only its `finally` would otherwise release it. Changes come from the hub
// (rollout-watch.ts) as keys; each is read from the store when it is sent and sent only when its
// resource_version moved past what this stream last sent, so repeated or crossed notifications
// never send the same version twice.

import { create } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { WatchRolloutsResponseSchema, type RolloutRecord, type WatchRolloutsRequest, type WatchRolloutsResponse } from "openshell-config/raw";
import type { RolloutRow } from "../store/rollouts.js";
import { assertWorkspace, requireUser, singleWorkspace } from "./access.js";
import { parseRolloutKey, rolloutKey, toRolloutRecord } from "./rollout-convert.js";
import { fullView, invalid, validateRolloutId } from "./rollout-validate.js";
import { createDirtySet } from "./rollout-watch.js";
import { createStreamLifetime } from "../delivery/stream-lifetime.js";
import { transportStreamKey } from "../delivery/transport-stream.js";
import { rolloutNotFound, rolloutScope, type RolloutDeps } from "./rollouts.js";

/** Rollouts sent as the initial state of a watch of many (newest first). */
export const WATCH_INITIAL_LIMIT = 500;
/** A message the client has not taken within this long ends the stream (as supervisor streams). */
export const WATCH_WRITE_TIMEOUT_MS = 20_000;

const message = (rollout: RolloutRecord | undefined, initial: boolean, initialDone = false): WatchRolloutsResponse =>
  create(WatchRolloutsResponseSchema, { ...(rollout ? { rollout } : {}), initial, initialDone });

export async function* watchRollouts(deps: RolloutDeps, req: WatchRolloutsRequest, ctx: HandlerContext): AsyncGenerator<WatchRolloutsResponse> {
  const p = requireUser(ctx);
  const full = fullView(req.view);
  let inScope: (workspace: string, id: string) => boolean;
  let workspaces: readonly string[] | undefined;
  if (req.id !== "") {
    validateRolloutId(req.id, "id");
    const workspace = singleWorkspace(req.workspaceScope);
    assertWorkspace(p, workspace, `rollout "${req.id}"`);
    workspaces = [workspace];
    inScope = (ws, id) => ws === workspace && id === req.id;
  } else {
    if (full) throw invalid("view FULL needs an id: a watch of every rollout sends summaries");
    workspaces = rolloutScope(p, req.workspaceScope);
    const set = workspaces === undefined ? undefined : new Set(workspaces);
    inScope = (ws) => set === undefined || set.has(ws);
  }

  const dirty = createDirtySet(ctx.signal);
  const cleanup: (() => void)[] = [() => dirty.dispose(), deps.waiters.onShutdown((err) => dirty.fail(err))];
  const lifetime = createStreamLifetime({
    signal: ctx.signal,
    transport: ctx.values.get(transportStreamKey),
    writeTimeoutMs: deps.watchWriteTimeoutMs ?? WATCH_WRITE_TIMEOUT_MS,
    onEnd: () => {
      for (const c of cleanup.splice(0)) c();
    },
  });
  /** `m`, with the write bound running until the client comes back for the next message. */
  async function* send(m: WatchRolloutsResponse): AsyncGenerator<WatchRolloutsResponse> {
    lifetime.writing();
    yield m;
    lifetime.written();
  }
  /** The resource_version last sent, per key: bounded by the rollouts this stream watches. */
  const sent = new Map<string, bigint>();
  /** The row when its version is newer than what was sent (and records it as sent). */
  const fresh = (row: RolloutRow | undefined): RolloutRow | undefined => {
    if (!row) return undefined;
    const key = rolloutKey(row.workspace, row.id);
    const last = sent.get(key);
    if (last !== undefined && row.resourceVersion <= last) return undefined;
    sent.set(key, row.resourceVersion);
    return row;
  };
  try {
    // Subscribe first, then read: a change in between is marked, and sent only if newer.
    const unsubscribe = await deps.hub.subscribe({
        onChange: (ws, id) => {
          if (inScope(ws, id)) dirty.mark(rolloutKey(ws, id));
        },
        onGap: () => dirty.markGap(),
      });
    // Released while subscribing: leave at once.
    if (lifetime.ended) unsubscribe();
    else cleanup.push(unsubscribe);
    if (req.id !== "") {
      const workspace = workspaces![0]!;
      const row = await deps.store.rollout(workspace, req.id, full);
      if (!row) throw rolloutNotFound(req.id);
      yield* send(message(toRolloutRecord(fresh(row)!, full), true));
      for (;;) {
        const batch = await dirty.next();
        if (!batch) return;
        const next = fresh(await deps.store.rollout(workspace, req.id, full));
        if (next) yield* send(message(toRolloutRecord(next, full), false));
      }
    }
    if (workspaces?.length === 0) {
      yield* send(message(undefined, false, true));
    } else {
      for (const row of await newest(deps, workspaces)) {
        if (fresh(row)) yield* send(message(toRolloutRecord(row, false), true));
      }
      yield* send(message(undefined, false, true));
    }
    for (;;) {
      const batch = await dirty.next();
      if (!batch) return;
      const keys = new Set(batch.keys);
      if (batch.gap && workspaces?.length !== 0) {
        // Lost notifications: the newest rollouts by one read, then each other one already sent.
        const listed = await newest(deps, workspaces);
        for (const row of listed) {
          keys.delete(rolloutKey(row.workspace, row.id));
          if (fresh(row)) yield* send(message(toRolloutRecord(row, false), false));
        }
        const seen = new Set(listed.map((r) => rolloutKey(r.workspace, r.id)));
        for (const key of sent.keys()) if (!seen.has(key)) keys.add(key);
      }
      for (const key of keys) {
        const k = parseRolloutKey(key);
        if (!k) continue;
        const row = fresh(await deps.store.rollout(k.workspace, k.id, false));
        if (row) yield* send(message(toRolloutRecord(row, false), false));
      }
    }
  } finally {
    lifetime.end();
  }
}

async function newest(deps: RolloutDeps, workspaces: readonly string[] | undefined): Promise<RolloutRow[]> {
  const page = await deps.store.listRollouts({ workspaces, phases: [], labelSelector: undefined, pageSize: WATCH_INITIAL_LIMIT, pageToken: "" });
  return page.items;
}
