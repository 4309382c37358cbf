// Issue 29, finding 1: one supervisor token must not be able to run the gateway out of memory.
// A burst of ConnectSupervisor streams against a sandbox with a large policy (about 0.7 MiB):
// 200 whose peers vanish in the middle of their bootstrap, then 500 whose peers grant no
// flow-control window and never read. The gateway runs in a child process (its heap measured after full
// collections, over IPC); Health is called every 50 ms throughout. Afterwards every stream has
// ended (with a status, or reset), none is counted open, and the heap is back near its baseline.
// The disconnecting streams go first: the last zero-window stream standing, its sandbox's
// current session, ends only by the write bound, here its default (20 s).

import type * as http2 from "node:http2";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@connectrpc/connect";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { policy } from "../rpc/fixtures.js";
import { openSupervisorStream, zeroWindowSession, type RawStream } from "../delivery/raw-supervisor-stream.js";
import { probeHealth, quantile, startStreamsGateway, type StreamsGateway } from "./supervisor-streams-load.js";

const ADMIN = "streams-admin-token-0123456789abcdef";
const SUPERVISOR = "streams-supervisor-token-0123456789abcdef";
const TOKENS = [
  { token: ADMIN, principal: "alice", role: "admin", workspaces: "*" },
  { token: SUPERVISOR, principal: "supervisor:dev", role: "supervisor", workspace: "default", sandbox: "dev" },
];
const ZERO_WINDOW = 500;
const DISCONNECTING = 200;
/** 10,000 egress rules: about 0.7 MiB encoded. */
const RULES = 10_000;
const MiB = 1024 * 1024;

let gw: StreamsGateway;
beforeAll(async () => {
  // Before the fix 20 such streams held 0.5 GB; 500 would exhaust this heap and end the child.
  gw = await startStreamsGateway(TOKENS, {}, 1024);
  const admin = createClient(
    OpenShell,
    createGrpcTransport({
      baseUrl: gw.url,
      interceptors: [
        (next) => (req) => {
          req.header.set("authorization", `Bearer ${ADMIN}`);
          return next(req);
        },
      ],
    }),
  );
  const rules = Object.fromEntries(Array.from({ length: RULES }, (_, i) => [`rule-${i}`, `host-${i}.example.com`]));
  await admin.createSandbox({ name: "dev", spec: { policy: policy(rules) }, workspaceScope: workspaceScope() });
}, 30_000);
afterAll(async () => {
  await gw?.close();
});

/** Resolves when every stream has ended, or rejects naming how many are still open after `ms`. */
async function allEnded(streams: readonly RawStream[], ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (streams.some((s) => !s.isEnded())) {
    if (Date.now() > deadline) throw new Error(`${streams.filter((s) => !s.isEnded()).length} of ${streams.length} streams still open after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("a burst of supervisor streams that cannot take their bootstrap", () => {
  it(
    "ends every stream, leaves none counted open, keeps Health under a second at p99, and gives the memory back",
    async () => {
      const baseline = await gw.heap();
      await gw.loop();
      const health = probeHealth(gw.url);
      const sessions: http2.ClientHttp2Session[] = [];
      const streams: RawStream[] = [];
      for (let i = 0; i < ZERO_WINDOW + DISCONNECTING; i++) {
        const session = zeroWindowSession(gw.url);
        sessions.push(session);
        const stream = openSupervisorStream(session, SUPERVISOR, "dev");
        streams.push(stream);
        // Gone once the gateway has started writing the bootstrap (its headers went out first).
        if (i < DISCONNECTING) void stream.headers.then(() => session.destroy());
        if (i % 50 === 49) await new Promise((r) => setTimeout(r, 10));
      }
      // The default write bound (20 s) ends the last stream whose peer never reads.
      await allEnded(streams, 40_000).finally(() => health.stop());
      const { latencies, failures } = await health.stop();
      const loop = await gw.loop();
      // A peer that vanished is closed on its side at once; the gateway learns of it a moment later.
      await expect.poll(() => gw.metric("openshell_gateway_supervisor_streams", ADMIN), { timeout: 5_000 }).toBe(0);

      const ends = await Promise.all(streams.map((s) => s.ended));
      // A status (refused, replaced) or a reset; never a server fault.
      for (const end of ends) expect([undefined, Code.ResourceExhausted, Code.Aborted, Code.Canceled, Code.DeadlineExceeded]).toContain(end.status);
      console.log(
        `[streams] ${streams.length} streams ended: ${ends.filter((e) => e.status === undefined).length} reset, ` +
          `${ends.filter((e) => e.status !== undefined).length} with a status; Health n=${latencies.length} ` +
          `p50 ${quantile(latencies, 0.5).toFixed(0)} ms p99 ${quantile(latencies, 0.99).toFixed(0)} ms max ${Math.max(...latencies).toFixed(0)} ms; ` +
          `longest event-loop stall ${loop.maxMs.toFixed(0)} ms`,
      );
      expect(failures).toBe(0);
      expect(quantile(latencies, 0.99)).toBeLessThan(1_000);

      for (const s of sessions) s.destroy();
      await new Promise((r) => setTimeout(r, 500));
      const after = await gw.heap();
      console.log(`[streams] heap after GC: baseline ${(baseline.heapUsed / MiB).toFixed(1)} MiB, after ${(after.heapUsed / MiB).toFixed(1)} MiB`);
      expect(after.sessions).toBe(0);
      expect(after.heapUsed).toBeLessThan(baseline.heapUsed + 8 * MiB);
    },
    60_000,
  );
});
