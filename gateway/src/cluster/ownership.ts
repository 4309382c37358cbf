// Which replica holds each sandbox's supervisor session, kept in the store under a lease. A
// session is claimed before it starts (the newest connection wins, whichever replica it reached),
// and the leases of every session held here are renewed every third of the lease. A replica
// learns that a sandbox moved elsewhere from the claim's notification or, if that was lost, from
// the next renewal, and closes its old session. A replica that cannot renew for a whole lease
// (cut off from the database) closes all of its sessions, so their supervisors move to a replica
// that can still record their results.

import { Code, ConnectError } from "@connectrpc/connect";
import type { Logger } from "pino";
import type { Session } from "../delivery/session.js";
import type { SessionOwnershipHooks } from "../delivery/registry.js";
import type { Store } from "../store/store.js";

export interface SessionOwnership extends SessionOwnershipHooks {
  /** Another replica claimed `sandboxId` for session `sessionId`. */
  claimedElsewhere(sandboxId: string, sessionId: string, by: string): void;
  /** One renewal round; returns how many sessions were found lost. */
  renew(): Promise<number>;
  start(): void;
  stop(): void;
  readonly held: number;
}

export interface OwnershipOptions {
  readonly store: Store;
  readonly replicaId: string;
  readonly leaseMs: number;
  readonly logger: Logger;
  /** Tells the other replicas that this replica took `sandboxId` over for session `sessionId`. */
  readonly announceClaim: (sandboxId: string, sessionId: string) => void;
}

export function createSessionOwnership(o: OwnershipOptions): SessionOwnership {
  const held = new Map<string, Session>();
  let lastRenewed = Date.now();
  let timer: ReturnType<typeof setInterval> | undefined;
  let renewing = false;

  const lose = (session: Session, reason: string, code: Code) => {
    if (held.get(session.sandboxId) === session) held.delete(session.sandboxId);
    o.logger.info({ sandboxId: session.sandboxId, session: session.id, reason }, "supervisor session given up");
    session.close(new ConnectError(reason, code));
  };

  const ownership: SessionOwnership = {
    get held() {
      return held.size;
    },
    async claim(session) {
      const now = Date.now();
      const previous = await o.store.claimSession({
        sandboxId: session.sandboxId,
        replicaId: o.replicaId,
        sessionId: session.id,
        leaseUntil: new Date(now + o.leaseMs),
        acquiredAt: new Date(now),
      });
      held.set(session.sandboxId, session);
      if (previous && previous.replicaId !== o.replicaId) {
        o.logger.info({ sandboxId: session.sandboxId, previousReplica: previous.replicaId }, "supervisor session taken over from another replica");
        o.announceClaim(session.sandboxId, session.id);
      }
    },
    release(session) {
      if (held.get(session.sandboxId) !== session) return;
      held.delete(session.sandboxId);
      o.store.releaseSession(session.sandboxId, session.id).catch((err: unknown) => {
        // The lease runs out by itself.
        o.logger.warn({ err: (err as Error).message, sandboxId: session.sandboxId }, "session ownership not released");
      });
    },
    claimedElsewhere(sandboxId, sessionId, by) {
      const s = held.get(sandboxId);
      if (s && s.id !== sessionId) lose(s, `the supervisor connected to gateway replica ${by}`, Code.Aborted);
    },
    async renew() {
      const sessions = [...held.values()];
      const started = Date.now();
      try {
        const kept = new Set(await o.store.renewSessions(o.replicaId, sessions.map((s) => s.id), new Date(started + o.leaseMs)));
        lastRenewed = started;
        let lost = 0;
        for (const s of sessions) {
          if (kept.has(s.id) || held.get(s.sandboxId) !== s) continue;
          lost++;
          lose(s, "another gateway replica owns this sandbox's session now", Code.Aborted);
        }
        return lost;
      } catch (err) {
        o.logger.warn({ err: (err as Error).message }, "session leases not renewed");
        if (Date.now() - lastRenewed > o.leaseMs) {
          for (const s of [...held.values()]) lose(s, "this gateway replica lost contact with the database", Code.Unavailable);
        }
        return 0;
      }
    },
    start() {
      if (timer) return;
      lastRenewed = Date.now();
      timer = setInterval(() => {
        if (renewing) return;
        renewing = true;
        void ownership.renew().finally(() => (renewing = false));
      }, Math.max(50, Math.floor(o.leaseMs / 3)));
      timer.unref?.();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
  return ownership;
}
