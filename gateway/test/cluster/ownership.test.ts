// Session ownership between replicas, in one process: two replicas' ownership on one store (SQLite,
// whose notifications reach listeners of the same store object). The old owner closes its
// session when another replica claims the sandbox, from the claim's notification or, without
// one, at its next renewal; a replica that cannot renew for a whole lease closes every session.

import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import type { Session } from "../../src/delivery/session.js";
import { createClusterNotifier } from "../../src/cluster/notifications.js";
import { createSessionOwnership, type SessionOwnership } from "../../src/cluster/ownership.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { Store } from "../../src/store/store.js";
import { until } from "./cluster-harness.js";

const logger = pino({ level: "silent" });
let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

/** Just enough of a session for ownership: an id, a sandbox, and a record of how it was closed. */
function fakeSession(id: string, sandboxId: string): Session & { closedWith: unknown } {
  const s = {
    id,
    sandboxId,
    closed: false,
    closedWith: undefined as unknown,
    close(error?: unknown) {
      s.closed = true;
      s.closedWith = error;
    },
  };
  return s as unknown as Session & { closedWith: unknown };
}

function replica(st: Store, replicaId: string, notify: boolean, leaseMs = 60_000): SessionOwnership {
  const notifier = createClusterNotifier(st, replicaId, logger);
  const ownership = createSessionOwnership({
    store: st,
    replicaId,
    leaseMs,
    logger,
    announceClaim: (sandboxId, sessionId) => notify && notifier.send({ kind: "claimed", from: replicaId, sandboxId, sessionId }),
  });
  if (notify) {
    void notifier.start(
      (m) => m.kind === "claimed" && ownership.claimedElsewhere(m.sandboxId, m.sessionId, m.from),
      () => undefined,
    );
  }
  return ownership;
}

describe("session ownership between replicas", () => {
  it("a claim on another replica closes the old owner's session at once through the notification, with ABORTED", async () => {
    store = openSqliteStore(":memory:");
    const a = replica(store, "A", true);
    const b = replica(store, "B", true);
    await new Promise((r) => setTimeout(r, 10));
    const old = fakeSession("s-1", "sb");
    await a.claim(old);
    await b.claim(fakeSession("s-2", "sb"));
    await until(() => old.closed, "the old session to close", 2_000);
    expect(old.closedWith).toBeInstanceOf(ConnectError);
    expect((old.closedWith as ConnectError).code).toBe(Code.Aborted);
    expect((old.closedWith as ConnectError).rawMessage).toMatch(/replica B/);
    expect(a.held).toBe(0);
    expect((await store.sessionOwner("sb"))?.replicaId).toBe("B");
  });

  it("without notifications the old owner learns at its next renewal, which keeps the sessions it still owns", async () => {
    store = openSqliteStore(":memory:");
    const a = replica(store, "A", false);
    const b = replica(store, "B", false);
    const lost = fakeSession("s-1", "sb-1");
    const kept = fakeSession("s-2", "sb-2");
    await a.claim(lost);
    await a.claim(kept);
    await b.claim(fakeSession("s-3", "sb-1"));
    expect(lost.closed).toBe(false);
    expect(await a.renew()).toBe(1);
    expect(lost.closed).toBe(true);
    expect(kept.closed).toBe(false);
    expect(a.held).toBe(1);
  });

  it("a released session gives the sandbox up, but a release after a takeover leaves the new owner alone", async () => {
    store = openSqliteStore(":memory:");
    const a = replica(store, "A", false);
    const b = replica(store, "B", false);
    const first = fakeSession("s-1", "sb");
    await a.claim(first);
    a.release(first);
    await until(async () => (await store!.sessionOwner("sb")) === undefined, "the release to be stored", 2_000);
    const again = fakeSession("s-2", "sb");
    await a.claim(again);
    await b.claim(fakeSession("s-3", "sb"));
    a.release(again);
    await new Promise((r) => setTimeout(r, 50));
    expect((await store.sessionOwner("sb"))?.sessionId).toBe("s-3");
  });

  it("a replica that cannot renew for longer than its lease closes its sessions with UNAVAILABLE", async () => {
    store = openSqliteStore(":memory:");
    const failing: Store = new Proxy(store, {
      get: (t, p, r) => (p === "renewSessions" ? () => Promise.reject(new Error("database unreachable")) : Reflect.get(t, p, r)),
    });
    const a = replica(failing, "A", false, 100);
    const s = fakeSession("s-1", "sb");
    await a.claim(s);
    await a.renew();
    expect(s.closed).toBe(false);
    await new Promise((r) => setTimeout(r, 150));
    await a.renew();
    expect(s.closed).toBe(true);
    expect((s.closedWith as ConnectError).code).toBe(Code.Unavailable);
  });
});
