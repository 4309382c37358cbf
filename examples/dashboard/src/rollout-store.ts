// The rollouts this browser started or continued, kept in localStorage so that a reload can list,
// continue or undo each of them: starting a new rollout never hides another. Per rollout: its
// state (openshell-config/rollout@2, written by the SDK's onState at every durable step; sandbox
// names, the change, operation handles, no token), a small view of what the card last showed
// (each wave's counts and gate, the rollback lines, the summary), which the state alone does not
// hold, and the form it was started with. An index lists them, newest first, with what the list
// shows of each.
//
// Bounded: at most MAX_KEPT rollouts, dropping the oldest finished ones (complete or rolled back)
// first. A rollout that is not finished (paused, halted, cut short, stopped) is never dropped
// silently: only the user's Forget removes it, even past the bound. When the storage is full, the
// oldest finished rollouts make room; if none is left, saving throws and the SDK stops the run
// with that error. A shared rollout record at the gateway (issue 31) can stand behind the same
// interface later.

import { restoreRolloutState, type RolloutPhase, type RolloutState } from "openshell-config/rollout";
import type { RollbackLine, WaveView } from "./rollout-waves.js";

/** How many rollouts are kept, unfinished ones beyond it included. */
export const MAX_KEPT = 20;

const INDEX_KEY = "openshell-dashboard.rollouts";
const stateKey = (id: string) => `openshell-dashboard.rollout/${id}`;
const viewKey = (id: string) => `openshell-dashboard.rollout-view/${id}`;
/** Where the dashboard kept its one last rollout before it kept a list; read once and moved. */
const LEGACY_STATE_KEY = "openshell-dashboard.rollout";
const LEGACY_VIEW_KEY = "openshell-dashboard.rollout-view";

/** What the card showed when the rollout's last run ended (or at its last step). */
export interface SavedView {
  /** The rollout id it belongs to. */
  readonly id: string;
  readonly phase: RolloutPhase;
  readonly waves: readonly WaveView[];
  readonly rollback?: { readonly reason: string; readonly total: number; readonly lines: readonly RollbackLine[] };
  readonly summary: { readonly text: string; readonly tone: string; readonly verdict?: string };
}

/** The rollout form's fields as they were when a rollout started (what a reload shows again). */
export interface RolloutForm {
  readonly selector: string;
  /** The waves field's text, e.g. `1, 50%, 100%`; "" for one wave. */
  readonly waves: string;
  readonly concurrency: number;
  /** The failure limit typed in, if any. */
  readonly maxFailures?: number;
  readonly approval: boolean;
  readonly rollback: boolean;
}

/** One kept rollout as the list shows it (the index entry; the state is read on demand). */
export interface KeptRollout {
  readonly id: string;
  /** When this browser first saved it (ms since the epoch). */
  readonly startedAt: number;
  /** When it was last saved. */
  readonly touchedAt: number;
  readonly phase: RolloutPhase;
  readonly selector?: string;
  /** How many sandboxes it targets. */
  readonly total: number;
  /** Its waves, and how many passed their gate (the state's `wave`). */
  readonly waves: number;
  readonly wave: number;
  /** Its state records what its sandboxes had before (`canUndo`). */
  readonly undoable: boolean;
  readonly form?: RolloutForm;
}

export interface RolloutStore {
  /** Every kept rollout, newest first. */
  list(): KeptRollout[];
  /** A kept rollout's state; undefined (and dropped) when it cannot be read. */
  state(id: string): RolloutState | undefined;
  /** The saved view of rollout `id`, if any. */
  view(id: string): SavedView | undefined;
  /** Saves a rollout's state (a new one is listed first, with `form`). Throws when storage is full even after making room. */
  saveState(state: RolloutState, form?: RolloutForm): void;
  /** Saves what the card shows of a rollout (best effort: the state is what matters). */
  saveView(view: SavedView): void;
  /** Removes a rollout from the list (the user's Forget). */
  forget(id: string): void;
}

/**
 * How a saved state's rollout stands, without its run's result: paused, halted (a gate failed,
 * nothing rolled back), rolled back, incomplete (a run was cut short) or complete.
 */
export function phaseOfState(s: RolloutState): RolloutPhase {
  if (s.phase === "paused") return "paused";
  if (s.phase === "running" || s.phase === "rolling-back") return "incomplete";
  if (Object.keys(s.undoRefs).length > 0) return "rolled-back";
  return s.gateFailure ? "halted" : "complete";
}

/** True when the state records what its sandboxes had before, so `undoRollout` can return them. */
export const canUndo = (s: RolloutState): boolean => Object.keys(s.before).length > 0 && Object.keys(s.refs).length > 0;

