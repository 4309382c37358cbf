// What the shared rollout record costs (bench/rollout.ts calls this): the same three-wave rollout
// of the whole fleet with the record (`share: "required"`: the lease, every durable state written
// to the gateway under compare-and-swap, the lease renewed) and without it (`share: "off"`, the
// floor: local state only), alternating, back to back, so both see the same machine. Reports the
// ratio first, then the times, the record writes (UpdateRollout calls) and the size of the
// record's state as stored.

import type { ConfigClient } from "openshell-config";
import { OpenShell, RolloutView, workspaceScope, type SandboxPolicy } from "openshell-config/raw";
import { rollout, type RolloutResult } from "openshell-config/rollout";

export interface RecordRow {
  readonly run: number;
  readonly shared: RolloutResult;
  readonly local: RolloutResult;
  /** State writes the shared run made (onState calls: each is one UpdateRollout before it). */
  readonly writes: number;
  /** Bytes of the shared record's state as stored (state_json; the change is stored once, apart). */
  readonly stateBytes: number;
  /** Bytes of the same state as a local state file holds it (every handle with its request). */
  readonly localBytes: number;
}

export async function runRecordCost(
  client: ConfigClient,
  o: { labelSelector: string; count: number; concurrency: number; runs: number; policy: (n: number) => SandboxPolicy },
): Promise<RecordRow[]> {
  const rows: RecordRow[] = [];
  let n = 0;
  for (let run = 1; run <= o.runs; run++) {
    const common = { labelSelector: o.labelSelector, concurrency: o.concurrency, waves: [1, "10%", "100%"] as const, waitTimeoutMs: 120_000 };
    let writes = 0;
    // Alternate which goes first, so neither always runs on a warmer process.
    const sharedRun = () =>
      rollout(client, { ...common, waves: [...common.waves], policy: o.policy(++n), share: "required", onState: () => void writes++ }).result;
    const localRun = () => rollout(client, { ...common, waves: [...common.waves], policy: o.policy(++n), share: "off" }).result;
    let shared: RolloutResult;
    let local: RolloutResult;
    if (run % 2 === 1) {
      shared = await sharedRun();
      local = await localRun();
    } else {
      local = await localRun();
      shared = await sharedRun();
    }
    for (const [what, r] of [["shared", shared], ["local", local]] as const) {
      if (r.phase !== "complete" || r.counts.byState.applied !== o.count) throw new Error(`${what} run ${run}: phase ${r.phase}, ${JSON.stringify(r.counts)}`);
    }
    const record = await client.raw(OpenShell).getRollout({ workspaceScope: workspaceScope(), id: shared.id, view: RolloutView.FULL });
    const stateBytes = Buffer.byteLength(record.rollout!.stateJson);
    const localBytes = Buffer.byteLength(JSON.stringify(shared.state));
    rows.push({ run, shared, local, writes, stateBytes, localBytes });
    process.stderr.write(`record run ${run}: shared ${shared.durationMs} ms, local ${local.durationMs} ms, ${writes} writes\n`);
  }
  return rows;
}

export function recordReport(rows: readonly RecordRow[]): string[] {
  if (rows.length === 0) return [];
  const s = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`);
  const sum = (f: (r: RecordRow) => number) => rows.reduce((a, r) => a + f(r), 0);
  const ratio = sum((r) => r.shared.durationMs) / sum((r) => r.local.durationMs);
  const count = rows[0]!.shared.counts.total;
  return [
    "## The shared rollout record's cost",
    "",
    `The same three-wave rollout (\`waves: [1, "10%", "100%"]\`) of the ${count} sandboxes at concurrency ${rows[0]!.shared.state.concurrency}, with the gateway's shared record (\`share: "required"\`: lease taken before sending, every durable state written with UpdateRollout under compare-and-swap, lease renewed and released) and without it (\`share: "off"\`: local state only, the floor), alternating which runs first. **Record / no record over all runs: ${ratio.toFixed(2)}×.**`,
    "",
    "| run | with record | without | ratio | state writes | record state as stored | the same state as a local file |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((r) => `| ${r.run} | ${s(r.shared.durationMs)} | ${s(r.local.durationMs)} | **${(r.shared.durationMs / r.local.durationMs).toFixed(2)}×** | ${r.writes} | ${(r.stateBytes / 1024).toFixed(0)} KiB | ${(r.localBytes / 1024).toFixed(0)} KiB |`),
    "",
  ];
}
