// Writing a shared rollout after its creation: compare-and-swap on resource_version, one driver at
// a time by lease (refusal, renewal, release, takeover after expiry), the approval gate between
// waves, approvals with four eyes, and approving the same wave twice.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { RolloutRecordPhase as Phase, RolloutView, workspaceScope } from "openshell-config/raw";
import { startTestGateway, type TestGateway } from "./harness.js";
import { rpcError } from "./fixtures.js";
import { createRequest, DRIVER, stateJson, updateRequest } from "./rollouts-fixtures.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(() => gw.close());

const scope = workspaceScope();
const get = async (id: string, view = RolloutView.SUMMARY) => (await gw.raw("user").getRollout({ id, workspaceScope: scope, view })).rollout!;
const awaiting = (wavesDone: number) => ({ phase: Phase.PAUSED, awaitingApproval: true, wavesDone, wavesTotal: 3 });
const running = (wavesDone: number) => ({ phase: Phase.RUNNING, wavesDone, wavesTotal: 3 });

describe("compare-and-swap", () => {
  it("an update writes the state and summary and bumps the version; a stale version is ABORTED with both versions", async () => {
    await gw.raw("admin").createRollout(createRequest("c-1"));
    const ok = (await gw.raw("admin").updateRollout(updateRequest("c-1", 1n, running(1)))).rollout!;
    expect(ok.resourceVersion).toBe(2n);
    expect(ok.summary?.wavesDone).toBe(1);
    expect((await get("c-1", RolloutView.FULL)).stateJson).toBe(stateJson("c-1", running(1)));
    const err = await rpcError(gw.raw("admin").updateRollout(updateRequest("c-1", 1n, running(2))));
    expect(err.code).toBe(Code.Aborted);
    expect(err.rawMessage).toBe('rollout "c-1" is at resource version 2, not 1; read it again');
    expect((await get("c-1")).summary?.wavesDone).toBe(1);
  });

  it("of two concurrent updates from the same version exactly one wins", async () => {
    await gw.raw("admin").createRollout(createRequest("c-race"));
    const results = await Promise.allSettled([1, 2].map((n) => gw.raw("admin").updateRollout(updateRequest("c-race", 1n, running(n)))));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const lost = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(rpcErrorCode(lost.reason)).toBe(Code.Aborted);
    expect((await get("c-race")).resourceVersion).toBe(2n);
  });

  it("updating a rollout that does not exist is NOT_FOUND", async () => {
    const err = await rpcError(gw.raw("admin").updateRollout(updateRequest("c-none", 1n, running(0))));
    expect(err.code).toBe(Code.NotFound);
    expect(err.rawMessage).toBe('rollout "c-none" not found');
  });
});

const rpcErrorCode = (e: unknown) => (e as { code?: Code }).code;

