// A session delivers again on its own after a delivery failed (delivery/delivery-retry.ts): a
// global change has no operation for the reconciler to redeliver, so without this a sandbox kept
// the old global part after one failed read. The retries back off, with jitter, one timer at a time.

import { afterEach, describe, expect, it, vi } from "vitest";
import { startTestGateway, type TestGateway } from "../rpc/harness.js";
import { createSandbox } from "../rpc/fixtures.js";
import { connectSupervisorDouble, type SupervisorDouble } from "./supervisor-double.js";
import { DELIVERY_RETRY_FIRST_MS, DELIVERY_RETRY_MAX_MS, createDeliveryRetry } from "../../src/delivery/delivery-retry.js";

let gw: TestGateway | undefined;
let sup: SupervisorDouble | undefined;
afterEach(async () => {
  vi.useRealTimers();
  sup?.close();
  await gw?.close();
  gw = sup = undefined;
});

describe("delivery retry", () => {
  it("waits between half and all of a backoff that doubles from the first wait to the maximum, and starts over after a success", () => {
    vi.useFakeTimers();
    const errors: unknown[] = [];
    let deliveries = 0;
    let roll = 0;
    const retry = createDeliveryRetry(() => deliveries++, { error: (o: object) => errors.push(o), info: () => {} }, () => roll);
    const waits: number[] = [];
    for (let i = 0; i < 9; i++) {
      roll = i % 2; // alternately the shortest and the longest wait
      retry.failed(new Error("database unreachable"));
      const before = deliveries;
      const start = Date.now();
      while (deliveries === before) vi.advanceTimersByTime(1);
      waits.push(Date.now() - start);
    }
    const full = [1, 2, 4, 8, 16, 32, 60, 60, 60].map((k) => Math.min(DELIVERY_RETRY_FIRST_MS * k, DELIVERY_RETRY_MAX_MS));
    expect(waits).toEqual(full.map((ms, i) => (i % 2 === 0 ? ms / 2 : ms)));
    expect(errors).toHaveLength(9);
    expect(errors[0]).toMatchObject({ err: "database unreachable", retryInMs: DELIVERY_RETRY_FIRST_MS });
    retry.succeeded();
    roll = 1;
    retry.failed(new Error("again"));
    vi.advanceTimersByTime(DELIVERY_RETRY_FIRST_MS);
    expect(deliveries).toBe(10);
  });

  it("logs an expected failure at info until the backoff reaches its maximum, then as an error", () => {
    vi.useFakeTimers();
    const levels: string[] = [];
    let deliveries = 0;
    const retry = createDeliveryRetry(() => deliveries++, { error: () => levels.push("error"), info: () => levels.push("info") }, () => 1);
    for (let i = 0; i < 8; i++) {
      retry.failed(new Error("behind again"), true);
      vi.advanceTimersByTime(DELIVERY_RETRY_MAX_MS);
    }
    // 0.5, 1, 2, 4, 8, 16 s at info; 30 s (the maximum) and on as errors.
    expect(levels).toEqual(["info", "info", "info", "info", "info", "info", "error", "error"]);
    expect(deliveries).toBe(8);
  });

  it("keeps one timer however many deliveries fail meanwhile, and none after the session ends", () => {
    vi.useFakeTimers();
    let deliveries = 0;
    const retry = createDeliveryRetry(() => deliveries++, { error: () => {}, info: () => {} }, () => 1);
    for (let i = 0; i < 100; i++) retry.failed(new Error("x"));
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(DELIVERY_RETRY_MAX_MS);
    expect(deliveries).toBe(1);
    retry.failed(new Error("x"));
    retry.stop();
    expect(vi.getTimerCount()).toBe(0);
    retry.failed(new Error("x"));
    vi.advanceTimersByTime(DELIVERY_RETRY_MAX_MS);
    expect(deliveries).toBe(1);
  });

  it("a global setting whose delivery to a connected sandbox failed once still reaches it, with no operation and no reconciler to redeliver it", async () => {
    gw = await startTestGateway("sqlite", { reconcileIntervalMs: 600_000 });
    await createSandbox(gw, "dev");
    sup = connectSupervisorDouble(gw);
    await sup.ready;
    const store = gw.store;
    const read = store.sandboxById.bind(store);
    let failures = 0;
    // The session's next read of its sandbox fails once, as with a database briefly unreachable.
    store.sandboxById = async (id) => {
      if (failures++ === 0) throw new Error("database unreachable");
      return read(id);
    };
    await gw.raw("platform").updateConfig({ global: true, settingKey: "region", settingValue: { value: { case: "stringValue", value: "eu-west" } } });
    const end = Date.now() + 5_000;
    const hasRegion = () =>
      sup!.received.some((m) => m.payload.case === "configUpdate" && m.payload.value.component.case === "sandboxConfig" && "region" in m.payload.value.component.value.settings);
    while (!hasRegion() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(failures).toBeGreaterThanOrEqual(2);
    expect(hasRegion()).toBe(true);
    expect(gw.logs()).toMatch(/configuration delivery failed; trying again/);
  });
});
