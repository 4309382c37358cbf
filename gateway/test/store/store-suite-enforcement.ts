// Enforcement records in the store suite: what each sandbox enforces is one row per sandbox,
// replaced by each result, read in batches, kept apart from the desired state (no resource
// version bump), removed with its sandbox and kept across a restart. Registered by
// defineStoreSuite (store-suite.ts) inside its describe.

import { describe, expect, it } from "vitest";
import type { EnforcementRecord } from "../../src/store/store.js";
import { at, bytes, sandbox } from "./store-fixtures.js";
import type { StoreHarness } from "./store-suite.js";

const ENFORCING = 1;
const FAILED_CLOSED = 2;

function enforcement(sandboxId: string, over: Partial<EnforcementRecord> = {}): EnforcementRecord {
  return { sandboxId, state: ENFORCING, policyVersion: 2, detail: bytes(8, 2, 16, 2), observedAt: at(1_000), ...over };
}

export function defineEnforcementTests(harness: () => StoreHarness): void {
  describe("what each sandbox enforces", () => {
    it("a sandbox has no enforcement record until one is put, then exactly the one put", async () => {
      const { store } = harness();
      const s = sandbox();
      await store.transaction((tx) => tx.insertSandbox(s));
      expect(await store.enforcements([s.id])).toEqual([]);
      await store.transaction((tx) => tx.putEnforcement(enforcement(s.id)));
      expect(await store.enforcements([s.id])).toEqual([enforcement(s.id)]);
    });

    it("a later record replaces the earlier one and leaves the sandbox's resource version alone", async () => {
      const { store } = harness();
      const s = sandbox();
      await store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        await tx.putEnforcement(enforcement(s.id));
      });
      const closed = enforcement(s.id, { state: FAILED_CLOSED, policyVersion: 0, detail: bytes(8, 2, 80, 3), observedAt: at(5_000) });
      await store.transaction((tx) => tx.putEnforcement(closed));
      expect(await store.enforcements([s.id])).toEqual([closed]);
      expect((await store.sandboxById(s.id))?.resourceVersion).toBe(s.resourceVersion);
    });

    it("enforcements reads the records of many sandboxes at once and skips those without one", async () => {
      const { store } = harness();
      const [a, b, c] = [sandbox(), sandbox(), sandbox()];
      await store.transaction(async (tx) => {
        for (const s of [a, b, c]) await tx.insertSandbox(s);
        await tx.putEnforcement(enforcement(a.id, { policyVersion: 3 }));
        await tx.putEnforcement(enforcement(c.id, { policyVersion: 7 }));
      });
      const got = await store.enforcements([a.id, b.id, c.id, "no-such-sandbox"]);
      expect(new Map(got.map((e) => [e.sandboxId, e.policyVersion]))).toEqual(new Map([[a.id, 3], [c.id, 7]]));
      expect(await store.enforcements([])).toEqual([]);
    });

    it("a record put in a transaction that fails is not kept", async () => {
      const { store } = harness();
      const s = sandbox();
      await store.transaction((tx) => tx.insertSandbox(s));
      await expect(
        store.transaction(async (tx) => {
          await tx.putEnforcement(enforcement(s.id));
          throw new Error("boom");
        }),
      ).rejects.toThrow("boom");
      expect(await store.enforcements([s.id])).toEqual([]);
    });

    it("deleting a sandbox removes its enforcement record", async () => {
      const { store } = harness();
      const s = sandbox();
      await store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        await tx.putEnforcement(enforcement(s.id));
      });
      await store.transaction((tx) => tx.deleteSandbox(s.id));
      expect(await store.enforcements([s.id])).toEqual([]);
    });

    it("an enforcement record survives a restart", async (ctx) => {
      const h = harness();
      if (!h.reopen) ctx.skip();
      const s = sandbox();
      const e = enforcement(s.id, { state: FAILED_CLOSED, policyVersion: 0, observedAt: at(123_456) });
      await h.store.transaction(async (tx) => {
        await tx.insertSandbox(s);
        await tx.putEnforcement(e);
      });
      await h.store.close();
      const again = await h.reopen!();
      expect(await again.enforcements([s.id])).toEqual([e]);
      await again.close();
    });
  });
}
