// A gateway in a process of its own for the supervisor-stream load tests, so that its heap can be
// measured without the test's own allocations in it: the production wiring on SQLite in a temp
// directory, tokens from the environment, and an IPC channel (no network endpoint) over which the
// parent asks for the heap after a full garbage collection. Run with --expose-gc.
//
// Environment: OSC_STREAMS_TOKENS (JSON auth-file entries), OSC_STREAMS_OPTIONS (JSON, spread into
// GatewayOptions, e.g. `{"session":{"writeTimeoutMs":2000}}`).

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { setImmediate as nextTurn } from "node:timers/promises";
import { parseAuthFile } from "../../src/auth/auth-file.js";
import { createGateway, type GatewayOptions } from "../../src/gateway.js";
import { createLogger } from "../../src/observability/logger.js";
import { createMetrics } from "../../src/observability/metrics.js";
import { openStore } from "../../src/store/open-store.js";
import { serveGateway } from "../serve-gateway.js";

/** What the parent asks over IPC. */
export type StreamsRequest = { readonly type: "heap" } | { readonly type: "loop" } | { readonly type: "close" };
/** What the child answers. */
export type StreamsReply =
  | { readonly type: "ready"; readonly url: string }
  | { readonly type: "heap"; readonly heapUsed: number; readonly rss: number; readonly sessions: number }
  | { readonly type: "loop"; readonly maxMs: number; readonly p99Ms: number }
  | { readonly type: "closed" };

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc || !process.send) throw new Error("run with --expose-gc and an IPC channel");
const send = (reply: StreamsReply, then?: () => void) => process.send!(reply, undefined, {}, then);

const dir = mkdtempSync(join(tmpdir(), "osc-streams-"));
const store = await openStore(`sqlite:${join(dir, "gateway.db")}`);
const metrics = createMetrics();
const logger = createLogger({ level: "warn" });
const auth = parseAuthFile({ tokens: JSON.parse(process.env.OSC_STREAMS_TOKENS ?? "[]") as unknown[] });
const extra = JSON.parse(process.env.OSC_STREAMS_OPTIONS ?? "{}") as Partial<GatewayOptions>;
const gateway = createGateway({ store, logger, metrics, auth, ...extra });
await gateway.start();
const server = await serveGateway(gateway, logger, metrics);

async function heap() {
  // Several rounds: finalizers and weak callbacks free more on the next collection.
  for (let i = 0; i < 4; i++) {
    gc!();
    await nextTurn();
  }
  const m = process.memoryUsage();
  return { heapUsed: m.heapUsed, rss: m.rss, sessions: gateway.sessions.size };
}

// How long the event loop was held up since the last "loop" question (what delays every request).
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

process.on("message", (msg: StreamsRequest) => {
  void (async () => {
    if (msg.type === "loop") {
      send({ type: "loop", maxMs: loop.max / 1e6, p99Ms: loop.percentile(99) / 1e6 });
      loop.reset();
    }
    if (msg.type === "heap") send({ type: "heap", ...(await heap()) });
    if (msg.type === "close") {
      await server.close({ graceMs: 500 });
      await store.close();
      rmSync(dir, { recursive: true, force: true });
      send({ type: "closed" }, () => process.exit(0));
    }
  })();
});
// A parent that dies (a killed test run) must not leave this gateway running.
process.once("disconnect", () => process.exit(1));
send({ type: "ready", url: server.url });
