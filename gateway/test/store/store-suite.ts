// The one behavioural suite every Store backend must pass (SQLite and PostgreSQL run it
// unchanged): records round-trip exactly, create-only inserts conflict, compare-and-set holds,
// listing and paging, providers, settings. Transactions, concurrency and restarts are in
// store-suite-tx.ts, defined from here so a backend registers the whole suite with one call.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { InvalidPageTokenError } from "../../src/store/codec.js";
import { StoreConflictError, type SandboxRecord, type Store, type StoreTx } from "../../src/store/store.js";
import { APPLIED, MAX_INT64, PENDING, SUPERSEDED, at, bytes, idempotency, operation, policyRevision, provider, sandbox, setting } from "./store-fixtures.js";
import { defineTransactionTests } from "./store-suite-tx.js";
import { defineClusterTests } from "./store-suite-cluster.js";
import { defineEnforcementTests } from "./store-suite-enforcement.js";
import { defineSharedDatabaseTests } from "./store-suite-shared-db.js";
import { defineRolloutTests } from "./store-suite-rollouts.js";

export interface StoreHarness {
  readonly store: Store;
  /** Opens the same database again (after `store.close()`); absent for in-memory stores. */
  readonly reopen?: () => Promise<Store>;
  /** Closes every store this harness opened and removes the database. */
  readonly cleanup: () => Promise<void>;
}

export const write = <T>(store: Store, fn: (tx: StoreTx) => Promise<T>) => store.transaction(fn);

export async function insertSandboxes(store: Store, ...records: SandboxRecord[]): Promise<void> {
  await write(store, async (tx) => {
    for (const r of records) await tx.insertSandbox(r);
  });
}