describe("leases", () => {
  it("another driver is refused while the lease holds, naming holder, principal and expiry; nothing changes", async () => {
    await gw.raw("admin").createRollout(createRequest("l-held", { leaseTtlMs: 60_000 }));
    const err = await rpcError(gw.raw("platform").updateRollout(updateRequest("l-held", 1n, running(1), { driver: "dashboard root" })));
    expect(err.code).toBe(Code.FailedPrecondition);
    const lease = (await get("l-held")).lease!;
    const until = new Date(Number(lease.expireTime!.seconds) * 1000 + Math.floor(lease.expireTime!.nanos / 1e6)).toISOString();
    expect(err.rawMessage).toBe(`rollout "l-held" is driven by ${DRIVER} (alice) until ${until}; it can be taken over after that`);
    expect((await get("l-held")).resourceVersion).toBe(1n);
  });

  it("the holder renews its lease with a lease-only update, which leaves the state as it was", async () => {
    await gw.raw("admin").createRollout(createRequest("l-renew", { leaseTtlMs: 5_000 }));
    const before = await get("l-renew", RolloutView.FULL);
    const after = (await gw.raw("admin").updateRollout(updateRequest("l-renew", 1n, undefined, { leaseTtlMs: 120_000 }))).rollout!;
    expect(after.resourceVersion).toBe(2n);
    expect(Number(after.lease!.expireTime!.seconds)).toBeGreaterThan(Number(before.lease!.expireTime!.seconds) + 100);
    const full = await get("l-renew", RolloutView.FULL);
    expect(full.stateJson).toBe(before.stateJson);
    expect(full.summary).toEqual(before.summary);
  });

  it("a live lease is its driver id under its principal: another principal naming the same id is refused, and nothing changes", async () => {
    await gw.raw("admin").createRollout(createRequest("l-spoof", { leaseTtlMs: 60_000 }));
    // The holder's id is public: every reader of the record sees it.
    const holder = (await get("l-spoof")).lease!.holder;
    const err = await rpcError(gw.raw("platform").updateRollout(updateRequest("l-spoof", 1n, running(1), { driver: holder })));
    expect(Code[err.code]).toBe("FailedPrecondition");
    expect(err.rawMessage).toContain(`rollout "l-spoof" is driven by ${DRIVER} (alice) until `);
    const after = await get("l-spoof");
    expect([after.resourceVersion, after.lease?.principal, after.summary?.wavesDone]).toEqual([1n, "alice", 0]);
  });

  it("a released lease lets another driver write at once", async () => {
    await gw.raw("admin").createRollout(createRequest("l-release", { leaseTtlMs: 60_000 }));
    const released = (await gw.raw("admin").updateRollout(updateRequest("l-release", 1n, running(1), { releaseLease: true }))).rollout!;
    expect(released.lease).toBeUndefined();
    const taken = (await gw.raw("platform").updateRollout(updateRequest("l-release", 2n, running(2), { driver: "dashboard root" }))).rollout!;
    expect(taken.lease?.holder).toBe("dashboard root");
    expect(taken.lease?.principal).toBe("root");
  });

  it("an expired lease is taken over by another driver, and the takeover is logged with both holders", async () => {
    // Three seconds: room for the early call below to land inside the lease on a loaded machine.
    await gw.raw("admin").createRollout(createRequest("l-expire", { leaseTtlMs: 3_000 }));
    const early = await rpcError(gw.raw("platform").updateRollout(updateRequest("l-expire", 1n, undefined, { driver: "resumer" })));
    expect(early.code).toBe(Code.FailedPrecondition);
    await new Promise((r) => setTimeout(r, 3_100));
    const taken = (await gw.raw("platform").updateRollout(updateRequest("l-expire", 1n, undefined, { driver: "resumer" }))).rollout!;
    expect(taken.lease?.holder).toBe("resumer");
    expect(taken.lease?.principal).toBe("root");
    const line = gw.logs().split("\n").find((l) => l.includes("rollout lease taken over") && l.includes("l-expire"));
    expect(line).toBeDefined();
    const entry = JSON.parse(line!) as { from: { holder: string; principal: string }; to: { holder: string; principal: string } };
    expect(entry.from).toMatchObject({ holder: DRIVER, principal: "alice" });
    expect(entry.to).toEqual({ holder: "resumer", principal: "root" });
    // The former driver is now the one refused.
    const old = await rpcError(gw.raw("admin").updateRollout(updateRequest("l-expire", 2n, running(1))));
    expect(old.rawMessage).toContain("is driven by resumer (root)");
  });
});

