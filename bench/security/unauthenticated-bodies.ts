// Measures what tokenless large requests cost the gateway, as the security review of issue 29
// measured it: N concurrent UpdateConfig requests of SIZE MiB without credentials, each on a
// connection of its own, against the gateway executable (SQLite, an auth file). Reports the time
// each took to be answered, Health's latency meanwhile (the Health RPC every 50 ms on a
// connection of its own) and the gateway's peak RSS.
//   node --import tsx bench/security/unauthenticated-bodies.ts [N=10] [SIZE=14.7] [h2|h1]

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { OpenShell } from "openshell-config/raw";
import { run } from "../../gateway/test/server/gateway-process.js";
import { envelope } from "../../gateway/test/reliability/raw-wire.js";
import { largeUpdateConfig, sendGrpcBody, sendOverHttp1 } from "../../gateway/test/reliability/unauthenticated-body.js";

const N = Number(process.argv[2] ?? 10);
const SIZE_MIB = Number(process.argv[3] ?? 14.7);
const protocol = process.argv[4] === "h1" ? "h1" : "h2";

const dir = mkdtempSync(join(tmpdir(), "osc-unauth-"));
try {
  const authFile = join(dir, "auth.json");
  writeFileSync(authFile, JSON.stringify({ tokens: [{ token: "bench-admin-token-0123456789", principal: "admin", role: "admin", workspaces: "*" }] }), { mode: 0o600 });
  const gw = run(["serve", "--db", `sqlite:${join(dir, "g.db")}`, "--port", "0", "--auth-file", authFile, "--max-message-size", "16MiB", "--log-level", "info"]);
  const ready = await gw.waitFor(/listening/);
  const url = String(ready.url);
  const pid = gw.child.pid!;
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0) / 1024;

  // Built before Health is polled: what this process spends is not the gateway's latency.
  const message = largeUpdateConfig(Math.round(SIZE_MIB * 1024 * 1024));
  const body = protocol === "h2" ? envelope(message) : message;
  const send = protocol === "h2" ? sendGrpcBody : sendOverHttp1;
  const health = createClient(OpenShell, createGrpcTransport({ baseUrl: url }));
  await health.health({});
  const baseRss = rss();
  let peakRss = baseRss;
  const latencies: number[] = [];
  let stop = false;
  const poll = (async () => {
    while (!stop) {
      const t = performance.now();
      await health.health({}).catch(() => undefined);
      latencies.push(performance.now() - t);
      peakRss = Math.max(peakRss, rss());
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  const started = performance.now();
  const answers = await Promise.all(Array.from({ length: N }, () => send(url, body)));
  const allMs = performance.now() - started;
  await new Promise((r) => setTimeout(r, 500));
  stop = true;
  await poll;
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const at = (xs: number[], q: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
  const times = answers.map((a) => a.answeredAfterMs);
  console.log(
    JSON.stringify(
      {
        protocol,
        requests: N,
        mib: SIZE_MIB,
        statuses: [...new Set(answers.map((a) => `${a.status} ${a.message.slice(0, 60)}`))],
        answeredMs: { min: Math.round(Math.min(...times)), median: Math.round(at(times, 0.5)), max: Math.round(Math.max(...times)) },
        allAnsweredMs: Math.round(allMs),
        bodyKiBTakenMax: Math.round(Math.max(...answers.map((a) => a.bodyBytesTaken)) / 1024),
        health: { samples: latencies.length, p50: Math.round(at(latencies, 0.5)), p99: Math.round(at(latencies, 0.99)), max: Math.round(Math.max(...latencies)) },
        rssMiB: { base: Math.round(baseRss), peak: Math.round(peakRss) },
      },
      null,
      1,
    ),
  );
  gw.child.kill("SIGTERM");
  await gw.exit;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
