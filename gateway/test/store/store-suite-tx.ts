// Transaction behaviour of the store suite: atomic commit and rollback, isolation from outside
// reads, no lost updates under concurrency, deadlock recovery, misuse guards, closing, and data
// surviving a restart. Registered by defineStoreSuite (store-suite.ts) inside its describe.

import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { StoreConflictError, StoreUnavailableError, type SandboxRecord, type Store } from "../../src/store/store.js";
import { STORE_CALL_IN_TRANSACTION_MESSAGE } from "../../src/store/codec.js";
import { APPLIED, BEYOND_DOUBLE, barrier, bytes, idempotency, operation, policyRevision, provider, sandbox, setting } from "./store-fixtures.js";
import type { StoreHarness } from "./store-suite.js";

async function insert(store: Store, ...records: SandboxRecord[]) {
  await store.transaction(async (tx) => {
    for (const r of records) await tx.insertSandbox(r);
  });
}

export function defineTransactionTests(harness: () => StoreHarness): void {
  describe("transactions", () => {
    it("a transaction commits all of its writes together and returns fn's value", async () => {
      const { store } = harness();
      const s = sandbox();
      const result = await store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        await tx.insertPolicyRevision(policyRevision(s.id, 1));
        await tx.putSetting(setting(s.id, "k", 1));
        return "done";
      });
      expect(result).toBe("done");
      expect(await store.sandboxById(s.id)).toEqual(s);
      expect(await store.policyRevision(s.id, 1)).toBeDefined();
      expect(await store.settings(s.id)).toHaveLength(1);
    });

    it("a transaction whose fn throws leaves no trace of any of its writes and rethrows the same error", async () => {
      const { store } = harness();
      const existing = sandbox();
      const existingOp = operation(existing.id);
      await store.transaction(async (tx) => {
        await tx.insertSandbox(existing);
        await tx.insertOperation(existingOp);
        await tx.insertPolicyRevision(policyRevision(existing.id, 1));
      });
      const fresh = sandbox();
      const op = operation(fresh.id);
      const p = provider();
      const boom = new Error("boom");
      const attempt = store.transaction(async (tx) => {
        await tx.insertSandbox(fresh);
        await tx.updateSandbox(existing.id, { phase: 9, settingsRevision: 99n });
        await tx.insertPolicyRevision(policyRevision(fresh.id, 1));
        await tx.setPolicyStatus(existing.id, 1, 3, "failed", new Date());
        await tx.putSetting(setting(fresh.id, "k", 1));
        await tx.putSetting(setting("", "global", 1));
        await tx.setGlobalSettingsRevision(5n);
        await tx.insertIdempotency(idempotency(fresh.id, "key"));
        await tx.insertOperation(op);
        await tx.updateOperation(existingOp.id, 1, { state: APPLIED });
        await tx.insertProvider(p);
        await tx.deleteSandbox(existing.id);
        throw boom;
      });
      await expect(attempt).rejects.toBe(boom);
      expect(await store.sandboxById(fresh.id)).toBeUndefined();
      expect(await store.sandboxById(existing.id)).toEqual(existing);
      expect(await store.policyRevision(fresh.id, 1)).toBeUndefined();
      expect(await store.policyRevision(existing.id, 1)).toEqual(policyRevision(existing.id, 1));
      expect(await store.settings(fresh.id)).toEqual([]);
      expect(await store.settings("")).toEqual([]);
      expect(await store.globalSettingsRevision()).toBe(0n);
      expect(await store.transaction((tx) => tx.idempotency(fresh.id, "key"))).toBeUndefined();
      expect(await store.operation(op.id)).toBeUndefined();
      expect(await store.operation(existingOp.id)).toEqual(existingOp);
      expect(await store.providerByName(p.workspace, p.name)).toBeUndefined();
    });

    it("a duplicate insert caught inside a transaction does not spoil its other writes", async () => {
      const { store } = harness();
      const first = idempotency("sb", "key");
      await store.transaction((tx) => tx.insertIdempotency(first));
      const s = sandbox();
      const replay = await store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        try {
          await tx.insertIdempotency(idempotency("sb", "key", { fingerprint: "second" }));
        } catch (err) {
          expect(err).toBeInstanceOf(StoreConflictError);
        }
        await tx.putSetting(setting(s.id, "after", 1));
        return tx.idempotency("sb", "key");
      });
      expect(replay).toEqual(first);
      expect(await store.sandboxById(s.id)).toEqual(s);
      expect(await store.settings(s.id)).toEqual([setting(s.id, "after", 1)]);
    });

    it("a read outside a transaction never sees that transaction's half-done writes", async () => {
      const { store } = harness();
      const s = sandbox({ phase: 1 });
      let inserted!: () => void;
      const insertedSignal = new Promise<void>((resolve) => (inserted = resolve));
      const tx = store.transaction(async (t) => {
        await t.insertSandbox(s);
        inserted();
        await sleep(30);
        await t.updateSandbox(s.id, { phase: 2 });
      });
      await insertedSignal;
      const seen = await store.sandboxById(s.id);
      await tx;
      // Either the state before the transaction or after its commit, never the phase-1 middle.
      if (seen !== undefined) expect(seen.phase).toBe(2);
      expect((await store.sandboxById(s.id))?.phase).toBe(2);
    });

    it("twenty concurrent read-then-update transactions on one sandbox lose no update", async () => {
      const { store } = harness();
      const s = sandbox({ settingsRevision: BEYOND_DOUBLE });
      await insert(store, s);
      await Promise.all(
        Array.from({ length: 20 }, () =>
          store.transaction(async (tx) => {
            const current = await tx.sandboxById(s.id);
            await sleep(1); // let the others run between this read and the write
            await tx.updateSandbox(s.id, { settingsRevision: current!.settingsRevision + 1n });
          }),
        ),
      );
      const after = await store.sandboxById(s.id);
      expect(after?.settingsRevision).toBe(BEYOND_DOUBLE + 20n);
      expect(after?.resourceVersion).toBe(s.resourceVersion + 20n);
    });

    it("twenty concurrent read-then-set transactions of the global settings revision lose no update", async () => {
      const { store } = harness();
      await Promise.all(
        Array.from({ length: 20 }, () =>
          store.transaction(async (tx) => {
            const current = await tx.globalSettingsRevision();
            await sleep(1);
            await tx.setGlobalSettingsRevision(current + 1n);
          }),
        ),
      );
      expect(await store.globalSettingsRevision()).toBe(20n);
    });

    it("transactions that lock two sandboxes in opposite orders both commit", async () => {
      const { store } = harness();
      const a = sandbox({ settingsRevision: 0n });
      const b = sandbox({ settingsRevision: 0n });
      await insert(store, a, b);
      const bothHoldOne = barrier(2, 300);
      const bump = (first: string, second: string) =>
        store.transaction(async (tx) => {
          const x = await tx.sandboxById(first);
          await bothHoldOne();
          const y = await tx.sandboxById(second);
          await tx.updateSandbox(first, { settingsRevision: x!.settingsRevision + 1n });
          await tx.updateSandbox(second, { settingsRevision: y!.settingsRevision + 1n });
        });
      await Promise.all([bump(a.id, b.id), bump(b.id, a.id)]);
      expect((await store.sandboxById(a.id))?.settingsRevision).toBe(2n);
      expect((await store.sandboxById(b.id))?.settingsRevision).toBe(2n);
    });

    it("settings read inside a transaction that locked the sandbox by name follow its own setting writes", async () => {
      const { store } = harness();
      const s = sandbox();
      await insert(store, s);
      await store.transaction(async (tx) => {
        await tx.putSetting(setting(s.id, "b", 1));
        await tx.putSetting(setting("", "g", 1));
      });
      const seen = await store.transaction(async (tx) => {
        await tx.sandboxByName(s.workspace, s.name, "key-1");
        const before = [await tx.settings(s.id), await tx.settings("")];
        await tx.putSetting(setting(s.id, "b", 2));
        await tx.putSetting(setting(s.id, "a", 3));
        await tx.deleteSetting("", "g");
        return { before, after: [await tx.settings(s.id), await tx.settings("")] };
      });
      expect(seen.before).toEqual([[setting(s.id, "b", 1)], [setting("", "g", 1)]]);
      expect(seen.after).toEqual([[setting(s.id, "a", 3), setting(s.id, "b", 2)], []]);
      expect([await store.settings(s.id), await store.settings("")]).toEqual(seen.after);
    });

    it("a store read inside a transaction's fn is refused under test (its StoreTx is what reads in it), and the transaction still commits", async () => {
      const { store } = harness();
      const s = sandbox();
      const seen = await store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        await expect(store.sandboxById(s.id)).rejects.toThrow(STORE_CALL_IN_TRANSACTION_MESSAGE);
        await expect(store.globalVersions()).rejects.toThrow(STORE_CALL_IN_TRANSACTION_MESSAGE);
        return tx.sandboxById(s.id);
      });
      expect(seen).toEqual(s);
      expect(await store.sandboxById(s.id)).toEqual(s);
    });

    it("globalVersions reads the global policy version and settings revision, inside a transaction without taking a lock", async () => {
      const { store } = harness();
      expect(await store.globalVersions()).toEqual({ policyVersion: 0, settingsRevision: 0n });
      await store.transaction(async (tx) => {
        await tx.insertPolicyRevision(policyRevision("", 1));
        await tx.insertPolicyRevision(policyRevision("", 2));
        await tx.setGlobalSettingsRevision(7n);
        // Its own writes, in the transaction.
        expect(await tx.globalVersions()).toEqual({ policyVersion: 2, settingsRevision: 7n });
      });
      expect(await store.globalVersions()).toEqual({ policyVersion: 2, settingsRevision: 7n });
      // A transaction that read the versions does not hold up one that changes them (SQLite runs
      // one transaction at a time anyway).
      if (store.kind !== "postgres") return;
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let didRead!: () => void;
      const read = new Promise<void>((r) => (didRead = r));
      const reader = store.transaction(async (tx) => {
        const v = await tx.globalVersions();
        didRead();
        await held;
        return v;
      });
      // Once it has read (not after a guessed delay: on a loaded machine it may not have yet).
      await Promise.race([read, reader]);
      await store.transaction(async (tx) => tx.setGlobalSettingsRevision(8n));
      release();
      expect(await reader).toEqual({ policyVersion: 2, settingsRevision: 7n });
      expect((await store.globalVersions()).settingsRevision).toBe(8n);
    });

    it("a nested store.transaction is refused, and a StoreTx used after its transaction ended is refused", async () => {
      const { store } = harness();
      let leaked: Parameters<Parameters<Store["transaction"]>[0]>[0] | undefined;
      await store.transaction(async (tx) => {
        leaked = tx;
        await expect(store.transaction(async () => 1)).rejects.toThrow(/inside another transaction/);
      });
      await expect(leaked!.sandboxById("x")).rejects.toThrow(/after its transaction ended/);
      await expect(leaked!.insertSandbox(sandbox())).rejects.toThrow(/after its transaction ended/);
    });
  });

  describe("lifecycle", () => {
    it("close is idempotent and a closed store refuses work with StoreUnavailableError", async () => {
      const { store } = harness();
      await store.close();
      await store.close();
      await expect(store.sandboxById("x")).rejects.toBeInstanceOf(StoreUnavailableError);
      await expect(store.transaction(async () => 1)).rejects.toBeInstanceOf(StoreUnavailableError);
    });

    it("pending operations and every other committed write survive a restart", async (ctx) => {
      const h = harness();
      if (!h.reopen) ctx.skip();
      const s = sandbox();
      const op = operation(s.id, { target: bytes(1, 2) });
      const p = provider();
      const key = idempotency(s.id, "key");
      await h.store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        await tx.insertPolicyRevision(policyRevision(s.id, 1));
        await tx.putSetting(setting(s.id, "k", 7));
        await tx.setGlobalSettingsRevision(BEYOND_DOUBLE);
        await tx.insertIdempotency(key);
        await tx.insertOperation(op);
        await tx.insertProvider(p);
      });
      await h.store.close();
      const again = await h.reopen!();
      expect(await again.sandboxById(s.id)).toEqual(s);
      expect(await again.policyRevision(s.id, 1)).toEqual(policyRevision(s.id, 1));
      expect(await again.settings(s.id)).toEqual([setting(s.id, "k", 7)]);
      expect(await again.globalSettingsRevision()).toBe(BEYOND_DOUBLE);
      expect(await again.transaction((tx) => tx.idempotency(s.id, "key"))).toEqual(key);
      expect(await again.providerByName(p.workspace, p.name)).toEqual(p);
      expect(await again.countPending()).toBe(1);
      expect(await again.dueOperations(new Date(Date.UTC(2100, 0, 1)), 10)).toEqual([op]);
      await again.close();
    });
  });
}
