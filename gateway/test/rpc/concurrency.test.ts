// Concurrent UpdateConfig calls on both backends: duplicates with one idempotency key commit once,
// different updates to one sandbox each get their own consecutive version (no lost update), and
// updates to many sandboxes do not interfere.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigUpdateOperationState as State, workspaceScope } from "openshell-config/raw";
import { startTestGateway, type Backend, type TestGateway } from "./harness.js";
import { createSandbox, policy, sandboxRecord } from "./fixtures.js";

const N = 20;

describe.each<Backend>(["sqlite", "postgres"])("concurrent updates (%s)", (backend) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(backend);
  });
  afterAll(() => gw.close());

  it(`${N} concurrent duplicates with one key commit one revision and one operation`, async () => {
    const sb = (await createSandbox(gw, "dupes")).metadata!;
    const client = gw.sdk();
    const send = () => client.updatePolicy({ sandbox: "dupes", idempotencyKey: "one-key", policy: policy({ dup: "dup.example.com" }) });
    const results = await Promise.all(Array.from({ length: N }, send));
    expect(new Set(results.map((r) => r.operation?.operationId)).size).toBe(1);
    expect(new Set(results.map((r) => r.policyVersion))).toEqual(new Set([2]));
    expect((await gw.store.listPolicyRevisions(sb.id, 100, "")).items.map((r) => r.version)).toEqual([2, 1]);
    expect(await gw.store.operationsOfSandbox(sb.id, 100)).toHaveLength(1);
    expect((await sandboxRecord(gw, "dupes")).resourceVersion).toBe(2n);
  });

  it(`${N} concurrent different policies to one sandbox get ${N} distinct consecutive versions`, async () => {
    const sb = (await createSandbox(gw, "racers")).metadata!;
    const client = gw.sdk();
    const results = await Promise.all(
      Array.from({ length: N }, (_, i) => client.updatePolicy({ sandbox: "racers", policy: policy({ [`r${i}`]: `r${i}.example.com` }) })),
    );
    const versions = results.map((r) => r.policyVersion).sort((a, b) => a - b);
    expect(versions).toEqual(Array.from({ length: N }, (_, i) => i + 2));

    // Every update is stored under the version it was told, with its own hash.
    const stored = (await gw.store.listPolicyRevisions(sb.id, 100, "")).items;
    expect(stored.map((r) => r.version)).toEqual(Array.from({ length: N + 1 }, (_, i) => N + 1 - i));
    for (const r of results) expect(stored.find((s) => s.version === r.policyVersion)?.hash).toBe(r.policyHash);
    expect(new Set(results.map((r) => r.policyHash)).size).toBe(N);

    // Only the newest remains pending; every older one was superseded by a newer commit.
    const ops = await gw.store.operationsOfSandbox(sb.id, 100);
    expect(ops).toHaveLength(N);
    const pending = ops.filter((op) => op.state === State.PENDING);
    expect(pending.map((op) => op.desiredRevision)).toEqual([BigInt(N + 1)]);
    expect(ops.filter((op) => op.state === State.SUPERSEDED)).toHaveLength(N - 1);
    const record = await sandboxRecord(gw, "racers");
    expect(record.policyVersion).toBe(N + 1);
    expect(record.resourceVersion).toBe(BigInt(N + 1));
  });

  it(`${N} concurrent different settings to one sandbox lose no update`, async () => {
    const sb = (await createSandbox(gw, "settings")).metadata!;
    const client = gw.sdk();
    const results = await Promise.all(Array.from({ length: N }, (_, i) => client.updateSettings({ sandbox: "settings", key: `key-${i}`, value: i })));
    expect(results.map((r) => r.settingsRevision).sort((a, b) => Number(a - b))).toEqual(Array.from({ length: N }, (_, i) => BigInt(i + 1)));
    const stored = await gw.store.settings(sb.id);
    expect(stored.map((s) => s.key).sort()).toEqual(Array.from({ length: N }, (_, i) => `key-${i}`).sort());
    expect((await sandboxRecord(gw, "settings")).settingsRevision).toBe(BigInt(N));
  });

  it("concurrent updates to 10 sandboxes each land on their own sandbox", async () => {
    const names = Array.from({ length: 10 }, (_, i) => `fleet-${i}`);
    await Promise.all(names.map((name) => createSandbox(gw, name)));
    const client = gw.sdk();
    const results = await Promise.all(
      names.flatMap((name) => [1, 2, 3].map((k) => client.updatePolicy({ sandbox: name, policy: policy({ [`${name}-${k}`]: `${k}.${name}.example.com` }) }))),
    );
    expect(results).toHaveLength(30);
    for (const name of names) {
      const mine = results.filter((r) => r.sandbox === name);
      expect(mine.map((r) => r.policyVersion).sort()).toEqual([2, 3, 4]);
      const sb = await sandboxRecord(gw, name);
      expect(sb.policyVersion).toBe(4);
      const hosts = (await gw.store.listPolicyRevisions(sb.id, 100, "")).items.length;
      expect(hosts).toBe(4);
      const latest = await gw.raw("admin").getSandboxConfig({ name, workspaceScope: workspaceScope() });
      expect(Object.keys(latest.policy!.networkPolicies)[0]).toMatch(new RegExp(`^${name}-[123]$`));
    }
  });
});
