// Two stores on one database (two gateway replicas on a SQLite file or a PostgreSQL database):
// what one commits, the other reads as it now stands, even a row it has read before, and a
// transaction that rolls back leaves no trace in what later reads and updates start from.
// Registered by defineStoreSuite (store-suite.ts) inside its describe.

import { describe, expect, it } from "vitest";
import type { SandboxRecord, Store } from "../../src/store/store.js";
import { at, operation, policyRevision, sandbox, setting } from "./store-fixtures.js";
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

    it("settings another store wrote or deleted are read as they now stand, in either scope, though read (and empty) before", async (ctx) => {
      const h = harness();
      if (!h.reopen) ctx.skip();
      const a = sandbox();
      await insert(h.store, a);
      await h.store.transaction((tx) => tx.putSetting(setting(a.id, "kept", 1)));
      expect(await h.store.settings(a.id)).toEqual([setting(a.id, "kept", 1)]);
      expect(await h.store.settings("")).toEqual([]);
      const other = await h.reopen!();
      await other.transaction(async (tx) => {
        await tx.putSetting(setting(a.id, "added", 2));
        await tx.deleteSetting(a.id, "kept");
        await tx.putSetting(setting("", "region", 3));
      });
      await other.close();
      expect(await h.store.settings(a.id)).toEqual([setting(a.id, "added", 2)]);
      expect(await h.store.transaction((tx) => tx.settings(""))).toEqual([setting("", "region", 3)]);
    });

    it("a store's own setting writes are read back at once, in and after the transaction, and a rolled-back one is not there", async () => {
      const { store } = harness();
      const a = sandbox();
      await insert(store, a);
      expect(await store.settings(a.id)).toEqual([]);
      await store.transaction(async (tx) => {
        await tx.putSetting(setting(a.id, "b", 1));
        expect(await tx.settings(a.id)).toEqual([setting(a.id, "b", 1)]);
        await tx.putSetting(setting(a.id, "a", 2));
        await tx.putSetting(setting(a.id, "b", 3));
        expect(await tx.settings(a.id)).toEqual([setting(a.id, "a", 2), setting(a.id, "b", 3)]);
      });
      expect(await store.settings(a.id)).toEqual([setting(a.id, "a", 2), setting(a.id, "b", 3)]);
      const boom = new Error("boom");
      await expect(
        store.transaction(async (tx) => {
          await tx.deleteSetting(a.id, "a");
          await tx.putSetting(setting(a.id, "c", 4));
          expect(await tx.settings(a.id)).toEqual([setting(a.id, "b", 3), setting(a.id, "c", 4)]);
          throw boom;
        }),
      ).rejects.toBe(boom);
      expect(await store.settings(a.id)).toEqual([setting(a.id, "a", 2), setting(a.id, "b", 3)]);
      await store.transaction((tx) => tx.deleteSandbox(a.id));
      expect(await store.settings(a.id)).toEqual([]);
    });

    it("pending operations another store inserted or resolved are read as they now stand, though read before", async (ctx) => {
      const h = harness();
      if (!h.reopen) ctx.skip();
      const first = operation("sb-shared", { createdAt: at(10) });
      const second = operation("sb-shared", { createdAt: at(20) });
      await h.store.transaction(async (tx) => {
        await tx.insertOperation(first);
        await tx.insertOperation(second);
      });
      expect((await h.store.pendingOperations("sb-shared")).map((o) => o.id)).toEqual([first.id, second.id]);
      const other = await h.reopen!();
      const third = operation("sb-shared", { createdAt: at(5) });
      await other.transaction(async (tx) => {
        await tx.insertOperation(third);
        await tx.updateOperation(first.id, first.rowVersion, { state: 3, completedAt: at(30) });
      });
      await other.close();
      expect((await h.store.pendingOperations("sb-shared")).map((o) => o.id)).toEqual([third.id, second.id]);
      expect((await h.store.transaction((tx) => tx.pendingOperations("sb-shared"))).map((o) => o.id)).toEqual([third.id, second.id]);
    });

    it("a store's own operation writes show in its pending operations at once, in creation order, and those of a rolled-back transaction do not", async () => {
      const { store } = harness();
      const sb = "sb-own";
      const a = operation(sb, { createdAt: at(10), dimension: "settings" });
      await store.transaction((tx) => tx.insertOperation(a));
      expect(await store.pendingOperations(sb)).toEqual([a]);
      const b = operation(sb, { createdAt: at(5) });
      const c = operation(sb, { createdAt: at(20), state: 3, completedAt: at(20) });
      const updated = await store.transaction(async (tx) => {
        expect(await tx.pendingOperations(sb)).toEqual([a]);
        await tx.insertOperation(b);
        await tx.insertOperation(c);
        expect((await tx.pendingOperations(sb)).map((o) => o.id)).toEqual([b.id, a.id]);
        const next = await tx.updateOperation(a.id, a.rowVersion, { attemptCount: 3 });
        expect(await tx.pendingOperations(sb, "settings")).toEqual([next]);
        return next!;
      });
      expect(await store.pendingOperations(sb)).toEqual([b, updated]);
      expect(await store.pendingOperations(sb)).toEqual(await store.transaction((tx) => tx.pendingOperations(sb)));
      const boom = new Error("boom");
      await expect(
        store.transaction(async (tx) => {
          await tx.updateOperation(b.id, b.rowVersion, { state: 3, completedAt: at(30) });
          await tx.insertOperation(operation(sb, { createdAt: at(1) }));
          expect(await tx.pendingOperations(sb)).toHaveLength(2);
          throw boom;
        }),
      ).rejects.toBe(boom);
      expect(await store.pendingOperations(sb)).toEqual([b, updated]);
      // A result resolves the last one: none is left.
      await store.transaction(async (tx) => {
        await tx.updateOperation(b.id, b.rowVersion, { state: 3, completedAt: at(40) });
        await tx.updateOperation(updated.id, updated.rowVersion, { state: 4, completedAt: at(40) });
      });
      expect(await store.pendingOperations(sb)).toEqual([]);
    });

    it("a sandbox with more pending operations than an engine keeps in memory (16 on SQLite) still lists every one, in order, as they come and go", async () => {
      const { store } = harness();
      const sb = "sb-many";
      const ops = Array.from({ length: 18 }, (_, i) => operation(sb, { createdAt: at(100 - i) }));
      await store.transaction(async (tx) => {
        for (const o of ops.slice(0, 16)) await tx.insertOperation(o);
      });
      const ids = (list: readonly { id: string }[]) => list.map((o) => o.id);
      expect(ids(await store.pendingOperations(sb))).toEqual(ids(ops.slice(0, 16).reverse()));
      await store.transaction(async (tx) => {
        for (const o of ops.slice(16)) await tx.insertOperation(o);
      });
      expect(ids(await store.pendingOperations(sb))).toEqual(ids([...ops].reverse()));
      await store.transaction(async (tx) => {
        for (const o of ops.slice(0, 5)) await tx.updateOperation(o.id, o.rowVersion, { state: 3, completedAt: at(200) });
      });
      expect(ids(await store.pendingOperations(sb))).toEqual(ids(ops.slice(5).reverse()));
    });
  });
}
