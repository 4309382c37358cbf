// The desired-state cache (delivery/desired-cache.ts) against the store it stands in front of:
// after every kind of commit, what it hands out equals a snapshot built from the store, alone on
// the database (the global part invalidated by our own commits) and shared with other writers
// (the global part invalidated by their notifications, or re-read once its trust has run out);
// and nothing a transaction wrote is kept from inside it, so a rolled-back write never shows.

import { describe, expect, it } from "vitest";
import { create, equals, toBinary } from "@bufbuild/protobuf";
import { ConfigSnapshotRevisionSchema, SandboxConfigSnapshotSchema, SettingValueSchema } from "openshell-config/raw";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { SandboxRecord, Store } from "../../src/store/store.js";
import { SHARED_GLOBALS_TRUST_MS, createDesiredCache } from "../../src/delivery/desired-cache.js";
import { buildSnapshot, currentRevision } from "../../src/model/snapshot.js";
import { globalPolicyVersion } from "../../src/rpc/sandbox-config.js";
import { policyRevision, sandbox } from "../store/store-fixtures.js";
import { policyBytes, storeWithSandbox } from "./desired-fixtures.js";

const value = (s: string) => toBinary(SettingValueSchema, create(SettingValueSchema, { value: { case: "stringValue", value: s } }));

async function setup() {
  const { store, sb } = await storeWithSandbox();
  return { store, id: sb.id };
}

async function expectFresh(store: Store, cache: ReturnType<typeof createDesiredCache>, id: string) {
  const sb = (await store.sandboxById(id))!;
  const fromStore = await buildSnapshot(store, sb, await globalPolicyVersion({ store }));
  const kept = await cache.snapshot(sb);
  expect(equals(SandboxConfigSnapshotSchema, kept.snap, fromStore)).toBe(true);
  expect(toBinary(ConfigSnapshotRevisionSchema, kept.revision)).toEqual(kept.revisionBytes);
  expect(kept.sizeBound).toBeGreaterThanOrEqual(toBinary(SandboxConfigSnapshotSchema, fromStore).length);
  return sb;
}

/** Commits as another writer would: the cache learns of it only through what it reads. */
const commits: [string, (store: Store, sb: SandboxRecord) => Promise<void>][] = [
  ["a sandbox setting", (store, sb) => store.transaction(async (tx) => {
    await tx.putSetting({ sandboxId: sb.id, key: "mode", value: value("strict") });
    await tx.updateSandbox(sb.id, { settingsRevision: sb.settingsRevision + 1n });
  })],
  ["a sandbox policy", (store, sb) => store.transaction(async (tx) => {
    await tx.insertPolicyRevision(policyRevision(sb.id, sb.policyVersion + 1, { policy: policyBytes("two.example.com") }));
    await tx.updateSandbox(sb.id, { policyVersion: sb.policyVersion + 1, policyHash: `sha256:v${sb.policyVersion + 1}` });
  })],
  ["a global setting", (store) => store.transaction(async (tx) => {
    await tx.putSetting({ sandboxId: "", key: "mode", value: value("global") });
    await tx.setGlobalSettingsRevision((await tx.globalSettingsRevision()) + 1n);
  })],
  ["a global policy", (store) => store.transaction(async (tx) => {
    await tx.insertPolicyRevision(policyRevision("", 1, { policy: policyBytes("global.example.com") }));
  })],
  ["another sandbox setting under the global one", (store, sb) => store.transaction(async (tx) => {
    await tx.putSetting({ sandboxId: sb.id, key: "other", value: value("x") });
    await tx.updateSandbox(sb.id, { settingsRevision: sb.settingsRevision + 1n });
  })],
];

