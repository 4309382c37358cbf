// After a fault heals nothing waits out a redelivery backoff grown during the fault: a session
// that bootstraps, or a session whose supervisor answers again after missed acknowledgements,
// delivers the sandbox's pending operations at once, whatever the reconciler's next slot for them.

import { afterEach, describe, expect, it } from "vitest";
import { ConfigApplyOutcome as Outcome, ConfigUpdateOperationState as State } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "../rpc/harness.js";
import { createSandbox, policy } from "../rpc/fixtures.js";
import { connectSupervisorDouble, type SupervisorDouble } from "./supervisor-double.js";

let gw: TestGateway | undefined;
let sup: SupervisorDouble | undefined;
afterEach(async () => {
  sup?.close();
  await gw?.close();
  gw = sup = undefined;
});

/** Gives operation `id` the backoff of a long fault: 8 attempts, next slot in a minute. */
async function growBackoff(g: TestGateway, id: string): Promise<void> {
  const op = (await g.store.operation(id))!;
  const next = await g.store.transaction((tx) =>
    tx.updateOperation(op.id, op.rowVersion, { attemptCount: 8, nextAttemptAt: new Date(Date.now() + 60_000) }),
  );
  expect(next?.attemptCount).toBe(8);
}

async function stateWithin(g: TestGateway, id: string, ms: number): Promise<State | undefined> {
  const end = Date.now() + ms;
  for (;;) {
    const row = await g.store.operation(id);
    if (row && row.state !== State.PENDING) return row.state;
    if (Date.now() > end) return row?.state;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("redelivery after a fault heals", () => {
  it("a session that bootstraps completes a pending operation at once, not at its next backoff slot", async () => {
    gw = await startTestGateway("sqlite", { reconcileIntervalMs: 60_000 });
    await createSandbox(gw, "dev");
    // No supervisor yet: the operation stays pending, and the fault grew its backoff.
    const res = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ pypi: "pypi.org" }) });
    const id = res.operation!.operationId;
    await growBackoff(gw, id);
    const started = Date.now();
    sup = connectSupervisorDouble(gw);
    await sup.ready;
    expect(await stateWithin(gw, id, 10_000)).toBe(State.APPLIED);
    // Far sooner than the backoff slot a minute away (with room for a loaded machine).
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("a session whose supervisor answers again after missed acknowledgements delivers a pending operation at once", async () => {
    gw = await startTestGateway("sqlite", { session: { ackTimeoutMs: 300 }, reconcileIntervalMs: 60_000 });
    await createSandbox(gw, "dev");
    // The supervisor is connected but loses every answer to v2 for a while (a stalled link).
    let healthy = false;
    sup = connectSupervisorDouble(gw, { decide: (s) => (s.version >= 2 && !healthy ? "drop" : { outcome: Outcome.APPLIED }) });
    await sup.ready;
    const res = await gw.sdk().updatePolicy({ sandbox: "dev", policy: policy({ pypi: "pypi.org" }) });
    const id = res.operation!.operationId;
    await growBackoff(gw, id);
    await new Promise((r) => setTimeout(r, 700));
    expect((await gw.store.operation(id))!.state).toBe(State.PENDING);
    healthy = true;
    // The next re-send (one ack timeout at most) is answered: no backoff slot is waited for.
    expect(await stateWithin(gw, id, 10_000)).toBe(State.APPLIED);
  });
});
