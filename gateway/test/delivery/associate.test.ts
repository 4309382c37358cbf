// Association (delivery/associate.ts) with replicas: a snapshot whose global part is a moment
// old (the desired cache trusts the global versions it last confirmed for up to a second) must
// not re-target an operation that a newer global part was committed under, or that operation
// would be acknowledged against the older one. Association reports the snapshot behind instead,
// the cache reads the versions again, and the next check tells every session.

import { describe, expect, it } from "vitest";
import type { OperationRecord } from "../../src/store/store.js";
import { createDesiredCache } from "../../src/delivery/desired-cache.js";
import { associate } from "../../src/delivery/associate.js";
import { revisionBytes } from "../../src/delivery/revisions.js";
import { currentRevision } from "../../src/model/snapshot.js";
import type { GatewayDeps } from "../../src/rpc/deps.js";
import { operation, policyRevision } from "../store/store-fixtures.js";
import { policyBytes, storeWithSandbox } from "./desired-fixtures.js";

async function setup() {
  const { store, sb } = await storeWithSandbox((tx) => tx.insertPolicyRevision(policyRevision("", 1, { policy: policyBytes("global-one.example.com") })));
  const announced: OperationRecord[] = [];
  const counter = { reads: 0 };
  // The store as association sees it: its transactions count their reads of the global versions.
  const counting = Object.create(store, {
    transaction: { value: (fn: Parameters<typeof store.transaction>[0]) => store.transaction((tx) => fn(Object.create(tx, { globalVersions: { value: () => (counter.reads++, tx.globalVersions()) } }))) },
  }) as typeof store;
  const deps = { store: counting, transitions: { announce: (ops: readonly OperationRecord[]) => announced.push(...ops) } } as unknown as GatewayDeps;
  // A target the sandbox's operations were committed under before its policy version 1.
  const older = revisionBytes(await currentRevision(store, { ...sb, policyVersion: 0 }, 1));
  return { store, sb, deps, announced, counter, older };
}

