// Live supervisor sessions by sandbox: one per sandbox (a new session replaces the old one), and
// the publish entry point that tells a session its sandbox's desired state changed.

import { Code, ConnectError } from "@connectrpc/connect";
import type { Session } from "./session.js";

export interface SessionRegistry {
  /** Registers `session`, closing any older session of the same sandbox. */
  add(session: Session): void;
  /** Forgets `session` if it is still the registered one. */
  remove(session: Session): void;
  get(sandboxId: string): Session | undefined;
  /** Desired state of one sandbox (or, without an id, of every sandbox) changed. */
  publish(sandboxId?: string): void;
  closeAll(error: unknown): void;
  readonly size: number;
}

export function createSessionRegistry(): SessionRegistry {
  const sessions = new Map<string, Session>();
  return {
    get size() {
      return sessions.size;
    },
    add(session) {
      const old = sessions.get(session.sandboxId);
      sessions.set(session.sandboxId, session);
      old?.close(new ConnectError("replaced by a newer session of the same sandbox", Code.Aborted));
    },
    remove(session) {
      if (sessions.get(session.sandboxId) === session) sessions.delete(session.sandboxId);
    },
    get: (id) => sessions.get(id),
    publish(sandboxId) {
      if (sandboxId === undefined) for (const s of sessions.values()) s.notify();
      else sessions.get(sandboxId)?.notify();
    },
    closeAll(error) {
      for (const s of [...sessions.values()]) s.close(error);
      sessions.clear();
    },
  };
}