export function defineStoreSuite(name: string, open: () => Promise<StoreHarness>): void {
  describe(`Store behaviour: ${name}`, () => {
    let harness: StoreHarness;
    let store: Store;
    beforeEach(async () => {
      harness = await open();
      store = harness.store;
    });
    afterEach(async () => {
      await harness.cleanup();
    });

    describe("sandboxes", () => {
      it("a sandbox reads back field for field, by name and by id, inside and outside a transaction", async () => {
        const full = sandbox({ deletionAt: at(5_000), labels: { "app.kubernetes.io/name": "ägent", x: "" } });
        const bare = sandbox({ labels: {}, annotations: {}, providers: [], spec: bytes(), resourceVersion: 0n, settingsRevision: 0n, providerEnvRevision: 0n, policyVersion: 0, policyHash: "" });
        await insertSandboxes(store, full, bare);
        for (const r of [full, bare]) {
          expect(await store.sandboxById(r.id)).toEqual(r);
          expect(await store.sandboxByName(r.workspace, r.name)).toEqual(r);
          expect(await write(store, (tx) => tx.sandboxById(r.id))).toEqual(r);
          expect(await write(store, (tx) => tx.sandboxByName(r.workspace, r.name))).toEqual(r);
        }
        const read = await store.sandboxById(full.id);
        expect(typeof read?.resourceVersion).toBe("bigint");
        expect(read?.spec).toBeInstanceOf(Uint8Array);
        expect(read?.createdAt).toBeInstanceOf(Date);
      });

      it("an unknown sandbox reads as undefined", async () => {
        expect(await store.sandboxById("missing")).toBeUndefined();
        expect(await store.sandboxByName("ws-a", "missing")).toBeUndefined();
        expect(await write(store, (tx) => tx.sandboxByName("ws-a", "missing"))).toBeUndefined();
      });

      it("a second sandbox with the same workspace and name, or the same id, is a StoreConflictError and the first stays", async () => {
        const first = sandbox();
        await insertSandboxes(store, first);
        await expect(insertSandboxes(store, sandbox({ name: first.name, phase: 9 }))).rejects.toBeInstanceOf(StoreConflictError);
        await expect(insertSandboxes(store, sandbox({ id: first.id }))).rejects.toBeInstanceOf(StoreConflictError);
        expect(await store.sandboxById(first.id)).toEqual(first);
        const elsewhere = sandbox({ workspace: "ws-b", name: first.name });
        await insertSandboxes(store, elsewhere);
        expect(await store.sandboxByName("ws-b", first.name)).toEqual(elsewhere);
      });

      it("updateSandbox applies only the patched fields, bumps resourceVersion by one and returns the stored record", async () => {
        const s = sandbox();
        await insertSandboxes(store, s);
        const patch = { phase: 4, annotations: { a: "b" }, settingsRevision: MAX_INT64, deletionAt: at(77), policyVersion: 4, policyHash: "h4" };
        const updated = await write(store, (tx) => tx.updateSandbox(s.id, patch));
        expect(updated).toEqual({ ...s, ...patch, resourceVersion: s.resourceVersion + 1n });
        expect(await store.sandboxById(s.id)).toEqual(updated);
        const again = await write(store, (tx) => tx.updateSandbox(s.id, { labels: { l: "1" }, spec: bytes(9), providerEnvRevision: 1n }));
        expect(again).toEqual({ ...updated, labels: { l: "1" }, spec: bytes(9), providerEnvRevision: 1n, resourceVersion: s.resourceVersion + 2n });
        const empty = await write(store, (tx) => tx.updateSandbox(s.id, {}));
        expect(empty.resourceVersion).toBe(s.resourceVersion + 3n);
      });

      it("updates of a sandbox and an operation read earlier in the same transaction return the stored records, also when repeated", async () => {
        const s = sandbox();
        const op = operation(s.id, { rowVersion: 3, target: bytes(1) });
        await write(store, async (tx) => {
          await tx.insertSandbox(s);
          await tx.insertOperation(op);
        });
        const patch = { phase: 4, annotations: { a: "b" }, labels: { l: "1" }, spec: bytes(7), settingsRevision: MAX_INT64, deletionAt: at(77), policyVersion: 4, policyHash: "h4", providerEnvRevision: 2n };
        const opPatch = { state: SUPERSEDED, outcome: 3, sanitizedError: "newer", completedAt: at(600), attemptCount: 2, nextAttemptAt: at(700), target: bytes(9, 9) };
        const out = await write(store, async (tx) => {
          const read = await tx.sandboxByName(s.workspace, s.name);
          const first = await tx.updateSandbox(read!.id, patch);
          const second = await tx.updateSandbox(s.id, { phase: 5 });
          const [pending] = await tx.pendingOperations(s.id);
          const stale = await tx.updateOperation(op.id, 2, { state: APPLIED });
          const o1 = await tx.updateOperation(pending!.id, pending!.rowVersion, opPatch);
          const o2 = await tx.updateOperation(op.id, 4, { target: null });
          const lost = await tx.updateOperation(op.id, 4, { state: APPLIED });
          return { read, first, second, stale, o1, o2, lost, reread: await tx.sandboxById(s.id), reop: await tx.operation(op.id) };
        });
        expect(out.read).toEqual(s);
        expect(out.first).toEqual({ ...s, ...patch, resourceVersion: s.resourceVersion + 1n });
        expect(out.second).toEqual({ ...out.first, phase: 5, resourceVersion: s.resourceVersion + 2n });
        expect(out.reread).toEqual(out.second);
        expect(await store.sandboxById(s.id)).toEqual(out.second);
        expect(out.stale).toBeUndefined();
        expect(out.o1).toEqual({ ...op, ...opPatch, rowVersion: 4, updatedAt: out.o1?.updatedAt });
        expect(out.o2).toEqual({ ...out.o1, target: undefined, rowVersion: 5, updatedAt: out.o2?.updatedAt });
        expect(out.lost).toBeUndefined();
        expect(out.reop).toEqual(out.o2);
        expect(await store.operation(op.id)).toEqual(out.o2);
      });

      it("a rolled-back transaction's updates of rows it read leave the next transaction reading and updating the stored rows", async () => {
        const s = sandbox();
        const op = operation(s.id);
        await write(store, async (tx) => {
          await tx.insertSandbox(s);
          await tx.insertOperation(op);
        });
        await expect(
          write(store, async (tx) => {
            await tx.sandboxById(s.id);
            await tx.updateSandbox(s.id, { phase: 4 });
            const [p] = await tx.pendingOperations(s.id);
            await tx.updateOperation(p!.id, p!.rowVersion, { state: APPLIED });
            throw new Error("boom");
          }),
        ).rejects.toThrow("boom");
        const after = await write(store, async (tx) => ({
          sb: await tx.updateSandbox(s.id, { policyHash: "h" }),
          op: await tx.updateOperation(op.id, op.rowVersion, { attemptCount: 1 }),
        }));
        expect(after.sb).toEqual({ ...s, policyHash: "h", resourceVersion: s.resourceVersion + 1n });
        expect(after.op).toEqual({ ...op, attemptCount: 1, rowVersion: op.rowVersion + 1, updatedAt: after.op?.updatedAt });
      });

      it("updateSandbox of an unknown id throws", async () => {
        await expect(write(store, (tx) => tx.updateSandbox("missing", { phase: 1 }))).rejects.toThrow();
      });

      it("deleteSandbox removes the sandbox and its revisions, settings and idempotency records, keeps its operations and frees the name", async () => {
        const s = sandbox();
        const other = sandbox();
        const op = operation(s.id);
        await write(store, async (tx) => {
          await tx.insertSandbox(s);
          await tx.insertSandbox(other);
          await tx.insertPolicyRevision(policyRevision(s.id, 1));
          await tx.insertPolicyRevision(policyRevision(other.id, 1));
          await tx.putSetting(setting(s.id, "k", 1));
          await tx.putSetting(setting(other.id, "k", 1));
          await tx.putSetting(setting("", "global", 1));
          await tx.insertIdempotency(idempotency(s.id, "key"));
          await tx.insertOperation(op);
        });
        await write(store, (tx) => tx.deleteSandbox(s.id));
        expect(await store.sandboxById(s.id)).toBeUndefined();
        expect(await store.policyRevision(s.id, 1)).toBeUndefined();
        expect(await store.settings(s.id)).toEqual([]);
        expect(await write(store, (tx) => tx.idempotency(s.id, "key"))).toBeUndefined();
        expect(await store.operation(op.id)).toEqual(op);
        expect(await store.sandboxById(other.id)).toEqual(other);
        expect(await store.policyRevision(other.id, 1)).toBeDefined();
        expect(await store.settings(other.id)).toHaveLength(1);
        expect(await store.settings("")).toHaveLength(1);
        await insertSandboxes(store, sandbox({ name: s.name }));
        await write(store, (tx) => tx.deleteSandbox("missing"));
      });
    });

    describe("listing sandboxes", () => {
      it("listSandboxes pages through every sandbox exactly once in (workspace, name) order", async () => {
        const all = Array.from({ length: 23 }, (_, i) => sandbox({ workspace: i % 3 === 0 ? "ws-b" : "ws-a", name: `n-${String(i).padStart(2, "0")}` }));
        all.push(sandbox({ workspace: "ws-a", name: "N-upper" }), sandbox({ workspace: "ws-a", name: "n_under" }));
        await insertSandboxes(store, ...[...all].reverse());
        const seen: SandboxRecord[] = [];
        let token = "";
        let pages = 0;
        do {
          const page = await store.listSandboxes({ workspace: undefined, labels: {}, pageSize: 7, pageToken: token });
          expect(page.items.length).toBeLessThanOrEqual(7);
          seen.push(...page.items);
          token = page.nextPageToken;
          pages++;
        } while (token !== "");
        expect(pages).toBe(4);
        const key = (r: SandboxRecord) => [r.workspace, r.name] as const;
        const expected = [...all].sort((a, b) => {
          const [aw, an] = key(a);
          const [bw, bn] = key(b);
          return aw !== bw ? (aw < bw ? -1 : 1) : an < bn ? -1 : an > bn ? 1 : 0;
        });
        expect(seen.map((r) => r.id)).toEqual(expected.map((r) => r.id));
        expect(seen[0]).toEqual(expected[0]);
      });

      it("listSandboxes filters by workspace and by all given labels, paging within the filter", async () => {
        const match = (i: number) => sandbox({ workspace: "ws-a", name: `m-${i}`, labels: { team: "core", env: "prod", extra: String(i) } });
        const wanted = [1, 2, 3, 4, 5].map(match);
        await insertSandboxes(
          store,
          ...wanted,
          sandbox({ workspace: "ws-a", name: "x-1", labels: { team: "core", env: "dev" } }),
          sandbox({ workspace: "ws-a", name: "x-2", labels: { team: "core" } }),
          sandbox({ workspace: "ws-b", name: "x-3", labels: { team: "core", env: "prod" } }),
        );
        const first = await store.listSandboxes({ workspace: "ws-a", labels: { team: "core", env: "prod" }, pageSize: 3, pageToken: "" });
        expect(first.items.map((r) => r.name)).toEqual(["m-1", "m-2", "m-3"]);
        const second = await store.listSandboxes({ workspace: "ws-a", labels: { team: "core", env: "prod" }, pageSize: 3, pageToken: first.nextPageToken });
        expect(second.items.map((r) => r.name)).toEqual(["m-4", "m-5"]);
        expect(second.nextPageToken).toBe("");
        const ws = await store.listSandboxes({ workspace: "ws-b", labels: {}, pageSize: 0, pageToken: "" });
        expect(ws.items.map((r) => r.name)).toEqual(["x-3"]);
        const none = await store.listSandboxes({ workspace: "ws-c", labels: {}, pageSize: 10, pageToken: "" });
        expect(none).toEqual({ items: [], nextPageToken: "" });
        const byLabel = await store.listSandboxes({ workspace: undefined, labels: { env: "prod" }, pageSize: 100, pageToken: "" });
        expect(byLabel.items.map((r) => r.name)).toEqual(["m-1", "m-2", "m-3", "m-4", "m-5", "x-3"]);
      });

      it("a page token the store did not issue is rejected", async () => {
        await expect(store.listSandboxes({ workspace: undefined, labels: {}, pageSize: 5, pageToken: "not-a-token" })).rejects.toBeInstanceOf(InvalidPageTokenError);
        await expect(store.listPolicyRevisions("x", 5, "bm9wZQ")).rejects.toBeInstanceOf(InvalidPageTokenError);
      });
    });

    describe("policy revisions", () => {
      it("a policy revision reads back field for field and latestPolicyRevision is the highest version of its own scope", async () => {
        const s = sandbox();
        const loaded = policyRevision(s.id, 2, { status: 2, loadedAt: at(9_999), loadError: "" });
        await write(store, async (tx) => {
          await tx.insertSandbox(s);
          expect(await tx.latestPolicyRevision(s.id)).toBeUndefined();
          await tx.insertPolicyRevision(policyRevision(s.id, 1));
          await tx.insertPolicyRevision(loaded);
          await tx.insertPolicyRevision(policyRevision("", 9));
        });
        expect(await store.policyRevision(s.id, 2)).toEqual(loaded);
        expect(await store.policyRevision(s.id, 3)).toBeUndefined();
        expect(await write(store, (tx) => tx.policyRevision(s.id, 1))).toEqual(policyRevision(s.id, 1));
        expect(await write(store, (tx) => tx.latestPolicyRevision(s.id))).toEqual(loaded);
        expect((await write(store, (tx) => tx.latestPolicyRevision("")))?.version).toBe(9);
        await expect(write(store, (tx) => tx.insertPolicyRevision(policyRevision(s.id, 2)))).rejects.toBeInstanceOf(StoreConflictError);
      });

      it("setPolicyStatus sets status, load error and load time of one revision only", async () => {
        await write(store, async (tx) => {
          await tx.insertPolicyRevision(policyRevision("sb", 1));
          await tx.insertPolicyRevision(policyRevision("sb", 2));
        });
        await write(store, (tx) => tx.setPolicyStatus("sb", 1, 3, "parse error", at(42)));
        expect(await store.policyRevision("sb", 1)).toEqual(policyRevision("sb", 1, { status: 3, loadError: "parse error", loadedAt: at(42) }));
        expect(await store.policyRevision("sb", 2)).toEqual(policyRevision("sb", 2));
        await write(store, (tx) => tx.setPolicyStatus("sb", 1, 4, "", undefined));
        expect(await store.policyRevision("sb", 1)).toEqual(policyRevision("sb", 1, { status: 4 }));
      });

      it("listPolicyRevisions goes newest first and pages with tokens", async () => {
        await write(store, async (tx) => {
          for (const v of [3, 1, 5, 2, 4]) await tx.insertPolicyRevision(policyRevision("sb", v));
          await tx.insertPolicyRevision(policyRevision("other", 6));
        });
        const versions: number[][] = [];
        let token = "";
        do {
          const page = await store.listPolicyRevisions("sb", 2, token);
          versions.push(page.items.map((r) => r.version));
          token = page.nextPageToken;
        } while (token !== "");
        expect(versions).toEqual([[5, 4], [3, 2], [1]]);
        expect((await store.listPolicyRevisions("sb", 10, "")).items[0]).toEqual(policyRevision("sb", 5));
        expect(await store.listPolicyRevisions("none", 10, "")).toEqual({ items: [], nextPageToken: "" });
      });
    });

    describe("settings", () => {
      it("settings are put, overwritten and deleted per scope and listed by key", async () => {
        await write(store, async (tx) => {
          await tx.putSetting(setting("sb", "zeta", 1));
          await tx.putSetting(setting("sb", "alpha", 2));
          await tx.putSetting(setting("", "alpha", 3));
        });
        expect(await store.settings("sb")).toEqual([setting("sb", "alpha", 2), setting("sb", "zeta", 1)]);
        await write(store, async (tx) => {
          await tx.putSetting(setting("sb", "alpha", 0, 255));
          await tx.deleteSetting("sb", "zeta");
          await tx.deleteSetting("sb", "never-set");
          expect(await tx.settings("sb")).toEqual([setting("sb", "alpha", 0, 255)]);
        });
        expect(await store.settings("sb")).toEqual([setting("sb", "alpha", 0, 255)]);
        expect(await store.settings("")).toEqual([setting("", "alpha", 3)]);
        expect(await store.settings("nobody")).toEqual([]);
      });

      it("the global settings revision starts at 0 and stores 64-bit values exactly", async () => {
        expect(await store.globalSettingsRevision()).toBe(0n);
        await write(store, async (tx) => {
          expect(await tx.globalSettingsRevision()).toBe(0n);
          await tx.setGlobalSettingsRevision(MAX_INT64);
          expect(await tx.globalSettingsRevision()).toBe(MAX_INT64);
        });
        expect(await store.globalSettingsRevision()).toBe(MAX_INT64);
      });
    });

    describe("idempotency", () => {
      it("an idempotency record is create-only: a second insert is a StoreConflictError and the first record stays", async () => {
        const first = idempotency("sb", "key-1");
        await write(store, (tx) => tx.insertIdempotency(first));
        await expect(write(store, (tx) => tx.insertIdempotency(idempotency("sb", "key-1", { fingerprint: "other" })))).rejects.toBeInstanceOf(StoreConflictError);
        expect(await write(store, (tx) => tx.idempotency("sb", "key-1"))).toEqual(first);
        expect(await write(store, (tx) => tx.idempotency("sb", "key-2"))).toBeUndefined();
        await write(store, (tx) => tx.insertIdempotency(idempotency("other-sb", "key-1")));
      });

      it("a sandbox read with an idempotency key answers that key as a read after it would: present, absent, then inserted", async () => {
        const s = sandbox();
        await write(store, (tx) => tx.insertSandbox(s));
        const first = idempotency(s.id, "present");
        await write(store, (tx) => tx.insertIdempotency(first));
        await write(store, async (tx) => {
          expect((await tx.sandboxByName(s.workspace, s.name, "present"))?.id).toBe(s.id);
          expect(await tx.idempotency(s.id, "present")).toEqual(first);
          expect(await tx.sandboxByName(s.workspace, s.name, "absent")).toBeDefined();
          expect(await tx.idempotency(s.id, "absent")).toBeUndefined();
          await tx.insertIdempotency(idempotency(s.id, "absent"));
          // Read again, it is the record this transaction inserted.
          expect((await tx.idempotency(s.id, "absent"))?.key).toBe("absent");
        });
        expect((await write(store, (tx) => tx.idempotency(s.id, "absent")))?.sandboxId).toBe(s.id);
        expect(await write(store, (tx) => tx.sandboxByName(s.workspace, "missing", "present"))).toBeUndefined();
      });
    });

    describe("operations", () => {
      it("an operation reads back field for field and a duplicate id is a StoreConflictError", async () => {
        const done = operation("sb", { target: bytes(0, 7, 255), state: APPLIED, outcome: 1, completedAt: at(5), attemptCount: 3, sanitizedError: "ünïcode", rowVersion: 41, dimension: "settings", component: 2 });
        const pending = operation("sb", { target: bytes() });
        await write(store, async (tx) => {
          await tx.insertOperation(done);
          await tx.insertOperation(pending);
          expect(await tx.operation(done.id)).toEqual(done);
        });
        expect(await store.operation(done.id)).toEqual(done);
        expect(await store.operation(pending.id)).toEqual(pending);
        expect(await store.operation("missing")).toBeUndefined();
        await expect(write(store, (tx) => tx.insertOperation({ ...pending, state: APPLIED }))).rejects.toBeInstanceOf(StoreConflictError);
        expect(await store.operation(pending.id)).toEqual(pending);
      });

      it("updateOperation is a compare-and-set: a stale rowVersion changes nothing, a current one patches and bumps rowVersion", async () => {
        const op = operation("sb", { rowVersion: 5, target: bytes(1) });
        await write(store, (tx) => tx.insertOperation(op));
        expect(await write(store, (tx) => tx.updateOperation(op.id, 4, { state: APPLIED }))).toBeUndefined();
        expect(await store.operation(op.id)).toEqual(op);
        const patch = { state: SUPERSEDED, outcome: 3, sanitizedError: "newer", completedAt: at(600), attemptCount: 2, nextAttemptAt: at(700), target: bytes(9, 9) };
        const before = Date.now();
        const updated = await write(store, (tx) => tx.updateOperation(op.id, 5, patch));
        expect(updated).toEqual({ ...op, ...patch, rowVersion: 6, updatedAt: updated?.updatedAt });
        expect(updated!.updatedAt.getTime()).toBeGreaterThanOrEqual(before - 1);
        expect(await store.operation(op.id)).toEqual(updated);
        const cleared = await write(store, (tx) => tx.updateOperation(op.id, 6, { target: null }));
        expect(cleared?.target).toBeUndefined();
        expect(cleared?.rowVersion).toBe(7);
        expect(await write(store, (tx) => tx.updateOperation("missing", 1, { state: APPLIED }))).toBeUndefined();
      });

      it("of two compare-and-sets racing on one operation exactly one wins", async () => {
        const op = operation("sb");
        await write(store, (tx) => tx.insertOperation(op));
        const results = await Promise.all(
          [APPLIED, SUPERSEDED].map((state) => write(store, (tx) => tx.updateOperation(op.id, 1, { state }))),
        );
        expect(results.filter((r) => r !== undefined)).toHaveLength(1);
        expect((await store.operation(op.id))?.rowVersion).toBe(2);
      });

      it("pendingOperations lists PENDING operations of one sandbox, optionally of one dimension, oldest first", async () => {
        const ops = [
          operation("sb", { createdAt: at(30), dimension: "settings" }),
          operation("sb", { createdAt: at(10) }),
          operation("sb", { createdAt: at(20), state: APPLIED }),
          operation("sb", { createdAt: at(40) }),
          operation("other", { createdAt: at(5) }),
        ];
        await write(store, async (tx) => {
          for (const o of ops) await tx.insertOperation(o);
          expect((await tx.pendingOperations("sb")).map((o) => o.id)).toEqual([ops[1]!.id, ops[0]!.id, ops[3]!.id]);
          expect((await tx.pendingOperations("sb", "policy")).map((o) => o.id)).toEqual([ops[1]!.id, ops[3]!.id]);
          expect(await tx.pendingOperations("sb", "settings")).toEqual([ops[0]]);
          expect(await tx.pendingOperations("nobody")).toEqual([]);
        });
      });

      it("operationsOfSandbox lists a sandbox's operations newest first, at most limit", async () => {
        const ops = [10, 30, 20, 40].map((t) => operation("sb", { createdAt: at(t), state: t === 20 ? APPLIED : PENDING }));
        await write(store, async (tx) => {
          for (const o of [...ops, operation("other", { createdAt: at(50) })]) await tx.insertOperation(o);
        });
        expect((await store.operationsOfSandbox("sb", 10)).map((o) => o.createdAt)).toEqual([at(40), at(30), at(20), at(10)]);
        expect((await store.operationsOfSandbox("sb", 2)).map((o) => o.id)).toEqual([ops[3]!.id, ops[1]!.id]);
        expect(await store.operationsOfSandbox("sb", 0)).toEqual([]);
      });

      it("listOperationsOfSandbox pages a sandbox's operations newest first, ties broken by id, and rejects a foreign token", async () => {
        const ops = [10, 30, 20, 30, 40].map((t) => operation("sb", { createdAt: at(t) }));
        await write(store, async (tx) => {
          for (const o of [...ops, operation("other", { createdAt: at(50) })]) await tx.insertOperation(o);
        });
        const seen: string[] = [];
        let token = "";
        let pages = 0;
        do {
          const page = await store.listOperationsOfSandbox("sb", 2, token);
          seen.push(...page.items.map((o) => o.id));
          token = page.nextPageToken;
          pages++;
        } while (token !== "");
        const newestFirst = [...ops].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? 1 : -1)).map((o) => o.id);
        expect(seen).toEqual(newestFirst);
        expect(pages).toBe(3);
        expect((await store.listOperationsOfSandbox("sb", 10, "")).nextPageToken).toBe("");
        expect(await store.listOperationsOfSandbox("none", 10, "")).toEqual({ items: [], nextPageToken: "" });
        await expect(store.listOperationsOfSandbox("sb", 5, "bm9wZQ")).rejects.toBeInstanceOf(InvalidPageTokenError);
      });

      it("dueOperations returns PENDING operations whose nextAttemptAt has come, oldest first, at most limit; countPending counts PENDING", async () => {
        const now = at(1_000);
        const ops = [
          operation("a", { createdAt: at(30), nextAttemptAt: at(100) }),
          operation("b", { createdAt: at(10), nextAttemptAt: at(900) }),
          operation("c", { createdAt: at(20), nextAttemptAt: now }),
          operation("d", { createdAt: at(5), nextAttemptAt: at(1_001) }),
          operation("e", { createdAt: at(1), nextAttemptAt: at(50), state: APPLIED }),
        ];
        expect(await store.countPending()).toBe(0);
        await write(store, async (tx) => {
          for (const o of ops) await tx.insertOperation(o);
        });
        expect((await store.dueOperations(now, 10)).map((o) => o.sandboxId)).toEqual(["b", "c", "a"]);
        expect((await store.dueOperations(now, 2)).map((o) => o.sandboxId)).toEqual(["b", "c"]);
        expect(await store.dueOperations(at(0), 10)).toEqual([]);
        expect(await store.dueOperations(now, 1)).toEqual([ops[1]]);
        expect(await store.countPending()).toBe(4);
        await write(store, (tx) => tx.updateOperation(ops[0]!.id, 1, { state: APPLIED }));
        expect(await store.countPending()).toBe(3);
      });
    });

    describe("providers", () => {
      it("a provider reads back field for field and a duplicate (workspace, name) is a StoreConflictError", async () => {
        const p = provider();
        await write(store, (tx) => tx.insertProvider(p));
        expect(await store.providerByName(p.workspace, p.name)).toEqual(p);
        expect(await write(store, (tx) => tx.providerByName(p.workspace, p.name))).toEqual(p);
        expect(await store.providerByName("ws-b", p.name)).toBeUndefined();
        await expect(write(store, (tx) => tx.insertProvider(provider({ name: p.name, type: "x" })))).rejects.toBeInstanceOf(StoreConflictError);
        expect(await store.providerByName(p.workspace, p.name)).toEqual(p);
        await write(store, (tx) => tx.insertProvider(provider({ workspace: "ws-b", name: p.name, values: [] })));
        expect((await store.providerByName("ws-b", p.name))?.values).toEqual([]);
      });

      it("updateProvider replaces type and values, bumps resourceVersion and returns the stored record", async () => {
        const p = provider();
        await write(store, (tx) => tx.insertProvider(p));
        const values = [{ name: "TOKEN", value: "v2", secret: true }];
        const updated = await write(store, (tx) => tx.updateProvider(p.id, { values }));
        expect(updated).toEqual({ ...p, values, resourceVersion: p.resourceVersion + 1n });
        const retyped = await write(store, (tx) => tx.updateProvider(p.id, { type: "gitlab" }));
        expect(retyped).toEqual({ ...updated, type: "gitlab", resourceVersion: p.resourceVersion + 2n });
        expect(await store.providerByName(p.workspace, p.name)).toEqual(retyped);
        await expect(write(store, (tx) => tx.updateProvider("missing", { type: "x" }))).rejects.toThrow();
      });

      it("sandboxesWithProvider finds the sandboxes of one workspace that attach the provider, in any phase", async () => {
        const a = sandbox({ providers: ["gh", "ai"], phase: 5 });
        const b = sandbox({ providers: ["gh"] });
        await insertSandboxes(store, a, b, sandbox({ providers: ["ai"] }), sandbox({ providers: [] }), sandbox({ workspace: "ws-b", providers: ["gh"] }), sandbox({ providers: ["ghx", "g"] }));
        const found = await write(store, (tx) => tx.sandboxesWithProvider("ws-a", "gh"));
        expect(found.map((s) => s.id).sort()).toEqual([a.id, b.id].sort());
        expect(found.find((s) => s.id === a.id)).toEqual(a);
        expect(await write(store, (tx) => tx.sandboxesWithProvider("ws-a", "none"))).toEqual([]);
      });
    });

    defineTransactionTests(() => harness);
    defineClusterTests(() => harness);
    defineEnforcementTests(() => harness);
    defineSharedDatabaseTests(() => harness);
    defineRolloutTests(() => harness);
  });
}
