// Shared rollout records in the store suite (issue 31): a rollout reads back field for field,
// bodies only when asked for, create-only inserts, compare-and-set updates that apply only the
// patched fields, newest-first keyset listing with filters, and rows kept across a restart.
// Registered by defineStoreSuite (store-suite.ts) inside its describe.

import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { InvalidPageTokenError } from "../../src/store/codec.js";
import { StoreConflictError, type RolloutRow, type Store } from "../../src/store/store.js";
import { BEYOND_DOUBLE, at, bytes } from "./store-fixtures.js";
import type { StoreHarness } from "./store-suite.js";

const RUNNING = 2;
const PAUSED = 3;
const SUCCEEDED = 4;

export function rollout(over: Partial<RolloutRow> = {}): RolloutRow {
  return {
    workspace: "ws-a",
    id: `ro-${randomUUID()}`,
    resourceVersion: 1n,
    createdBy: "alice@example.com",
    createdAt: at(1_000),
    updatedAt: at(1_000),
    labelSelector: "app=web,tier in (gold)",
    changeHash: "sha256:c0ffee",
    changeSummary: "network: allow api.example.com ✓",
    phase: RUNNING,
    summary: bytes(8, 3, 16, 0, 255),
    approvals: [
      { wave: 1, principal: "bob@example.com", at: at(2_001) },
      { wave: 0, principal: "carol", at: at(1_999) },
    ],
    lease: { holder: "driver-7f", principal: "alice@example.com", until: at(60_123) },
    requireDistinctApprover: true,
    request: bytes(0, 10, 0, 255, 128),
    state: JSON.stringify({ version: 2, waves: [["sb-1"], ["sb-2", "sb-3"]], note: "grüße" }),
    ...over,
  };
}

/** The row as a read without body returns it. */
function head(r: RolloutRow): RolloutRow {
  const { request: _request, state: _state, ...rest } = r;
  return rest;
}

const query = (over: Partial<Parameters<Store["listRollouts"]>[0]> = {}) => ({
  workspaces: undefined,
  phases: [],
  labelSelector: undefined,
  pageSize: 100,
  pageToken: "",
  ...over,
});

async function listAll(store: Store, over: Partial<Parameters<Store["listRollouts"]>[0]> = {}): Promise<RolloutRow[]> {
  const out: RolloutRow[] = [];
  let token = "";
  do {
    const page = await store.listRollouts(query({ ...over, pageToken: token }));
    out.push(...page.items);
    token = page.nextPageToken;
  } while (token !== "");
  return out;
}

