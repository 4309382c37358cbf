// Many sandboxes in one supervisor process: every session bootstraps, all over one HTTP/2
// connection per gateway URL; and standalone mode without any gateway.

import { existsSync } from "node:fs";
import { ConfigApplyOutcome, ConfigurationAdmissionState } from "openshell-config/raw";
import { afterEach, describe, expect, it } from "vitest";
import { effectiveOf, eventually, readJson } from "./support/eventually.js";
import { FakeGateway } from "./support/fake-gateway.js";
import { startSupervisor, type RunningSupervisor } from "./support/harness.js";
import { policy, sandboxSnapshot } from "./support/snapshots.js";

let gw: FakeGateway | undefined;
let sup: RunningSupervisor | undefined;

afterEach(async () => {
  await sup?.stop();
  await gw?.close();
  sup = undefined;
  gw = undefined;
});

describe("fleet", () => {
  it("reconnects a session early, after a short jitter, once a peer session is accepted again, instead of waiting out its grown backoff", async () => {
    // "a" is refused once (the gateway is not ready for it); its backoff is then ~20 s. "b" is
    // held until that refusal, then accepted: the gateway is evidently back, so "a" must not
    // sleep out its 20 s but reconnect within the wake jitter (≤ 1 s; 990 ms here).
    let refused!: () => void;
    const aRefused = new Promise<void>((r) => (refused = r));
    let aHellos = 0;
    gw = await FakeGateway.start({
      heartbeatMs: 1_000,
      holdHello: (hello) => (hello.sandboxId === "b" ? aRefused : undefined),
      reject: (hello) => {
        if (hello.sandboxId !== "a" || aHellos++ > 0) return undefined;
        setTimeout(refused, 50);
        return { reason: "sandbox is provisioning", code: 14 /* UNAVAILABLE */ };
      },
    });
    sup = startSupervisor({ gateways: [gw.url], names: ["a", "b"], backoff: { baseMs: 20_000, capMs: 20_000 }, random: () => 0.99 });
    const b = await gw.waitForSession((s) => s.sandboxId === "b");
    const acceptedAt = Date.now();
    const a = await gw.waitForSession((s) => s.sandboxId === "a", 10_000);
    expect(Date.now() - acceptedAt).toBeLessThan(5_000);
    expect(a.epoch).toBe(2n);
    await a.bootstrapResult();
    await b.bootstrapResult();
    expect(gw.rejected.map((h) => h.sandboxId)).toEqual(["a"]);
    expect(sup.logText()).toContain("a peer session was accepted; reconnecting early");
  });

  it("runs 50 sandboxes in one process over one transport and one HTTP/2 connection, and every one bootstraps", async () => {
    gw = await FakeGateway.start({ heartbeatMs: 1_000 });
    const names = Array.from({ length: 50 }, (_, i) => `fleet-${String(i).padStart(4, "0")}`);
    sup = startSupervisor({ gateways: [gw.url], names });
    const sessions = await Promise.all(names.map((n) => gw!.waitForSession((s) => s.sandboxId === n, 10_000)));
    const results = await Promise.all(sessions.map((s) => s.bootstrapResult(10_000)));
    for (const r of results) {
      expect(r.results[0]?.outcome).toBe(ConfigApplyOutcome.APPLIED);
      expect(r.admission?.state).toBe(ConfigurationAdmissionState.ACCEPTED);
    }
    expect(new Set(sessions.map((s) => s.hello.instanceId)).size).toBe(50);
    expect(sessions.map((s) => s.requestHeader.get("authorization"))).toEqual(names.map((n) => `Bearer token-${n}`));
    expect(sup.fleet.transportCount).toBe(1);
    expect(gw.connections).toBe(1);
    for (const n of names) expect(sup.stateDir.readEffective(n) !== undefined).toBe(true);

    // Live updates reach the right sandbox.
    const u = sessions[17]!.sendSandboxConfig(sandboxSnapshot({ version: 2 }));
    expect((await sessions[17]!.updateResult(u.updateId)).result?.outcome).toBe(ConfigApplyOutcome.APPLIED);
    expect(sup.stateDir.readEffective("fleet-0017")!).toMatchObject({ revision: { policyVersion: 2 } });
    expect(sup.stateDir.readEffective("fleet-0018")!).toMatchObject({ revision: { policyVersion: 1 } });
    expect(gw.violations()).toEqual([]);
  });

  it("reconnects every session over the shared transport after the gateway restarts", async () => {
    gw = await FakeGateway.start({ heartbeatMs: 1_000 });
    const names = Array.from({ length: 5 }, (_, i) => `fleet-${String(i).padStart(4, "0")}`);
    sup = startSupervisor({ gateways: [gw.url], names });
    const first = await Promise.all(names.map((n) => gw!.waitForSession((s) => s.sandboxId === n)));
    await Promise.all(first.map((s) => s.bootstrapResult()));
    await gw.restart();
    const second = await Promise.all(names.map((n) => gw!.waitForSession((s) => s.sandboxId === n && s.epoch >= 2n, 10_000)));
    const results = await Promise.all(second.map((s) => s.bootstrapResult()));
    expect(results.map((r) => r.results[0]?.outcome)).toEqual(names.map(() => ConfigApplyOutcome.IGNORED_DUPLICATE));
    expect(second.map((s) => s.hello.instanceId)).toEqual(first.map((s) => s.hello.instanceId));
    expect(sup.fleet.transportCount).toBe(1);
    expect(gw.connections).toBe(2);
    expect(gw.violations()).toEqual([]);
  });

  it("in standalone mode applies the local policy and writes effective.json without any gateway", async () => {
    const local = policy({ pypi: [{ host: "pypi.org", port: 443, protocol: "rest", rules: [{ method: "GET", path: "/simple/**" }] }] });
    sup = startSupervisor({ gateways: [], names: ["solo-0000", "solo-0001"], localPolicy: local });
    for (const name of ["solo-0000", "solo-0001"]) {
      const effective = await eventually(() => effectiveOf(sup!.stateDir.root, name));
      expect(effective).toMatchObject({ sandbox: name, source: "local_override", revision: null });
      expect(effective.policy).toMatchObject({ networkPolicies: { pypi: { endpoints: [{ host: "pypi.org", protocol: "rest" }] } } });
    }
    expect(sup.fleet.sessions).toHaveLength(0);
    expect(sup.fleet.transportCount).toBe(0);
    // Still running until stopped.
    let done = false;
    void sup.ended.then(() => (done = true));
    await new Promise((r) => setTimeout(r, 100));
    expect(done).toBe(false);
  });
});