describe("association with replicas", () => {
  it("does not re-target an operation to a snapshot whose global part is older than what is committed: it reports the snapshot behind, and the next snapshot is current", async () => {
    const { store, sb, deps, announced, counter } = await setup();
    const cache = createDesiredCache(store, { shared: true, now: () => 1_000_000 });
    const stale = await cache.snapshot(sb);
    expect(stale.builtOn).toEqual({ policyVersion: 1, settingsRevision: 0n });
    // Another replica commits global policy 2, then an update of this sandbox's policy dimension
    // whose target names global policy 2. Nothing tells this replica, whose trust has not run out.
    await store.transaction((tx) => tx.insertPolicyRevision(policyRevision("", 2, { policy: policyBytes("global-two.example.com") })));
    const target = revisionBytes(await currentRevision(store, sb, 2));
    const op = operation(sb.id, { desiredRevision: 1n, target });
    await store.transaction((tx) => tx.insertOperation(op));
    expect((await cache.snapshot(sb)).builtOn?.policyVersion).toBe(1);

    expect(await associate(deps, sb.id, stale)).toEqual({ waiting: false, behind: { policyVersion: 2, settingsRevision: 0n } });
    expect((await store.operation(op.id))!.target).toEqual(target);
    expect(announced).toEqual([]);
    expect(counter.reads).toBe(1);

    cache.behind({ policyVersion: 2, settingsRevision: 0n });
    const fresh = await cache.snapshot(sb);
    expect(fresh.builtOn?.policyVersion).toBe(2);
    expect(fresh.revisionBytes).toEqual(target);
    expect(await associate(deps, sb.id, fresh)).toEqual({ waiting: true, behind: undefined });
    // Sessions delivered before still hold global policy 1: the next check says so.
    expect(await cache.checkGlobals()).toBe(true);
    await store.close();
  });

  it("re-targets an operation to a snapshot that is current, reading the global versions once for all of the sandbox's operations", async () => {
    const { store, sb, deps, announced, counter, older } = await setup();
    const cache = createDesiredCache(store, { shared: true, now: () => 1_000_000 });
    const desired = await cache.snapshot(sb);
    // Two operations committed against an older target.
    const ops = [operation(sb.id, { desiredRevision: 1n, target: older }), operation(sb.id, { dimension: "settings", component: 2, desiredRevision: 0n, target: older })];
    await store.transaction(async (tx) => {
      for (const op of ops) await tx.insertOperation(op);
    });
    expect(await associate(deps, sb.id, desired)).toEqual({ waiting: true, behind: undefined });
    for (const op of ops) expect((await store.operation(op.id))!.target).toEqual(desired.revisionBytes);
    expect(announced.map((o) => o.id).sort()).toEqual(ops.map((o) => o.id).sort());
    expect(counter.reads).toBe(1);
    await store.close();
  });

  it("alone on its database, a gateway's snapshots carry no global versions to check, and association reads none", async () => {
    const { store, sb, deps, counter, older } = await setup();
    const desired = await createDesiredCache(store, { shared: false }).snapshot(sb);
    expect(desired.builtOn).toBeUndefined();
    const op = operation(sb.id, { desiredRevision: 1n, target: older });
    await store.transaction((tx) => tx.insertOperation(op));
    expect(await associate(deps, sb.id, desired)).toEqual({ waiting: true, behind: undefined });
    expect((await store.operation(op.id))!.target).toEqual(desired.revisionBytes);
    expect(counter.reads).toBe(0);
    await store.close();
  });

  it("a read of the global versions that was in flight when the snapshot was found behind cannot bring the older global part back", async () => {
    const { store, sb } = await setup();
    let clock = 1_000_000;
    // The store as the cache sees it: the next read of the global versions is held until released.
    let hold: { release: () => void } | undefined;
    const held = Object.create(store, {
      globalVersions: {
        value: async () => {
          const v = await store.globalVersions();
          if (hold) await new Promise<void>((resolve) => (hold!.release = resolve));
          return v;
        },
      },
    }) as typeof store;
    const cache = createDesiredCache(held, { shared: true, now: () => clock });
    expect((await cache.snapshot(sb)).builtOn?.policyVersion).toBe(1);
    // The trust has run out: the next snapshot reads the versions, and that read is slow.
    clock += 5_000;
    hold = { release: () => {} };
    const slow = cache.snapshot(sb);
    await new Promise((resolve) => setTimeout(resolve, 10));
    // Meanwhile another replica commits global policy 2, and an association finds it.
    await store.transaction((tx) => tx.insertPolicyRevision(policyRevision("", 2, { policy: policyBytes("global-two.example.com") })));
    cache.behind({ policyVersion: 2, settingsRevision: 0n });
    const release = hold.release;
    hold = undefined;
    release();
    // The slow read saw version 1; it must not count as a confirmation of the kept part.
    expect((await slow).builtOn?.policyVersion).toBe(1);
    expect((await cache.snapshot(sb)).builtOn?.policyVersion).toBe(2);
    expect(await cache.checkGlobals()).toBe(true);
    await store.close();
  });

  it("finding a snapshot behind versions that what is kept has already reached changes nothing", async () => {
    const { store, sb } = await setup();
    let reads = 0;
    const counting = Object.create(store, { globalVersions: { value: () => (reads++, store.globalVersions()) } }) as typeof store;
    const cache = createDesiredCache(counting, { shared: true, now: () => 1_000_000 });
    await cache.snapshot(sb);
    const before = reads;
    cache.behind({ policyVersion: 1, settingsRevision: 0n });
    expect((await cache.snapshot(sb)).builtOn?.policyVersion).toBe(1);
    expect(reads).toBe(before);
    expect(await cache.checkGlobals()).toBe(false);
    await store.close();
  });
});
