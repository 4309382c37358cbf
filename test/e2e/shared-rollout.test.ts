// Shared rollouts between operators, through the SDK, against a real gateway and supervisors: a
// rollout one admin starts is listed, approved, finished and undone by another from its id alone;
// the approvals name who gave them; four eyes and roles are enforced by the gateway; a live driver's
// lease refuses a second driver and an expired one is taken over. The gateway's policy versions
// show that no sandbox got a second revision (nor a second rollback revision).

import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workspaceScope } from "openshell-config/raw";
import { createConfigClient, PermissionDeniedError, NotFoundError, FailedPreconditionError, type ConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import {
  approveRollout,
  getRollout,
  getRolloutCapabilities,
  listRollouts,
  recordApproval,
  resumeRollout,
  rollout,
  undoSharedRollout,
  RolloutLeaseHeldError,
} from "openshell-config/rollout";
import { RolloutRecordRpc } from "../../src/rollout/record-rpc.js";
import { fleetNames, policy, startE2EStack, untilFleetReady, type E2EStack, type RuleSpec } from "./stack.js";

const names = fleetNames("sh-", 6);
const base: Record<string, RuleSpec> = { github: { host: "github.com" } };
const token = (who: string) => `${who}-${randomBytes(12).toString("hex")}`;
const tokens = { alice: token("alice"), bob: token("bob"), carol: token("carol"), dave: token("dave") };

let stack: E2EStack;
const clients: Record<keyof typeof tokens, ConfigClient> = {} as never;

async function policyVersions(): Promise<Map<string, number>> {
  const res = await stack.raw.listSandboxes({ pageSize: 100, workspaceScope: workspaceScope() });
  return new Map(res.sandboxes.map((sb) => [sb.metadata!.name, sb.status!.desiredPolicyVersion]));
}

/** Each sandbox's version now minus before. */
async function bumps(before: Map<string, number>): Promise<number[]> {
  const now = await policyVersions();
  return names.map((n) => now.get(n)! - before.get(n)!);
}

const change = (n: number) => policy({ ...base, [`host${n}`]: { host: `h${n}.example.com` } });

beforeAll(async () => {
  stack = await startE2EStack({
    sandboxes: names,
    principals: [
      { token: tokens.alice, principal: "alice", role: "admin", workspaces: ["default"] },
      { token: tokens.bob, principal: "bob", role: "admin", workspaces: ["default"] },
      { token: tokens.carol, principal: "carol", role: "user", workspaces: ["default"] },
      { token: tokens.dave, principal: "dave", role: "admin", workspaces: ["elsewhere"] },
    ],
  });
  for (const who of Object.keys(tokens) as (keyof typeof tokens)[]) {
    clients[who] = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }), token: tokens[who], workspace: "default" });
  }
  for (const name of names) await stack.raw.createSandbox({ name, labels: { team: "sh" }, spec: { policy: policy(base) }, workspaceScope: workspaceScope() });
  stack.startSupervisor({ fleet: { prefix: "sh-", count: names.length } });
  await untilFleetReady(stack.raw, names.length);
}, 120_000);

afterAll(async () => {
  await stack?.stop();
});

