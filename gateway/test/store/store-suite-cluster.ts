// What several gateway replicas need of the store, in the one behavioural suite: session
// ownership (claim, lease renewal, release), the due operations of one replica's sandboxes,
// batched operation reads, and notifications. Registered by defineStoreSuite (store-suite.ts).

import { describe, expect, it } from "vitest";
import type { SessionOwnerRecord, Store } from "../../src/store/store.js";
import { APPLIED, at, operation } from "./store-fixtures.js";
import type { StoreHarness } from "./store-suite.js";

const owner = (sandboxId: string, replicaId: string, sessionId: string, leaseUntil = at(60_000)): SessionOwnerRecord => ({
  sandboxId,
  replicaId,
  sessionId,
  leaseUntil,
  acquiredAt: at(1_000),
});

async function insertOps(store: Store, ...ops: ReturnType<typeof operation>[]) {
  await store.transaction(async (tx) => {
    for (const op of ops) await tx.insertOperation(op);
  });
}

/** Resolves with the messages received once `count` arrived, or rejects after `ms`. */
function collect(store: Store, channel: string, count: number, ms = 3_000) {
  const got: string[] = [];
  let done!: () => void;
  const arrived = new Promise<void>((resolve) => (done = resolve));
  const subscription = store.listen(channel, {
    onMessage: (m) => {
      got.push(m);
      if (got.length >= count) done();
    },
    onGap: () => undefined,
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`only ${got.length} of ${count} messages`)), ms)));
  return { got, subscription, arrived: Promise.race([arrived, timeout]).finally(() => clearTimeout(timer)) };
}

export function defineClusterTests(harness: () => StoreHarness): void {
  describe("session ownership and notifications", () => {
    it("the first claim of a sandbox replaces nothing, and the owner reads back field for field", async () => {
      const { store } = harness();
      const o = owner("sb-1", "replica-a", "session-1");
      expect(await store.claimSession(o)).toBeUndefined();
      expect(await store.sessionOwner("sb-1")).toEqual(o);
      expect(await store.sessionOwner("sb-unknown")).toBeUndefined();
    });

    it("a claim by another replica takes the sandbox over and returns the owner it replaced", async () => {
      const { store } = harness();
      const first = owner("sb-1", "replica-a", "session-1");
      const second = owner("sb-1", "replica-b", "session-2", at(90_000));
      await store.claimSession(first);
      expect(await store.claimSession(second)).toEqual(first);
      expect(await store.sessionOwner("sb-1")).toEqual(second);
    });

    it("renewal extends only the sessions the replica still owns and names them, so a lost one shows by its absence", async () => {
      const { store } = harness();
      await store.claimSession(owner("sb-1", "replica-a", "s-1"));
      await store.claimSession(owner("sb-2", "replica-a", "s-2"));
      await store.claimSession(owner("sb-2", "replica-b", "s-3"));
      const renewed = await store.renewSessions("replica-a", ["s-1", "s-2"], at(120_000));
      expect(renewed).toEqual(["s-1"]);
      expect((await store.sessionOwner("sb-1"))?.leaseUntil).toEqual(at(120_000));
      expect(await store.sessionOwner("sb-2")).toEqual(owner("sb-2", "replica-b", "s-3"));
      expect(await store.renewSessions("replica-a", [], at(130_000))).toEqual([]);
    });

    it("release forgets the owner only while the released session still holds the sandbox", async () => {
      const { store } = harness();
      await store.claimSession(owner("sb-1", "replica-a", "s-1"));
      await store.claimSession(owner("sb-1", "replica-b", "s-2"));
      expect(await store.releaseSession("sb-1", "s-1")).toBe(false);
      expect((await store.sessionOwner("sb-1"))?.sessionId).toBe("s-2");
      expect(await store.releaseSession("sb-1", "s-2")).toBe(true);
      expect(await store.sessionOwner("sb-1")).toBeUndefined();
    });

    it("dueOperations with an owner lists only due PENDING operations of sandboxes that replica holds under a live lease", async () => {
      const { store } = harness();
      const now = at(50_000);
      await store.claimSession(owner("mine", "replica-a", "s-1", at(60_000)));
      await store.claimSession(owner("expired", "replica-a", "s-2", at(40_000)));
      await store.claimSession(owner("theirs", "replica-b", "s-3", at(60_000)));
      const due = operation("mine", { nextAttemptAt: at(10), createdAt: at(10) });
      const later = operation("mine", { nextAttemptAt: at(55_000) });
      const done = operation("mine", { state: APPLIED, nextAttemptAt: at(10) });
      await insertOps(store, due, later, done, operation("expired", { nextAttemptAt: at(10) }), operation("theirs", { nextAttemptAt: at(10) }), operation("nobody", { nextAttemptAt: at(10) }));
      expect(await store.dueOperations(now, 10, "replica-a")).toEqual([due]);
      expect((await store.dueOperations(now, 10, "replica-b")).map((o) => o.sandboxId)).toEqual(["theirs"]);
      expect(await store.dueOperations(now, 10, "replica-c")).toEqual([]);
      expect(await store.dueOperations(now, 0, "replica-a")).toEqual([]);
      expect(await store.dueOperations(now, 10)).toHaveLength(4);
    });

    it("operationsById returns the stored rows of the ids that exist and skips the others", async () => {
      const { store } = harness();
      const a = operation("sb-1");
      const b = operation("sb-2", { state: APPLIED });
      await insertOps(store, a, b, operation("sb-3"));
      const found = await store.operationsById([b.id, "missing", a.id]);
      expect(found.sort((x, y) => x.id.localeCompare(y.id))).toEqual([a, b].sort((x, y) => x.id.localeCompare(y.id)));
      expect(await store.operationsById([])).toEqual([]);
    });

    it("a notification reaches every listener of its channel in order, none of another channel, and none after close", async () => {
      const { store } = harness();
      const one = collect(store, "alpha", 3);
      const two = collect(store, "alpha", 3);
      const other = collect(store, "beta", 1, 200);
      const subs = await Promise.all([one.subscription, two.subscription, other.subscription]);
      await store.notify("alpha", ["m1", "m2"]);
      await store.notify("alpha", ["m3"]);
      await Promise.all([one.arrived, two.arrived]);
      expect(one.got).toEqual(["m1", "m2", "m3"]);
      expect(two.got).toEqual(["m1", "m2", "m3"]);
      await expect(other.arrived).rejects.toThrow(/only 0/);
      await subs[0]!.close();
      await store.notify("alpha", ["m4"]);
      await new Promise((r) => setTimeout(r, 150));
      expect(one.got).toEqual(["m1", "m2", "m3"]);
      await Promise.all(subs.slice(1).map((s) => s.close()));
    });

    it("a channel name that is not letters, digits and _ is refused", async () => {
      const { store } = harness();
      await expect(store.listen("bad channel;", { onMessage: () => undefined, onGap: () => undefined })).rejects.toThrow(/channel/);
    });
  });
}