/** Done with: complete or rolled back. Anything else still leaves the fleet mixed or waiting. */
export const isFinished = (phase: RolloutPhase): boolean => phase === "complete" || phase === "rolled-back";

type Storage = Pick<globalThis.Storage, "getItem" | "setItem" | "removeItem">;

export function createRolloutStore(storage: Storage = localStorage, max = MAX_KEPT): RolloutStore {
  const readIndex = (): KeptRollout[] => {
    try {
      const v = JSON.parse(storage.getItem(INDEX_KEY) ?? "[]") as unknown;
      return Array.isArray(v) ? v.filter((e): e is KeptRollout => typeof e?.id === "string" && typeof e?.startedAt === "number") : [];
    } catch {
      return [];
    }
  };
  let index = readIndex();

  const writeIndex = () => withRoom(() => storage.setItem(INDEX_KEY, JSON.stringify(index)), undefined);

  const drop = (id: string) => {
    storage.removeItem(stateKey(id));
    storage.removeItem(viewKey(id));
    index = index.filter((e) => e.id !== id);
  };

  /** The oldest finished rollout other than `keep`, which may make room. */
  const oldestFinished = (keep: string | undefined) => [...index].reverse().find((e) => e.id !== keep && isFinished(e.phase));

  /** Runs `write`; when the storage is full, drops the oldest finished rollouts (never `keep`) until it fits. */
  function withRoom(write: () => void, keep: string | undefined): void {
    for (;;) {
      try {
        return write();
      } catch (err) {
        const victim = oldestFinished(keep);
        if (!victim) throw err;
        drop(victim.id);
        storage.setItem(INDEX_KEY, JSON.stringify(index));
      }
    }
  }

  /** Over the bound: drops the oldest finished rollouts; unfinished ones stay. */
  function prune(keep: string): void {
    while (index.length > max) {
      const victim = oldestFinished(keep);
      if (!victim) return;
      drop(victim.id);
    }
  }

  function upsert(id: string, patch: (e: KeptRollout | undefined) => KeptRollout): void {
    const i = index.findIndex((e) => e.id === id);
    const next = patch(i < 0 ? undefined : index[i]);
    index = i < 0 ? [next, ...index] : index.map((e, k) => (k === i ? next : e));
  }

  const store: RolloutStore = {
    list: () => [...index],
    state(id) {
      const text = storage.getItem(stateKey(id));
      try {
        if (text === null) throw new Error("missing");
        return restoreRolloutState(text);
      } catch {
        drop(id);
        writeIndex();
        return undefined;
      }
    },
    view(id) {
      try {
        const v = JSON.parse(storage.getItem(viewKey(id)) ?? "null") as SavedView | null;
        return v && v.id === id && Array.isArray(v.waves) ? v : undefined;
      } catch {
        return undefined;
      }
    },
    saveState(state, form) {
      const now = Date.now();
      withRoom(() => storage.setItem(stateKey(state.id), JSON.stringify(state)), state.id);
      upsert(state.id, (e) => ({
        id: state.id,
        startedAt: e?.startedAt ?? now,
        touchedAt: now,
        // A run's result may say more (aborted); the state says where it is now.
        phase: phaseOfState(state),
        ...(state.labelSelector !== undefined ? { selector: state.labelSelector } : {}),
        total: state.sandboxes.length,
        waves: state.waves.length,
        wave: state.wave,
        undoable: canUndo(state),
        ...((form ?? e?.form) ? { form: form ?? e!.form! } : {}),
      }));
      prune(state.id);
      writeIndex();
    },
    saveView(view) {
      try {
        storage.setItem(viewKey(view.id), JSON.stringify(view));
        if (index.some((e) => e.id === view.id)) {
          upsert(view.id, (e) => ({ ...e!, phase: view.phase }));
          storage.setItem(INDEX_KEY, JSON.stringify(index));
        }
      } catch {
        // Only a convenience for the next reload: the state is what matters.
      }
    },
    forget(id) {
      drop(id);
      writeIndex();
    },
  };

  // The one rollout an earlier version kept: listed like any other, then its old keys go.
  const legacy = storage.getItem(LEGACY_STATE_KEY);
  if (legacy !== null) {
    try {
      const state = restoreRolloutState(legacy);
      if (!index.some((e) => e.id === state.id)) store.saveState(state);
      const view = JSON.parse(storage.getItem(LEGACY_VIEW_KEY) ?? "null") as SavedView | null;
      if (view?.id === state.id) store.saveView(view);
    } catch {
      // unreadable: nothing to keep
    }
    storage.removeItem(LEGACY_STATE_KEY);
    storage.removeItem(LEGACY_VIEW_KEY);
  }
  return store;
}