describe("shared rollouts between operators", () => {
  it("a rollout paused for approval is listed, approved wave by wave and finished by another admin, one revision per sandbox", async () => {
    expect(await getRolloutCapabilities(clients.alice)).toEqual({ sharedRollouts: true });
    const before = await policyVersions();
    const first = await rollout(clients.alice, { id: "ship-1", labelSelector: "team=sh", policy: change(1), waves: [2, 4, "100%"], gate: { pause: "approval" }, driver: "alice's laptop" });
    expect(first.phase).toBe("paused");

    const listed = (await listRollouts(clients.bob)).rollouts.find((r) => r.id === "ship-1");
    expect(listed).toMatchObject({ createdBy: "alice", phase: "paused", awaitingApproval: true, waves: { done: 1, total: 3 }, labelSelector: "team=sh", changeSummary: "policy" });
    expect(listed!.counts).toMatchObject({ targets: 6, sent: 2, applied: 2 });
    expect(listed!.lease, "the driver gave its lease up when it paused").toBeUndefined();
    expect(listed!.state, "lists carry no state").toBeUndefined();

    const second = await approveRollout(clients.bob, "ship-1", { driver: "bob's desk" });
    expect(second.phase).toBe("paused");
    const third = await approveRollout(clients.bob, "ship-1");
    expect(third.phase).toBe("complete");

    const done = await getRollout(clients.carol, "ship-1");
    expect(done).toMatchObject({ phase: "done", result: "complete", waves: { done: 3, total: 3 }, counts: { targets: 6, sent: 6, applied: 6, failed: 0 } });
    expect(done.approvals.map((a) => [a.wave, a.by])).toEqual([[1, "bob"], [2, "bob"]]);
    expect(done.approvals.every((a) => a.at.getTime() > done.createdAt.getTime() - 1000)).toBe(true);
    expect(done.state?.refs && Object.keys(done.state.refs).length).toBe(6);
    expect(await bumps(before)).toEqual(names.map(() => 1));
  });

  it("an undo from another client rolls back with exactly one rollback revision per sandbox; a user may not", async () => {
    await expect(undoSharedRollout(clients.carol, "ship-1").result).rejects.toBeInstanceOf(PermissionDeniedError);
    const before = await policyVersions();
    const undone = await undoSharedRollout(clients.bob, "ship-1");
    expect(undone.phase).toBe("rolled-back");
    expect(await bumps(before)).toEqual(names.map(() => 1));
    // Again: every rollback replays its key; nothing new is committed.
    const again = await undoSharedRollout(clients.alice, "ship-1");
    expect(again.phase).toBe("rolled-back");
    expect(await bumps(before)).toEqual(names.map(() => 1));
    expect(await getRollout(clients.bob, "ship-1")).toMatchObject({ phase: "done", result: "rolled-back", counts: { rolledBack: 6 } });
  });

  it("four eyes: the creator cannot approve, a user cannot approve, another admin can", async () => {
    const run = await rollout(clients.alice, { id: "ship-2", labelSelector: "team=sh", policy: change(2), waves: [3, "100%"], gate: { pause: "approval" }, requireDistinctApprover: true });
    expect(run.phase).toBe("paused");
    await expect(approveRollout(clients.alice, "ship-2").result).rejects.toThrow(/needs an approver other than its creator \(alice\)/);
    await expect(approveRollout(clients.alice, "ship-2").result).rejects.toBeInstanceOf(PermissionDeniedError);
    await expect(resumeRollout(clients.alice, "ship-2").result, "resuming is approving").rejects.toBeInstanceOf(PermissionDeniedError);
    await expect(recordApproval(clients.carol, "ship-2")).rejects.toBeInstanceOf(PermissionDeniedError);
    expect((await getRollout(clients.alice, "ship-2")).lease, "a refused approval leaves no lease behind").toBeUndefined();
    const approved = await recordApproval(clients.bob, "ship-2");
    expect(approved.approvals.map((a) => a.by)).toEqual(["bob"]);
    // Approved by bob: now its creator may drive the rest.
    expect((await resumeRollout(clients.alice, "ship-2")).phase).toBe("complete");
    await expect(recordApproval(clients.bob, "ship-2"), "nothing waits for an approval any more").rejects.toBeInstanceOf(FailedPreconditionError);
  });

  it("resuming a paused rollout from its saved state approves it on the record, as its resume does", async () => {
    const paused = await rollout(clients.alice, { id: "ship-4", labelSelector: "team=sh", policy: change(4), waves: [3, "100%"], gate: { pause: "approval" } });
    expect(paused.phase).toBe("paused");
    const resumed = await rollout(clients.bob, { resume: paused.state });
    expect(resumed.phase).toBe("complete");
    const record = await getRollout(clients.alice, "ship-4");
    expect(record.approvals.map((a) => [a.wave, a.by])).toEqual([[1, "bob"]]);
    expect(record).toMatchObject({ phase: "done", result: "complete" });
  });

  it("a run that cannot make its state durable stops and gives its lease up at once", async () => {
    let calls = 0;
    const result = await rollout(clients.alice, {
      id: "ship-5",
      labelSelector: "team=sh",
      policy: change(5),
      waves: [2, "100%"],
      onState: () => {
        if (++calls === 2) throw new Error("disk full");
      },
    });
    expect(result.phase).toBe("aborted");
    expect(String(result.stateError)).toMatch(/disk full/);
    const record = await getRollout(clients.bob, "ship-5");
    expect(record.lease, "no lease left renewing in this process").toBeUndefined();
    // Another operator takes it over at once and finishes it.
    expect((await resumeRollout(clients.bob, "ship-5")).phase).toBe("complete");
  });

  it("re-running a finished rollout by its id replays it and leaves its record; another change under that id is refused", async () => {
    const before = await policyVersions();
    const first = await rollout(clients.alice, { id: "ship-6", labelSelector: "team=sh", policy: change(6) });
    expect(first.phase).toBe("complete");
    const recorded = await getRollout(clients.alice, "ship-6");
    const again = await rollout(clients.bob, { id: "ship-6", labelSelector: "team=sh", policy: change(6) });
    expect(again.phase).toBe("complete");
    expect(again.counts.byState.applied).toBe(names.length);
    expect(await bumps(before)).toEqual(names.map(() => 1));
    expect((await getRollout(clients.alice, "ship-6")).resourceVersion).toBe(recorded.resourceVersion);
    const other = rollout(clients.bob, { id: "ship-6", labelSelector: "team=sh", policy: change(7) });
    await expect(other.result).rejects.toThrow(/id "ship-6" is taken at the gateway by another rollout \(a different change, created by alice\)/);
    expect(await bumps(before)).toEqual(names.map(() => 1));
  });

  it("a user of another workspace sees nothing", async () => {
    await expect(getRollout(clients.dave, "ship-1")).rejects.toBeInstanceOf(NotFoundError);
    expect((await listRollouts(clients.dave, { workspace: "elsewhere" })).rollouts).toEqual([]);
    expect((await listRollouts(clients.dave, { workspace: "*" })).rollouts).toEqual([]);
    await expect(listRollouts(clients.dave)).rejects.toBeInstanceOf(NotFoundError);
  });

  it("a live driver's lease refuses a second driver; once it expires the rollout is taken over and finished without a second revision", async () => {
    const before = await policyVersions();
    expect((await rollout(clients.alice, { id: "ship-3", labelSelector: "team=sh", policy: change(3), waves: [2, "100%"], gate: { pause: "approval" } })).phase).toBe("paused");
    await recordApproval(clients.bob, "ship-3");
    // Another driver takes the lease (as a live process would) for 1.5 s.
    const rpc = clients.alice.raw(RolloutRecordRpc);
    const current = await getRollout(clients.alice, "ship-3");
    await rpc.updateRollout({ workspaceScope: workspaceScope(), id: "ship-3", expectedResourceVersion: current.resourceVersion, driver: "ghost on host-9", leaseTtlMs: 1500 });
    const refusal = await resumeRollout(clients.bob, "ship-3").result.catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(RolloutLeaseHeldError);
    expect((refusal as RolloutLeaseHeldError).lease).toMatchObject({ holder: "ghost on host-9", principal: "alice" });
    expect((refusal as Error).message).toMatch(/driven by ghost on host-9 \(alice\) until .*; it can be taken over after that/);
    const expires = (refusal as RolloutLeaseHeldError).lease.expiresAt.getTime();
    await new Promise((r) => setTimeout(r, Math.max(0, expires - Date.now() + 50)));
    const run = resumeRollout(clients.bob, "ship-3", { driver: "bob's desk" });
    const result = await run.result;
    expect(result.phase).toBe("complete");
    expect(await bumps(before)).toEqual(names.map(() => 1));
    expect((await getRollout(clients.bob, "ship-3")).lease).toBeUndefined();
  });
});