describe("the approval gate", () => {
  it("a driver cannot pass a wave awaiting approval until it is approved; then it can", async () => {
    const admin = gw.raw("admin");
    await admin.createRollout(createRequest("g-1"));
    await admin.updateRollout(updateRequest("g-1", 1n, awaiting(1)));
    for (const next of [running(1), { ...awaiting(2), awaitingApproval: false, phase: Phase.PAUSED }]) {
      const err = await rpcError(admin.updateRollout(updateRequest("g-1", 2n, next)));
      expect(err.code).toBe(Code.FailedPrecondition);
      expect(err.rawMessage).toBe('wave 1 of rollout "g-1" waits for an approval');
    }
    // Still waiting: the driver may write its state.
    expect((await admin.updateRollout(updateRequest("g-1", 2n, awaiting(1)))).rollout?.resourceVersion).toBe(3n);
    const approved = (await admin.approveRollout({ id: "g-1", wave: 1, workspaceScope: scope, expectedResourceVersion: 3n })).rollout!;
    expect(approved.resourceVersion).toBe(4n);
    expect(approved.approvals.map((a) => [a.wave, a.principal])).toEqual([[1, "alice"]]);
    expect((await admin.updateRollout(updateRequest("g-1", 4n, running(1)))).rollout?.summary?.phase).toBe(Phase.RUNNING);
  });

  it("rolling back or finishing without the approval is allowed (undo)", async () => {
    const admin = gw.raw("admin");
    for (const [id, next] of [
      ["g-undo", { phase: Phase.ROLLING_BACK, wavesDone: 1, wavesTotal: 3 }],
      ["g-done", { phase: Phase.DONE, wavesDone: 1, wavesTotal: 3 }],
    ] as const) {
      await admin.createRollout(createRequest(id));
      await admin.updateRollout(updateRequest(id, 1n, awaiting(1)));
      expect((await admin.updateRollout(updateRequest(id, 2n, next))).rollout?.summary?.phase).toBe(next.phase);
    }
  });

  it("a wait for approval is not cleared by one write to be passed by the next: each such write is refused and changes nothing", async () => {
    const admin = gw.raw("admin");
    const paused = { phase: Phase.PAUSED, wavesDone: 1, wavesTotal: 3 };
    const cases = [
      ["g-clear", paused, 'wave 1 of rollout "g-clear" waits for an approval'],
      ["g-next", awaiting(2), 'wave 1 of rollout "g-next" waits for an approval'],
      ["g-skip", { phase: Phase.DONE, wavesDone: 3, wavesTotal: 3 }, 'wave 1 of rollout "g-skip" waits for an approval'],
    ] as const;
    for (const [id, next, message] of cases) {
      await admin.createRollout(createRequest(id));
      await admin.updateRollout(updateRequest(id, 1n, awaiting(1)));
      const err = await rpcError(admin.updateRollout(updateRequest(id, 2n, next)));
      expect([Code[err.code], err.rawMessage]).toEqual(["FailedPrecondition", message]);
      expect((await get(id)).resourceVersion).toBe(2n);
    }
  });

  it("a finished or rolling-back rollout only rolls back or finishes: it never runs or pauses again", async () => {
    const admin = gw.raw("admin");
    for (const [id, stop] of [
      ["g-done-run", { phase: Phase.DONE, wavesDone: 1, wavesTotal: 3 }],
      ["g-back-run", { phase: Phase.ROLLING_BACK, wavesDone: 1, wavesTotal: 3 }],
    ] as const) {
      await admin.createRollout(createRequest(id));
      await admin.updateRollout(updateRequest(id, 1n, awaiting(1)));
      await admin.updateRollout(updateRequest(id, 2n, stop));
      for (const next of [running(1), awaiting(1)]) {
        const err = await rpcError(admin.updateRollout(updateRequest(id, 3n, next)));
        expect(Code[err.code]).toBe("FailedPrecondition");
        expect(err.rawMessage).toBe(`rollout "${id}": it is ${Phase[stop.phase]}; it can only roll back or finish, not become ${Phase[next.phase]}`);
      }
      // Undo of a finished rollout, and the end of a rollback, still go through.
      const last = { phase: stop.phase === Phase.DONE ? Phase.ROLLING_BACK : Phase.DONE, wavesDone: 1, wavesTotal: 3 };
      expect((await admin.updateRollout(updateRequest(id, 3n, last))).rollout?.summary?.phase).toBe(last.phase);
    }
  });

  it("a rollout's waves do not change and done waves stay done (so approvals stay one per wave)", async () => {
    const admin = gw.raw("admin");
    await admin.createRollout(createRequest("g-fixed"));
    await admin.updateRollout(updateRequest("g-fixed", 1n, running(2)));
    const more = await rpcError(admin.updateRollout(updateRequest("g-fixed", 2n, { phase: Phase.RUNNING, wavesDone: 2, wavesTotal: 4 })));
    expect([Code[more.code], more.rawMessage]).toEqual(["FailedPrecondition", 'rollout "g-fixed": summary.waves_total is 3; a rollout\'s waves do not change (got 4)']);
    const back = await rpcError(admin.updateRollout(updateRequest("g-fixed", 2n, running(1))));
    expect([Code[back.code], back.rawMessage]).toEqual(["FailedPrecondition", 'rollout "g-fixed": summary.waves_done cannot go back from 2 to 1']);
    expect((await get("g-fixed")).summary?.wavesDone).toBe(2);
  });

  it("an approval needs a rollout waiting for that wave", async () => {
    const admin = gw.raw("admin");
    await admin.createRollout(createRequest("g-wave"));
    const notWaiting = await rpcError(admin.approveRollout({ id: "g-wave", wave: 0, workspaceScope: scope }));
    expect(notWaiting.code).toBe(Code.FailedPrecondition);
    expect(notWaiting.rawMessage).toBe('rollout "g-wave" is not waiting for an approval');
    await admin.updateRollout(updateRequest("g-wave", 1n, awaiting(2)));
    const wrong = await rpcError(admin.approveRollout({ id: "g-wave", wave: 1, workspaceScope: scope }));
    expect(wrong.code).toBe(Code.FailedPrecondition);
    expect(wrong.rawMessage).toBe('rollout "g-wave" waits for an approval of wave 2, not wave 1');
    const stale = await rpcError(admin.approveRollout({ id: "g-wave", wave: 2, workspaceScope: scope, expectedResourceVersion: 1n }));
    expect(stale.code).toBe(Code.Aborted);
    expect(stale.rawMessage).toBe('rollout "g-wave" is at resource version 2, not 1; read it again');
    expect((await get("g-wave")).approvals).toEqual([]);
  });

  it("with four eyes the creator cannot approve, another admin can, and the log names the approver", async () => {
    await gw.raw("admin").createRollout(createRequest("g-four", { requireDistinctApprover: true }));
    await gw.raw("admin").updateRollout(updateRequest("g-four", 1n, awaiting(0)));
    const own = await rpcError(gw.raw("admin").approveRollout({ id: "g-four", wave: 0, workspaceScope: scope }));
    expect(own.code).toBe(Code.PermissionDenied);
    expect(own.rawMessage).toBe('rollout "g-four" needs an approver other than its creator (alice)');
    const ok = (await gw.raw("platform").approveRollout({ id: "g-four", wave: 0, workspaceScope: scope })).rollout!;
    expect(ok.approvals.map((a) => a.principal)).toEqual(["root"]);
    expect(gw.logs().split("\n").some((l) => l.includes("rollout wave approved") && l.includes("g-four") && l.includes('"principal":"root"'))).toBe(true);
  });

  it("approving an approved wave again returns the record unchanged, whoever asks and with any version", async () => {
    await gw.raw("admin").createRollout(createRequest("g-again", { requireDistinctApprover: true }));
    await gw.raw("admin").updateRollout(updateRequest("g-again", 1n, awaiting(0)));
    const first = (await gw.raw("platform").approveRollout({ id: "g-again", wave: 0, workspaceScope: scope })).rollout!;
    expect(first.resourceVersion).toBe(3n);
    for (const [who, version] of [["platform", 0n], ["admin", 2n], ["platform", 3n]] as const) {
      const again = (await gw.raw(who).approveRollout({ id: "g-again", wave: 0, workspaceScope: scope, expectedResourceVersion: version })).rollout!;
      expect(again.resourceVersion).toBe(3n);
      expect(again.approvals).toHaveLength(1);
    }
    // After the driver passed the gate, a late retry still answers the record.
    await gw.raw("admin").updateRollout(updateRequest("g-again", 3n, running(1)));
    expect((await gw.raw("platform").approveRollout({ id: "g-again", wave: 0, workspaceScope: scope })).rollout?.approvals).toHaveLength(1);
  });
});
