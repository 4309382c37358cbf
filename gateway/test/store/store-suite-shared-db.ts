// Two stores on one database (two gateway replicas on a SQLite file or a PostgreSQL database):
// what one commits, the other reads as it now stands, even a row it has read before, and a
// transaction that rolls back leaves no trace in what later reads and updates start from.
// Registered by defineStoreSuite (store-suite.ts) inside its describe.

import { describe, expect, it } from "vitest";
import type { SandboxRecord, Store } from "../../src/store/store.js";
import { at, policyRevision, sandbox } from "./store-fixtures.js";
import type { StoreHarness } from "./store-suite.js";

async function insert(store: Store, ...records: SandboxRecord[]) {
  await store.transaction(async (tx) => {
    for (const r of records) await tx.insertSandbox(r);
  });
}

export function defineSharedDatabaseTests(harness: () => StoreHarness): void {
  describe("two stores on one database", () => {
    it("a sandbox another store updated, deleted or created is read as it now stands, by id, by name and in a transaction", async (ctx) => {
      const h = harness();
      if (!h.reopen) ctx.skip();
      const a = sandbox();
      const b = sandbox();
      await insert(h.store, a, b);
      // Read (and so possibly cached) by the first store, by both keys.
      expect(await h.store.sandboxById(a.id)).toEqual(a);
      expect(await h.store.sandboxByName(b.workspace, b.name)).toEqual(b);
      const other = await h.reopen!();
      const changed = await other.transaction((tx) => tx.updateSandbox(a.id, { phase: 4, annotations: { by: "other" } }));
      await other.transaction((tx) => tx.deleteSandbox(b.id));
      const c = { ...sandbox(), workspace: b.workspace, name: b.name };
      await insert(other, c);
      await other.close();

      expect(await h.store.sandboxById(a.id)).toEqual(changed);
      expect(await h.store.sandboxByName(a.workspace, a.name)).toEqual(changed);
      expect(await h.store.sandboxById(b.id)).toBeUndefined();
      expect(await h.store.sandboxByName(b.workspace, b.name)).toEqual(c);
      // An update starts from the row as the other store left it.
      const next = await h.store.transaction(async (tx) => {
        expect(await tx.sandboxById(a.id)).toEqual(changed);
        return tx.updateSandbox(a.id, { policyVersion: 3 });
      });
      expect(next).toEqual({ ...changed, policyVersion: 3, resourceVersion: changed.resourceVersion + 1n });
      expect(await h.store.sandboxById(a.id)).toEqual(next);
    });

    it("a policy revision another store added or whose status it set is read as it now stands, latest included", async (ctx) => {
      const h = harness();
      if (!h.reopen) ctx.skip();
      const a = sandbox();
      await insert(h.store, a);
      await h.store.transaction((tx) => tx.insertPolicyRevision(policyRevision(a.id, 1)));
      // Read (and so possibly cached) by the first store.
      expect(await h.store.transaction((tx) => tx.latestPolicyRevision(a.id))).toEqual(policyRevision(a.id, 1));
      expect(await h.store.policyRevision(a.id, 1)).toEqual(policyRevision(a.id, 1));
      const other = await h.reopen!();
      await other.transaction(async (tx) => {
        await tx.setPolicyStatus(a.id, 1, 2, "", at(5_000));
        await tx.insertPolicyRevision(policyRevision(a.id, 2));
      });
      await other.close();
      expect(await h.store.policyRevision(a.id, 1)).toEqual(policyRevision(a.id, 1, { status: 2, loadedAt: at(5_000) }));
      expect(await h.store.transaction((tx) => tx.latestPolicyRevision(a.id))).toEqual(policyRevision(a.id, 2));
    });

    it("a policy revision's own writes are read back as stored, and a rolled-back one is not there", async () => {
      const { store } = harness();
      const a = sandbox();
      await insert(store, a);
      const rev = policyRevision(a.id, 1);
      await store.transaction(async (tx) => {
        expect(await tx.latestPolicyRevision(a.id)).toBeUndefined();
        await tx.insertPolicyRevision(rev);
      });
      // The caller's record changing afterwards changes nothing stored or read.
      rev.policy[0] = 99;
      (rev.provenance as Record<string, string>).late = "x";
      expect(await store.policyRevision(a.id, 1)).toEqual(policyRevision(a.id, 1));
      await store.transaction((tx) => tx.setPolicyStatus(a.id, 1, 3, "bad", undefined));
      const failed = policyRevision(a.id, 1, { status: 3, loadError: "bad" });
      expect(await store.transaction((tx) => tx.latestPolicyRevision(a.id))).toEqual(failed);
      const boom = new Error("boom");
      await expect(
        store.transaction(async (tx) => {
          await tx.insertPolicyRevision(policyRevision(a.id, 2));
          await tx.setPolicyStatus(a.id, 1, 2, "", at(9_000));
          expect((await tx.latestPolicyRevision(a.id))?.version).toBe(2);
          throw boom;
        }),
      ).rejects.toBe(boom);
      expect(await store.transaction((tx) => tx.latestPolicyRevision(a.id))).toEqual(failed);
      expect(await store.policyRevision(a.id, 2)).toBeUndefined();
    });

    it("after a transaction that updated a sandbox rolls back, reads and the next update start from the committed row", async () => {
      const { store } = harness();
      const a = sandbox();
      await insert(store, a);
      const first = await store.transaction((tx) => tx.updateSandbox(a.id, { phase: 2 }));
      const boom = new Error("boom");
      await expect(
        store.transaction(async (tx) => {
          await tx.updateSandbox(a.id, { phase: 9, policyVersion: 7 });
          expect((await tx.sandboxById(a.id))?.phase).toBe(9);
          throw boom;
        }),
      ).rejects.toBe(boom);
      expect(await store.sandboxById(a.id)).toEqual(first);
      expect(await store.sandboxByName(a.workspace, a.name)).toEqual(first);
      const next = await store.transaction((tx) => tx.updateSandbox(a.id, { settingsRevision: 5n }));
      expect(next).toEqual({ ...first, settingsRevision: 5n, resourceVersion: first.resourceVersion + 1n });
    });
  });
}
