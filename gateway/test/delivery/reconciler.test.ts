// The reconciler (the repair path): what falls due when, that claims back off, that a pass
// claims in one durable write, and that a freshly committed operation is left to the push path.

import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { createReconciler, FIRST_CHECK_MS, redeliveryDelayMs } from "../../src/operations/reconciler.js";
import { openSqliteStore } from "../../src/store/sqlite/sqlite-store.js";
import type { SessionRegistry } from "../../src/delivery/registry.js";
import type { Store } from "../../src/store/store.js";
import { operation, sandbox } from "../store/store-fixtures.js";
import { startTestGateway, type TestGateway } from "../rpc/harness.js";
import { createSandbox, policy } from "../rpc/fixtures.js";

let store: Store | undefined;
let gw: TestGateway | undefined;
afterEach(async () => {
  await store?.close();
  await gw?.close();
  store = gw = undefined;
});

function recordingRegistry(): SessionRegistry & { published: string[] } {
  const published: string[] = [];
  return {
    published,
    add: async () => undefined,
    remove: () => undefined,
    get: () => undefined,
    publish: (id?: string) => void published.push(id ?? "*"),
    closeAll: () => undefined,
    size: 0,
  };
}

describe("reconciler", () => {
  it("claims due operations with backoff, publishes their sandboxes once, and leaves others alone", async () => {
    store = openSqliteStore(":memory:");
    const sb = sandbox();
    const now = Date.now();
    const due = [operation(sb.id, { nextAttemptAt: new Date(now - 1000) }), operation(sb.id, { nextAttemptAt: new Date(now - 10) })];
    const later = operation(sb.id, { nextAttemptAt: new Date(now + 60_000) });
    await store.transaction(async (tx) => {
      await tx.insertSandbox(sb);
      for (const op of [...due, later]) await tx.insertOperation(op);
    });
    const registry = recordingRegistry();
    const reconciler = createReconciler(store, registry, pino({ level: "silent" }));
    const commitsBefore = store.writeStats().commits;

    expect(await reconciler.runOnce()).toBe(2);
    expect(store.writeStats().commits - commitsBefore).toBe(1);
    expect(registry.published).toEqual([sb.id]);
    for (const op of due) {
      const row = (await store.operation(op.id))!;
      expect(row.attemptCount).toBe(1);
      expect(row.nextAttemptAt.getTime()).toBeGreaterThanOrEqual(now + redeliveryDelayMs(0));
    }
    expect((await store.operation(later.id))!.attemptCount).toBe(0);
    // Claimed operations are not due again until their backoff passed.
    expect(await reconciler.runOnce()).toBe(0);
  });

  it("a freshly committed operation is left to the push path until its first check", async () => {
    gw = await startTestGateway("sqlite");
    await createSandbox(gw, "dev");
    const before = Date.now();
    const res = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ a: "a.example.com" }) });
    const row = (await gw.store.operation(res.operation!.operationId))!;
    expect(row.state).toBe(1);
    expect(row.nextAttemptAt.getTime()).toBeGreaterThanOrEqual(before + FIRST_CHECK_MS);
    expect(await gw.store.dueOperations(new Date(), 10)).toEqual([]);
  });
});
