// The fleet rollout benchmark: how long `rollout()` takes to bring one policy change to 1,000
// sandboxes (every one `applied`), on a local stack: one gateway on SQLite and one supervisor
// process hosting the whole fleet, all from source on this machine. Then the same fleet in three
// waves with health gates (beside a one-wave rollout at the same concurrency, its floor), and a
// rollout to 100 more sandboxes whose last wave fails its gate and is rolled back automatically;
// and the shared rollout record's cost (rollout-record.ts): the three waves with and without it.
// Writes bench/results/rollout.md.
//
//   node --import tsx bench/rollout.ts [--sandboxes 1000] [--concurrency 16,64] [--runs 2] [--rollback 100]

import { mkdtempSync, writeFileSync, existsSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { execFileSync } from "node:child_process";
import { create } from "@bufbuild/protobuf";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, SandboxPhase, SandboxPolicySchema, workspaceScope, type SandboxPolicy } from "openshell-config/raw";
import { rollout, type RolloutResult } from "openshell-config/rollout";
import { runRollback, runWaves, wavesReport, type RollbackRow, type WavesRow } from "./rollout-waves.js";
import { recordReport, runRecordCost, type RecordRow } from "./rollout-record.js";
import { fleetNames, startLocalStack } from "../examples/local-stack.js";

const { values } = parseArgs({
  options: { sandboxes: { type: "string" }, concurrency: { type: "string" }, runs: { type: "string" }, rollback: { type: "string" } },
});
const count = Number(values.sandboxes ?? 1000);
const concurrencies = (values.concurrency ?? "16,64").split(",").map(Number);
const runs = Number(values.runs ?? 2);
const rollbackCount = Number(values.rollback ?? 100);
const loadAtStart = loadavg()[0]!;

function fleetPolicy(rules: string[]): SandboxPolicy {
  return create(SandboxPolicySchema, {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp"] },
    networkPolicies: Object.fromEntries(
      rules.map((host) => [host, { name: host, endpoints: [{ host, ports: [443] }], binaries: [{ path: "/usr/bin/git" }] }]),
    ),
  });
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? 0;
};

async function main() {
  // Supervisor state on tmpfs when there is one, so its fsyncs are not what is measured.
  const base = existsSync("/dev/shm") ? "/dev/shm" : tmpdir();
  const dir = mkdtempSync(join(base, "openshell-rollout-bench-"));
  const names = fleetNames("fleet-", count);
  const rbNames = fleetNames("rb-", rollbackCount);
  const stack = await startLocalStack({ sandboxes: [...names, ...rbNames], dir, gatewayArgs: ["--log-level", "warn"] });
  const rows: { concurrency: number; run: number; result: RolloutResult; perSandbox: number[] }[] = [];
  let waves: WavesRow[] = [];
  let rollbackRow: RollbackRow | undefined;
  let record: RecordRow[] = [];
  try {
    const client = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, protocol: "grpc" }), token: stack.adminToken });
    const raw = client.raw(OpenShell);
    const setupStart = Date.now();
    for (let i = 0; i < names.length; i += 25) {
      await Promise.all(names.slice(i, i + 25).map((name) => raw.createSandbox({ name, labels: { env: "bench" }, spec: { policy: fleetPolicy(["github.com"]) }, workspaceScope: workspaceScope() })));
    }
    stack.startSupervisor({ fleet: { prefix: "fleet-", count } });
    for (;;) {
      const page = await raw.listSandboxes({ pageSize: 1000, labelSelector: "env=bench", workspaceScope: workspaceScope() });
      const ready = page.sandboxes.filter((s) => s.status?.phase === SandboxPhase.READY).length;
      if (ready === count) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    process.stderr.write(`${count} sandboxes ready after ${Date.now() - setupStart} ms\n`);

    let change = 0;
    for (const concurrency of concurrencies) {
      for (let run = 1; run <= runs; run++) {
        const policy = fleetPolicy(["github.com", `mirror-${++change}.example.com`]);
        const result = await rollout(client, { labelSelector: "env=bench", policy, concurrency, waitTimeoutMs: 120_000 });
        if (result.counts.byState.applied !== count) {
          const errors = result.sandboxes.flatMap((r) => (r.status === "error" ? [`${r.sandbox}: ${r.error.name}: ${r.error.message}`] : []));
          throw new Error(`rollout ${change}: ${JSON.stringify(result.counts)}\n${errors.slice(0, 5).join("\n")}`);
        }
        const perSandbox = result.sandboxes.map((r) => (r.status === "completed" ? r.durationMs : 0));
        rows.push({ concurrency, run, result, perSandbox });
        process.stderr.write(`concurrency ${concurrency} run ${run}: ${result.durationMs} ms\n`);
      }
    }
    const waveConcurrency = Math.max(...concurrencies);
    waves = await runWaves(client, { labelSelector: "env=bench", count, concurrency: waveConcurrency, runs, policy: (n) => fleetPolicy(["github.com", `wave-${n}.example.com`]) });
    record = await runRecordCost(client, { labelSelector: "env=bench", count, concurrency: waveConcurrency, runs: Math.max(runs, 3), policy: (n) => fleetPolicy(["github.com", `record-${n}.example.com`]) });
    rollbackRow = await runRollback(client, stack, rbNames, waveConcurrency);
  } finally {
    await stack.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  writeReport(rows, [...recordReport(record), ...wavesReport(waves, rollbackRow)]);
}

function writeReport(rows: { concurrency: number; run: number; result: RolloutResult; perSandbox: number[] }[], more: string[]) {
  let commit = "unknown";
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    // not a git checkout
  }
  const best = Math.min(...rows.map((r) => r.result.durationMs));
  const lines = [
    "# Fleet rollout benchmark",
    "",
    `${new Date().toISOString()} · ${cpus().length} cores (${cpus()[0]?.model ?? "?"}) · ${Math.round(totalmem() / 2 ** 30)} GB · Node ${process.version} · commit ${commit} · 1-min load average ${loadAtStart.toFixed(1)} at the start, ${loadavg()[0]!.toFixed(1)} at the end`,
    "",
    `\`node --import tsx bench/rollout.ts\`: one policy change to ${rows[0]?.result.counts.total ?? 0} sandboxes chosen by label, with \`rollout()\` from \`openshell-config/rollout\` (gRPC over HTTP/2 cleartext). One gateway (SQLite file) and one supervisor process hosting every sandbox, on this machine over loopback. Time = from the call to the result, including ListSandboxes; every sandbox must end \`applied\`. Other work on the machine skews these figures (a load average above the core count means other processes competed for the CPU).`,
    "",
    `**Fastest: ${rows[0]?.result.counts.total ?? 0} sandboxes in ${(best / 1000).toFixed(1)} s.**`,
    "",
    "| concurrency | run | total | sandboxes/s | per sandbox p50 | p95 | p99 | slowest |",
    "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map(({ concurrency, run, result, perSandbox }) =>
      `| ${concurrency} | ${run} | ${(result.durationMs / 1000).toFixed(1)} s | ${Math.round((result.counts.total / result.durationMs) * 1000)} | ${quantile(perSandbox, 0.5)} ms | ${quantile(perSandbox, 0.95)} ms | ${quantile(perSandbox, 0.99)} ms | ${result.slowest[0]?.sandbox} (${result.slowest[0]?.durationMs} ms) |`,
    ),
    "",
    ...more,
  ];
  const out = new URL("./results/rollout.md", import.meta.url);
  writeFileSync(out, lines.join("\n"));
  process.stdout.write(lines.join("\n"));
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
