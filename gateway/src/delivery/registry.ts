// Live supervisor sessions by sandbox: one per sandbox (a new session replaces the old one), and
// the publish entry point that tells a session its sandbox's desired state changed.
//
// With several replicas, `ownership` records in the database which replica holds each session
// (cluster/ownership.ts): a session is registered only once its claim is stored, so every other
// replica can learn that it lost the sandbox.

import { Code, ConnectError } from "@connectrpc/connect";
import type { Session } from "./session.js";
import type { CommittedView } from "../rpc/deps.js";

/** Durable bookkeeping of who holds a session (absent for a gateway that runs alone). */
export interface SessionOwnershipHooks {
  /** Stores the claim; throws (UNAVAILABLE) when it cannot, and the session must not start. */
  claim(session: Session): Promise<void>;
  /** The session ended: give the sandbox up unless a newer session already holds it. */
  release(session: Session): void;
}

export interface SessionRegistry {
  /** Claims the sandbox for `session`, then registers it, closing any older session of the same sandbox. */
  add(session: Session): Promise<void>;
  /** Forgets `session` if it is still the registered one. */
  remove(session: Session): void;
  get(sandboxId: string): Session | undefined;
  /** Desired state of one sandbox (or, without an id, of every sandbox) changed; `view`: see GatewayDeps.publish. */
  publish(sandboxId?: string, view?: CommittedView): void;
  closeAll(error: unknown): void;
  readonly size: number;
}

export function createSessionRegistry(ownership?: SessionOwnershipHooks): SessionRegistry {
  const sessions = new Map<string, Session>();
  return {
    get size() {
      return sessions.size;
    },
    async add(session) {
      await ownership?.claim(session);
      if (session.closed) return;
      const old = sessions.get(session.sandboxId);
      sessions.set(session.sandboxId, session);
      if (old !== session) old?.close(new ConnectError("replaced by a newer session of the same sandbox", Code.Aborted));
    },
    remove(session) {
      if (sessions.get(session.sandboxId) === session) sessions.delete(session.sandboxId);
      ownership?.release(session);
    },
    get: (id) => sessions.get(id),
    publish(sandboxId, view) {
      if (sandboxId === undefined) for (const s of sessions.values()) s.notify();
      else sessions.get(sandboxId)?.notify(view?.sandbox.id === sandboxId ? view : undefined);
    },
    closeAll(error) {
      for (const s of [...sessions.values()]) s.close(error);
      sessions.clear();
    },
  };
}
