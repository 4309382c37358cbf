// The parent side of the supervisor-stream load tests: starts supervisor-streams-gateway.ts in a
// child process, probes Health while streams are open (see ../delivery/raw-supervisor-stream.ts
// for the streams), and reads the heap, the event loop's delay and /metrics.

import { fork, type ChildProcess } from "node:child_process";
import * as http2 from "node:http2";
import { fileURLToPath } from "node:url";
import { envelope } from "./raw-wire.js";
import type { StreamsReply, StreamsRequest } from "./supervisor-streams-gateway.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const entry = fileURLToPath(new URL("./supervisor-streams-gateway.ts", import.meta.url));
const HEALTH = "/openshell.v1.OpenShell/Health";

export interface StreamsGateway {
  readonly url: string;
  readonly child: ChildProcess;
  /** Heap used after full garbage collections, and the registry's session count. */
  heap(): Promise<{ heapUsed: number; rss: number; sessions: number }>;
  /** The event loop's longest and p99 delay (ms) since the last call. */
  loop(): Promise<{ maxMs: number; p99Ms: number }>;
  /** The value of a gauge on /metrics (read with `token`), or undefined when it is not exported. */
  metric(name: string, token: string): Promise<number | undefined>;
  close(): Promise<void>;
}

/** Starts the gateway in a child process with `tokens` as its auth file and `options` spread into GatewayOptions. */
export async function startStreamsGateway(tokens: readonly object[], options: object = {}, heapMb = 1024): Promise<StreamsGateway> {
  const child = fork(entry, [], {
    cwd: root,
    execArgv: ["--expose-gc", `--max-old-space-size=${heapMb}`, "--import", "tsx"],
    env: { ...process.env, OSC_STREAMS_TOKENS: JSON.stringify(tokens), OSC_STREAMS_OPTIONS: JSON.stringify(options) },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const exited = new Promise<never>((_, reject) => child.once("exit", (code, signal) => reject(new Error(`gateway exited (${code ?? signal})`))));
  exited.catch(() => undefined);
  const next = <T extends StreamsReply["type"]>(type: T) =>
    Promise.race([
      new Promise<Extract<StreamsReply, { type: T }>>((resolve) => {
        const on = (msg: StreamsReply) => {
          if (msg.type !== type) return;
          child.off("message", on);
          resolve(msg as Extract<StreamsReply, { type: T }>);
        };
        child.on("message", on);
      }),
      exited,
    ]);
  const ask = (req: StreamsRequest) => child.send(req);
  const { url } = await next("ready");
  return {
    url,
    child,
    async heap() {
      const reply = next("heap");
      ask({ type: "heap" });
      const { heapUsed, rss, sessions } = await reply;
      return { heapUsed, rss, sessions };
    },
    async loop() {
      const reply = next("loop");
      ask({ type: "loop" });
      const { maxMs, p99Ms } = await reply;
      return { maxMs, p99Ms };
    },
    async metric(name, token) {
      const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      const text = await res.text();
      const line = text.split("\n").find((l) => l.startsWith(`${name} `));
      return line === undefined ? undefined : Number(line.slice(name.length + 1));
    },
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const done = new Promise((resolve) => child.once("exit", resolve));
      ask({ type: "close" });
      // The child exits once it has closed; one that does not within 10 s is killed.
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await done;
      clearTimeout(timer);
    },
  };
}

/** Calls Health every `everyMs` until stopped; the latencies in ms (a failed call counts as its time). */
export function probeHealth(url: string, everyMs = 50): { stop(): Promise<{ latencies: number[]; failures: number }> } {
  const connect = () => {
    const s = http2.connect(url);
    s.on("error", () => undefined);
    return s;
  };
  let session = connect();
  const latencies: number[] = [];
  let failures = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      // A connection the gateway closed (it is shutting down) counts as a failure, and a new one is opened.
      if (session.destroyed || session.closed) session = connect();
      const ok = await new Promise<boolean>((resolve) => {
        let s: http2.ClientHttp2Stream;
        try {
          s = session.request({ ":method": "POST", ":path": HEALTH, "content-type": "application/grpc+proto", te: "trailers" });
        } catch {
          return resolve(false);
        }
        let status: string | undefined;
        const timer = setTimeout(() => {
          s.close(http2.constants.NGHTTP2_CANCEL);
          resolve(false);
        }, 10_000);
        s.on("response", (h) => (status = h["grpc-status"] === undefined ? status : String(h["grpc-status"])));
        s.on("trailers", (h) => (status = String(h["grpc-status"])));
        s.on("data", () => undefined);
        s.on("error", () => undefined);
        s.on("close", () => {
          clearTimeout(timer);
          resolve(status === "0");
        });
        s.end(envelope(new Uint8Array(0)));
      });
      latencies.push(performance.now() - started);
      if (!ok) failures++;
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      session.close();
      return { latencies, failures };
    },
  };
}

/** The q-quantile (0..1) of `values`. */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}