export function defineRolloutTests(harness: () => StoreHarness): void {
  describe("shared rollout records", () => {
    it("a rollout reads back field for field, bodies, approvals in order and lease included", async () => {
      const { store } = harness();
      const full = rollout({ resourceVersion: BEYOND_DOUBLE });
      const bare = rollout({ labelSelector: "", approvals: [], lease: undefined, requireDistinctApprover: false, summary: bytes(), request: bytes(), state: "" });
      await store.insertRollout(full);
      await store.insertRollout(bare);
      expect(await store.rollout(full.workspace, full.id, true)).toEqual(full);
      expect(await store.rollout(bare.workspace, bare.id, true)).toEqual(bare);
      const read = await store.rollout(full.workspace, full.id, true);
      expect(typeof read?.resourceVersion).toBe("bigint");
      expect(read?.summary).toBeInstanceOf(Uint8Array);
      expect(read?.request).toBeInstanceOf(Uint8Array);
      expect(read?.lease?.until).toBeInstanceOf(Date);
    });

    it("a read without body has no request or state, and an unknown rollout reads as undefined", async () => {
      const { store } = harness();
      const r = rollout();
      await store.insertRollout(r);
      const read = await store.rollout(r.workspace, r.id, false);
      expect(read).toEqual(head(r));
      expect(read).not.toHaveProperty("request");
      expect(read).not.toHaveProperty("state");
      expect(await store.rollout(r.workspace, "missing", true)).toBeUndefined();
      expect(await store.rollout("ws-b", r.id, false)).toBeUndefined();
    });

    it("a second rollout with the same workspace and id is a StoreConflictError and the first stays; another workspace may reuse the id", async () => {
      const { store } = harness();
      const first = rollout();
      await store.insertRollout(first);
      await expect(store.insertRollout(rollout({ id: first.id, phase: SUCCEEDED }))).rejects.toBeInstanceOf(StoreConflictError);
      expect(await store.rollout(first.workspace, first.id, true)).toEqual(first);
      const elsewhere = rollout({ workspace: "ws-b", id: first.id });
      await store.insertRollout(elsewhere);
      expect(await store.rollout("ws-b", first.id, true)).toEqual(elsewhere);
    });

    it("updateRollout applies only the patched fields, bumps resourceVersion by one and returns the row without body", async () => {
      const { store } = harness();
      const r = rollout({ resourceVersion: BEYOND_DOUBLE });
      await store.insertRollout(r);
      const patch = { phase: PAUSED, summary: bytes(1, 2, 3), updatedAt: at(5_000), approvals: [{ wave: 2, principal: "dave", at: at(4_000) }] };
      const updated = await store.updateRollout(r.workspace, r.id, BEYOND_DOUBLE, patch);
      expect(updated).toEqual(head({ ...r, ...patch, resourceVersion: BEYOND_DOUBLE + 1n }));
      expect(updated).not.toHaveProperty("state");
      expect(await store.rollout(r.workspace, r.id, true)).toEqual({ ...r, ...patch, resourceVersion: BEYOND_DOUBLE + 1n });
      const lease = { holder: "driver-2", principal: "erin", until: at(90_000) };
      const again = await store.updateRollout(r.workspace, r.id, BEYOND_DOUBLE + 1n, { state: '{"v":3}', lease, updatedAt: at(6_000) });
      expect(again).toEqual(head({ ...r, ...patch, lease, updatedAt: at(6_000), resourceVersion: BEYOND_DOUBLE + 2n }));
      expect((await store.rollout(r.workspace, r.id, true))?.state).toBe('{"v":3}');
    });

    it("an update with a stale version, or of a missing rollout, changes nothing and returns undefined", async () => {
      const { store } = harness();
      const r = rollout();
      await store.insertRollout(r);
      expect(await store.updateRollout(r.workspace, r.id, 1n, { phase: PAUSED, updatedAt: at(2_000) })).toBeDefined();
      expect(await store.updateRollout(r.workspace, r.id, 1n, { phase: SUCCEEDED, updatedAt: at(3_000) })).toBeUndefined();
      expect(await store.updateRollout(r.workspace, "missing", 1n, { phase: SUCCEEDED, updatedAt: at(3_000) })).toBeUndefined();
      expect(await store.updateRollout("ws-b", r.id, 2n, { phase: SUCCEEDED, updatedAt: at(3_000) })).toBeUndefined();
      expect(await store.rollout(r.workspace, r.id, true)).toEqual({ ...r, phase: PAUSED, updatedAt: at(2_000), resourceVersion: 2n });
    });

    it("of concurrent updates expecting the same version exactly one wins", async () => {
      const { store } = harness();
      const r = rollout();
      await store.insertRollout(r);
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => store.updateRollout(r.workspace, r.id, 1n, { phase: 10 + i, updatedAt: at(2_000 + i) })),
      );
      const winners = results.filter((x) => x !== undefined);
      expect(winners).toHaveLength(1);
      expect(await store.rollout(r.workspace, r.id, false)).toEqual(winners[0]);
      expect(winners[0]?.resourceVersion).toBe(2n);
    });

    it("lease null clears the lease and an absent lease keeps it", async () => {
      const { store } = harness();
      const r = rollout();
      await store.insertRollout(r);
      const kept = await store.updateRollout(r.workspace, r.id, 1n, { phase: PAUSED, updatedAt: at(2_000) });
      expect(kept?.lease).toEqual(r.lease);
      const cleared = await store.updateRollout(r.workspace, r.id, 2n, { lease: null, updatedAt: at(3_000) });
      expect(cleared?.lease).toBeUndefined();
      expect((await store.rollout(r.workspace, r.id, true))?.lease).toBeUndefined();
    });

    it("listRollouts goes newest first, without bodies, and pages through equal creation times without loss or repeat", async () => {
      const { store } = harness();
      const rows: RolloutRow[] = [];
      for (let i = 0; i < 23; i++) {
        // Groups of equal createdAt across two workspaces, so ties are broken by workspace and id.
        rows.push(rollout({ workspace: i % 2 ? "ws-a" : "ws-b", id: `ro-${String(i).padStart(2, "0")}`, createdAt: at(1_000 * Math.floor(i / 5)) }));
      }
      for (const r of rows) await store.insertRollout(r);
      const expected = [...rows]
        .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.workspace < b.workspace ? 1 : a.workspace > b.workspace ? -1 : a.id < b.id ? 1 : -1))
        .map(head);
      const first = await store.listRollouts(query({ pageSize: 4 }));
      expect(first.items).toEqual(expected.slice(0, 4));
      expect(first.nextPageToken).not.toBe("");
      const paged = await listAll(store, { pageSize: 4 });
      expect(paged).toEqual(expected);
      for (const item of paged) {
        expect(item).not.toHaveProperty("request");
        expect(item).not.toHaveProperty("state");
      }
      const whole = await store.listRollouts(query({ pageSize: 23 }));
      expect(whole.items).toHaveLength(23);
      expect(whole.nextPageToken).toBe("");
    });

    it("listRollouts filters by workspaces, phases and exact label selector", async () => {
      const { store } = harness();
      const a = rollout({ workspace: "ws-a", phase: RUNNING, labelSelector: "app=web", createdAt: at(1) });
      const b = rollout({ workspace: "ws-b", phase: PAUSED, labelSelector: "app=web", createdAt: at(2) });
      const c = rollout({ workspace: "ws-c", phase: SUCCEEDED, labelSelector: "", createdAt: at(3) });
      const d = rollout({ workspace: "ws-a", phase: SUCCEEDED, labelSelector: "app=web,tier=gold", createdAt: at(4) });
      for (const r of [a, b, c, d]) await store.insertRollout(r);
      const ids = async (over: Partial<Parameters<Store["listRollouts"]>[0]>) => (await listAll(store, { pageSize: 1, ...over })).map((r) => r.id);
      expect(await ids({})).toEqual([d.id, c.id, b.id, a.id]);
      expect(await ids({ workspaces: ["ws-a", "ws-c"] })).toEqual([d.id, c.id, a.id]);
      expect(await ids({ workspaces: [] })).toEqual([]);
      expect(await ids({ phases: [SUCCEEDED, PAUSED] })).toEqual([d.id, c.id, b.id]);
      expect(await ids({ labelSelector: "app=web" })).toEqual([b.id, a.id]);
      expect(await ids({ labelSelector: "" })).toEqual([c.id]);
      expect(await ids({ workspaces: ["ws-a"], phases: [SUCCEEDED], labelSelector: "app=web,tier=gold" })).toEqual([d.id]);
      expect(await ids({ workspaces: ["ws-a"], phases: [PAUSED] })).toEqual([]);
    });

    it("listRollouts rejects a page token it did not issue, including another list's token", async () => {
      const { store } = harness();
      await store.insertRollout(rollout());
      await expect(store.listRollouts(query({ pageToken: "not-a-token" }))).rejects.toBeInstanceOf(InvalidPageTokenError);
      const sandboxToken = Buffer.from(JSON.stringify(["s", "ws-a", "x"])).toString("base64url");
      await expect(store.listRollouts(query({ pageToken: sandboxToken }))).rejects.toBeInstanceOf(InvalidPageTokenError);
    });

    it("rollouts survive a restart", async (ctx) => {
      const h = harness();
      if (!h.reopen) ctx.skip();
      const r = rollout({ resourceVersion: BEYOND_DOUBLE });
      const other = rollout({ workspace: "ws-b", lease: undefined, createdAt: at(9_000) });
      await h.store.insertRollout(r);
      await h.store.insertRollout(other);
      await h.store.close();
      const again = await h.reopen!();
      expect(await again.rollout(r.workspace, r.id, true)).toEqual(r);
      expect((await again.listRollouts(query())).items).toEqual([head(other), head(r)]);
      await again.close();
    });
  });
}
