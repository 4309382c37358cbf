// WatchRollouts against a real gateway: one rollout's stream sees its updates and approvals, a
// workspace's stream sees creations too (and nothing of other workspaces), streams end with
// UNAVAILABLE when the gateway shuts down, and on PostgreSQL a watcher on one replica sees writes
// made on another.

import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { allWorkspacesScope, OpenShell, RolloutRecordPhase as Phase, RolloutView, workspaceScope, type WatchRolloutsResponse } from "openshell-config/raw";
import { startTestGateway, TOKENS, type TestGateway } from "./harness.js";
import { createRequest, stateJson, updateRequest } from "./rollouts-fixtures.js";
import { startReplicaPair, type ReplicaPair } from "./rollouts-replicas.js";

const scope = workspaceScope();
const awaiting = { phase: Phase.PAUSED, awaitingApproval: true, wavesDone: 1, wavesTotal: 3 };

/** A watch read message by message, each within a time limit, cancelled by `stop`. */
function openWatch(client: Client<typeof OpenShell>, req: Parameters<Client<typeof OpenShell>["watchRollouts"]>[0]) {
  const abort = new AbortController();
  const it = client.watchRollouts(req, { signal: abort.signal })[Symbol.asyncIterator]();
  return {
    async next(timeoutMs = 5_000): Promise<WatchRolloutsResponse> {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error(`no watch message within ${timeoutMs} ms`)), timeoutMs)));
      try {
        const r = await Promise.race([it.next(), timeout]);
        if (r.done) throw new Error("the watch ended");
        return r.value;
      } finally {
        clearTimeout(timer);
      }
    },
    /** Nothing arrives within `ms`. */
    async quiet(ms = 300): Promise<boolean> {
      const r = await Promise.race([it.next().then(() => false), new Promise<boolean>((res) => setTimeout(() => res(true), ms))]);
      return r;
    },
    stop: () => abort.abort(),
  };
}

describe("on one gateway", () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  });
  afterAll(() => gw.close());

  it("a watch of one rollout sends its record, then its update and its approval, in FULL view when asked", async () => {
    await gw.raw("admin").createRollout(createRequest("w-one"));
    const w = openWatch(gw.raw("user"), { id: "w-one", workspaceScope: scope, view: RolloutView.FULL });
    try {
      const first = await w.next();
      expect(first.initial).toBe(true);
      expect(first.rollout?.resourceVersion).toBe(1n);
      expect(first.rollout?.stateJson).toBe(stateJson("w-one", { phase: Phase.RUNNING, wavesTotal: 3, targets: 6 }));
      await gw.raw("admin").updateRollout(updateRequest("w-one", 1n, awaiting));
      const updated = await w.next();
      expect(updated.initial).toBe(false);
      expect(updated.rollout?.resourceVersion).toBe(2n);
      expect(updated.rollout?.summary?.awaitingApproval).toBe(true);
      expect(updated.rollout?.stateJson).toBe(stateJson("w-one", awaiting));
      await gw.raw("admin").approveRollout({ id: "w-one", wave: 1, workspaceScope: scope });
      const approved = await w.next();
      expect(approved.rollout?.resourceVersion).toBe(3n);
      expect(approved.rollout?.approvals.map((a) => a.wave)).toEqual([1]);
      // Another rollout's change is not this watch's.
      await gw.raw("admin").createRollout(createRequest("w-one-other"));
      expect(await w.quiet()).toBe(true);
    } finally {
      w.stop();
    }
  });

  it("watching a rollout that does not exist, or of a workspace the caller cannot see, is NOT_FOUND", async () => {
    for (const [who, id] of [["user", "w-none"], ["otherAdmin", "w-one"]] as const) {
      const w = openWatch(gw.raw(who), { id, workspaceScope: scope });
      const err = await w.next().then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(err?.code).toBe(Code.NotFound);
      expect(err?.rawMessage).toBe(`rollout "${id}" not found`);
    }
  });

  it("a watch of a workspace sends its rollouts newest first, initial_done, then creations, updates and approvals there only", async () => {
    const ws = "team-a";
    await gw.raw("admin").createRollout(createRequest("w-a1", { workspace: ws }));
    await new Promise((r) => setTimeout(r, 3));
    await gw.raw("admin").createRollout(createRequest("w-a2", { workspace: ws }));
    const w = openWatch(gw.raw("admin"), { workspaceScope: workspaceScope(ws) });
    try {
      const initial = [await w.next(), await w.next()];
      expect(initial.map((m) => [m.rollout?.id, m.initial])).toEqual([["w-a2", true], ["w-a1", true]]);
      expect(initial[0]!.rollout?.stateJson).toBe("");
      const done = await w.next();
      expect(done.initialDone).toBe(true);
      expect(done.rollout).toBeUndefined();

      await gw.raw("admin").createRollout(createRequest("w-default")); // another workspace
      await gw.raw("admin").createRollout(createRequest("w-a3", { workspace: ws }));
      const created = await w.next();
      expect([created.rollout?.id, created.rollout?.resourceVersion, created.initial]).toEqual(["w-a3", 1n, false]);
      await gw.raw("admin").updateRollout(updateRequest("w-a1", 1n, awaiting, { workspace: ws }));
      expect([(await w.next()).rollout?.id]).toEqual(["w-a1"]);
      await gw.raw("admin").approveRollout({ id: "w-a1", wave: 1, workspaceScope: workspaceScope(ws) });
      const approved = await w.next();
      expect([approved.rollout?.id, approved.rollout?.resourceVersion, approved.rollout?.approvals.length]).toEqual(["w-a1", 3n, 1]);
      expect(await w.quiet()).toBe(true);
    } finally {
      w.stop();
    }
  });

  it("a watch of all workspaces sees only the caller's workspaces", async () => {
    const w = openWatch(gw.raw("otherAdmin"), { workspaceScope: allWorkspacesScope() });
    try {
      expect((await w.next()).initialDone).toBe(true); // nothing yet in team-b
      await gw.raw("admin").createRollout(createRequest("w-hidden"));
      await gw.raw("otherAdmin").createRollout(createRequest("w-b", { workspace: "team-b" }));
      expect((await w.next()).rollout?.id).toBe("w-b");
    } finally {
      w.stop();
    }
  });

  it("a watch of many in FULL view is INVALID_ARGUMENT", async () => {
    const w = openWatch(gw.raw("user"), { workspaceScope: scope, view: RolloutView.FULL });
    const err = await w.next().then(() => undefined, (e: unknown) => ConnectError.from(e));
    expect(err?.code).toBe(Code.InvalidArgument);
    expect(err?.rawMessage).toContain("view FULL needs an id");
  });

  it("open watches count against the caller's concurrent wait limit, and a closed one frees its slot", async () => {
    const own = await startTestGateway("sqlite", { limits: { maxWaitersPerCaller: 2 } });
    try {
      const watches = [openWatch(own.raw("user"), { workspaceScope: scope }), openWatch(own.raw("user"), { workspaceScope: scope })];
      for (const w of watches) expect((await w.next()).initialDone).toBe(true);
      const third = openWatch(own.raw("user"), { workspaceScope: scope });
      const err = await third.next().then(() => undefined, (e: unknown) => ConnectError.from(e));
      expect(err?.code).toBe(Code.ResourceExhausted);
      watches[0]!.stop();
      // The server learns of the cancel asynchronously: a new watch gets the slot within a moment.
      let ok = false;
      for (let i = 0; i < 50 && !ok; i++) {
        const again = openWatch(own.raw("user"), { workspaceScope: scope });
        ok = await again.next().then((m) => m.initialDone, () => false);
        again.stop();
        if (!ok) await new Promise((r) => setTimeout(r, 20));
      }
      expect(ok).toBe(true);
      watches[1]!.stop();
    } finally {
      await own.close();
    }
  });

  it("a watch ends with UNAVAILABLE when the gateway shuts down", async () => {
    const own = await startTestGateway();
    try {
      await own.raw("admin").createRollout(createRequest("w-down"));
      const w = openWatch(own.raw("user"), { id: "w-down", workspaceScope: scope });
      expect((await w.next()).initial).toBe(true);
      const ended = w.next(10_000).then(() => undefined, (e: unknown) => ConnectError.from(e));
      await own.restart();
      expect((await ended)?.code).toBe(Code.Unavailable);
    } finally {
      await own.close();
    }
  });
});