describe("desired-state cache", () => {
  for (const [mode, shared] of [["alone on its database", false], ["shared, told by a notification", true], ["shared, the notification lost", true]] as const) {
    it(`equals the store after every kind of commit (${mode})`, async () => {
      const { store, id } = await setup();
      let clock = 1_000_000;
      const cache = createDesiredCache(store, { shared, now: () => clock });
      let sb = await expectFresh(store, cache, id);
      for (const [what, commit] of commits) {
        await commit(store, sb);
        // Alone on its database, the gateway invalidates the global part after its own global
        // commits; with replicas, another's notification does; lost, the trust runs out.
        if (what.startsWith("a global")) {
          if (mode === "shared, the notification lost") clock += SHARED_GLOBALS_TRUST_MS + 1;
          else cache.invalidateGlobal();
        }
        sb = await expectFresh(store, cache, id);
        const inTx = await store.transaction(async (tx) => {
          const row = (await tx.sandboxById(id))!;
          return { kept: await cache.revision(tx, row), read: await currentRevision(tx, row, (await tx.globalVersions()).policyVersion) };
        });
        expect(equals(ConfigSnapshotRevisionSchema, inTx.kept, inTx.read), what).toBe(true);
      }
      await store.close();
    });
  }

  it("with replicas, hands out the global part it last confirmed until its trust runs out, and then what is committed", async () => {
    const { store, id } = await setup();
    let clock = 1_000_000;
    let versionReads = 0;
    const counting: Store = Object.create(store, {
      globalVersions: { value: () => (versionReads++, store.globalVersions()) },
    });
    const cache = createDesiredCache(counting, { shared: true, now: () => clock });
    const sb = await expectFresh(store, cache, id);
    const before = await cache.snapshot(sb);
    // Deliveries within the trust read no global version.
    const reads = versionReads;
    await cache.snapshot(sb);
    expect(versionReads).toBe(reads);
    // Another replica commits a global policy; its notification never arrives.
    await commits.find(([w]) => w === "a global policy")![1](store, sb);
    clock += SHARED_GLOBALS_TRUST_MS;
    const stale = await cache.snapshot(sb);
    expect(equals(ConfigSnapshotRevisionSchema, stale.revision, before.revision)).toBe(true);
    clock += 1;
    const fresh = await expectFresh(store, cache, id);
    expect(fresh.id).toBe(id);
    expect(equals(ConfigSnapshotRevisionSchema, (await cache.snapshot(sb)).revision, before.revision)).toBe(false);
    expect(versionReads).toBeGreaterThan(reads);
    await store.close();
  });

  it("with replicas, checkGlobals says whether another writer changed the global part, and forgets it if so", async () => {
    const { store, id } = await setup();
    const cache = createDesiredCache(store, { shared: true, now: () => 1_000_000 });
    const sb = await expectFresh(store, cache, id);
    expect(await cache.checkGlobals()).toBe(false);
    await commits.find(([w]) => w === "a global setting")![1](store, sb);
    expect(await cache.checkGlobals()).toBe(true);
    // Forgotten: the next delivery reads what is committed, though the clock stood still.
    await expectFresh(store, cache, id);
    expect(await cache.checkGlobals()).toBe(false);
    // Alone on its database, the gateway knows its own commits: there is nothing to check.
    const alone = createDesiredCache(store, { shared: false });
    await expectFresh(store, alone, id);
    await commits.find(([w]) => w === "a global policy")![1](store, sb);
    expect(await alone.checkGlobals()).toBe(false);
    await store.close();
  });

  it("with replicas, a delivery that takes in a global change nobody announced makes the next check report it, so every session hears of it", async () => {
    const { store, id } = await setup();
    let clock = 1_000_000;
    const cache = createDesiredCache(store, { shared: true, now: () => clock });
    const sb = await expectFresh(store, cache, id);
    await commits.find(([w]) => w === "a global policy")![1](store, sb);
    clock += SHARED_GLOBALS_TRUST_MS + 1;
    // This delivery re-reads the versions and so holds the new global part ...
    await expectFresh(store, cache, id);
    // ... which sessions delivered before it do not: the check must not find "nothing moved".
    expect(await cache.checkGlobals()).toBe(true);
    expect(await cache.checkGlobals()).toBe(false);
    await store.close();
  });

  it("with replicas, a read of the global versions that finishes after a newer one is neither kept nor handed out", async () => {
    const { store, id } = await setup();
    const sb = (await store.sandboxById(id))!;
    await commits.find(([w]) => w === "a global policy")![1](store, sb);
    await store.transaction(async (tx) => {
      await tx.insertPolicyRevision(policyRevision("", 2, { policy: policyBytes("global-two.example.com") }));
    });
    // The first read started before version 2 was committed and answers last.
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    let calls = 0;
    const racing: Store = Object.create(store, {
      globalVersions: {
        value: async () => {
          calls++;
          if (calls === 1) {
            await slow;
            return { policyVersion: 1, settingsRevision: 0n };
          }
          return store.globalVersions();
        },
      },
    });
    const cache = createDesiredCache(racing, { shared: true, now: () => 1_000_000 });
    const first = cache.snapshot(sb);
    const second = await cache.snapshot(sb);
    release();
    const late = await first;
    expect(equals(ConfigSnapshotRevisionSchema, late.revision, second.revision)).toBe(true);
    expect(equals(ConfigSnapshotRevisionSchema, (await cache.snapshot(sb)).revision, second.revision)).toBe(true);
    await store.close();
  });

  it("targets what a transaction wrote while it is open, and keeps nothing of it when it rolls back", async () => {
    const { store, id } = await setup();
    const cache = createDesiredCache(store, { shared: false });
    const sb = await expectFresh(store, cache, id);
    await expect(
      store.transaction(async (tx) => {
        await tx.putSetting({ sandboxId: id, key: "mode", value: value("never") });
        const row = await tx.updateSandbox(id, { settingsRevision: sb.settingsRevision + 1n });
        const kept = await cache.revision(tx, row);
        expect(equals(ConfigSnapshotRevisionSchema, kept, await currentRevision(tx, row, 0))).toBe(true);
        throw new Error("roll back");
      }),
    ).rejects.toThrow("roll back");
    // The same settings revision, committed with other contents, is what the cache hands out.
    await store.transaction(async (tx) => {
      await tx.putSetting({ sandboxId: id, key: "mode", value: value("committed") });
      await tx.updateSandbox(id, { settingsRevision: sb.settingsRevision + 1n });
    });
    const after = await expectFresh(store, cache, id);
    expect(after.settingsRevision).toBe(sb.settingsRevision + 1n);
    await store.close();
  });

  it("reads and decodes a policy shared by many sandboxes once (by its hash), and a different one on its own", async () => {
    const store = openSqliteStore(":memory:");
    const same = Array.from({ length: 3 }, () => sandbox({ policyVersion: 1, policyHash: "sha256:shared", settingsRevision: 0n, providers: [] }));
    const other = sandbox({ policyVersion: 2, policyHash: "sha256:other", settingsRevision: 0n, providers: [] });
    await store.transaction(async (tx) => {
      for (const sb of same) {
        await tx.insertSandbox(sb);
        await tx.insertPolicyRevision(policyRevision(sb.id, 1, { policy: policyBytes("shared.example.com"), hash: "sha256:shared" }));
      }
      await tx.insertSandbox(other);
      await tx.insertPolicyRevision(policyRevision(other.id, 1, { policy: policyBytes("shared.example.com"), hash: "sha256:shared" }));
      await tx.insertPolicyRevision(policyRevision(other.id, 2, { policy: policyBytes("other.example.com"), hash: "sha256:other" }));
    });
    let reads = 0;
    const counting: Store = Object.create(store, {
      policyRevision: { value: (id: string, version: number) => (reads++, store.policyRevision(id, version)) },
    });
    const cache = createDesiredCache(counting, { shared: false });
    for (const sb of [...same, other]) {
      const fromStore = await buildSnapshot(store, sb, 0);
      // Bootstraps keep no snapshot: only the shared policy is kept.
      const built = await cache.snapshot(sb, false);
      expect(equals(SandboxConfigSnapshotSchema, built.snap, fromStore)).toBe(true);
    }
    expect(reads).toBe(2);
    await store.close();
  });
});