describe("on two PostgreSQL replicas", () => {
  let pair: ReplicaPair;
  beforeAll(async () => {
    pair = await startReplicaPair();
  });
  afterAll(() => pair.close());

  it("a watcher on one replica sees a rollout created, updated and approved on the other", async () => {
    const client = (url: string) =>
      createConfigClient({ transport: createNodeTransport({ baseUrl: url, protocol: "grpc" }), token: TOKENS.admin }).raw(OpenShell);
    const one = client(pair.urls[0]);
    const two = client(pair.urls[1]);
    const w = openWatch(two, { workspaceScope: scope });
    try {
      expect((await w.next()).initialDone).toBe(true);
      await one.createRollout(createRequest("w-pg"));
      expect((await w.next()).rollout?.id).toBe("w-pg");
      await one.updateRollout(updateRequest("w-pg", 1n, awaiting));
      expect((await w.next()).rollout?.resourceVersion).toBe(2n);
      await one.approveRollout({ id: "w-pg", wave: 1, workspaceScope: scope });
      expect((await w.next()).rollout?.approvals).toHaveLength(1);
    } finally {
      w.stop();
    }
  });

  it("a replica whose LISTEN connection is cut listens again and its watcher gets the change it missed meanwhile", async () => {
    const client = (url: string) =>
      createConfigClient({ transport: createNodeTransport({ baseUrl: url, protocol: "grpc" }), token: TOKENS.admin }).raw(OpenShell);
    const one = client(pair.urls[0]);
    const w = openWatch(client(pair.urls[1]), { workspaceScope: scope });
    const db = new pg.Client({ connectionString: pair.dbUrl });
    await db.connect();
    try {
      while (!(await w.next()).initialDone);
      await one.createRollout(createRequest("w-cut"));
      expect((await w.next()).rollout?.id).toBe("w-cut");
      // The LISTEN connection (only the watching replica has one: the hub opens it with its first
      // watcher) is terminated; the write that follows notifies nobody, and only the re-read
      // after the reconnect can show it.
      const cut = await db.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'");
      expect(cut.rowCount).toBe(1);
      await one.updateRollout(updateRequest("w-cut", 1n, awaiting));
      const m = await w.next(10_000);
      expect([m.rollout?.id, m.rollout?.resourceVersion]).toEqual(["w-cut", 2n]);
    } finally {
      w.stop();
      await db.end();
    }
  });
});
