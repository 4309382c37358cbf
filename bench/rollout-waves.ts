// The progressive half of the rollout benchmark (bench/rollout.ts starts the stack and calls
// these): one policy change to the whole fleet in three waves (a canary, 10%, the rest) with
// health gates and automatic rollback armed, measured beside a one-wave rollout of the same
// fleet at the same concurrency (the waves' floor: what gates, before-state reads and the wait
// between waves cost on top); and a rollout whose last wave fails its gate, so that every
// sandbox it changed is rolled back, each checked at the gateway afterwards.

import { create } from "@bufbuild/protobuf";
import type { ConfigClient, PolicyMergeOperationInput } from "openshell-config";
import { OpenShell, SandboxPhase, SandboxPolicySchema, workspaceScope, type SandboxPolicy } from "openshell-config/raw";
import { rollout, type RolloutEvent, type RolloutResult } from "openshell-config/rollout";
import type { LocalStack } from "../examples/local-stack.js";

/** One three-wave rollout and the one-wave rollout run right after it. */
export interface WavesRow {
  readonly run: number;
  readonly concurrency: number;
  readonly waved: RolloutResult;
  readonly plain: RolloutResult;
  /** Per wave: sandboxes, ms from wave-started to its gate, ms reading before-state (wave-started → first sent). */
  readonly perWave: { sandboxes: number; ms: number; beforeMs: number }[];
}

/** The rollback run: a gate failing in the last wave, then every changed sandbox returned. */
export interface RollbackRow {
  readonly count: number;
  readonly result: RolloutResult;
  /** From the rollout's call to the failed gate. */
  readonly rolloutMs: number;
  /** From rollback-started to the result. */
  readonly rollbackMs: number;
  /** Sandboxes whose desired version is exactly before + 2 (the change and its rollback) and whose policy is the one before. */
  readonly verified: number;
}

/** Three-wave rollouts (canary, 10%, the rest), each followed by a one-wave rollout of the same fleet. */
export async function runWaves(
  client: ConfigClient,
  o: { labelSelector: string; count: number; concurrency: number; runs: number; policy: (n: number) => SandboxPolicy },
): Promise<WavesRow[]> {
  const rows: WavesRow[] = [];
  let n = 0;
  for (let run = 1; run <= o.runs; run++) {
    const marks: { type: string; wave?: number; at: number }[] = [];
    const waved = await rollout(client, {
      labelSelector: o.labelSelector,
      policy: o.policy(++n),
      concurrency: o.concurrency,
      waves: [1, "10%", "100%"],
      rollback: "on-halt",
      waitTimeoutMs: 120_000,
      onProgress: (e: RolloutEvent) => {
        if (e.type === "wave-started" || e.type === "gate") marks.push({ type: e.type, wave: e.wave, at: Date.now() });
        else if (e.type === "sent" && marks.at(-1)?.type === "wave-started") marks.push({ type: "sent", at: Date.now() });
      },
    });
    check(waved, o.count, `three-wave rollout ${run}`);
    const plain = await rollout(client, { labelSelector: o.labelSelector, policy: o.policy(++n), concurrency: o.concurrency, waitTimeoutMs: 120_000 });
    check(plain, o.count, `one-wave rollout ${run}`);
    const perWave = waved.waves.map((w, i) => {
      const start = marks.findIndex((m) => m.type === "wave-started" && m.wave === i);
      const gate = marks.find((m) => m.type === "gate" && m.wave === i);
      const firstSent = marks[start + 1]?.type === "sent" ? marks[start + 1]!.at : marks[start]!.at;
      return { sandboxes: w.sandboxes.length, ms: (gate?.at ?? 0) - marks[start]!.at, beforeMs: firstSent - marks[start]!.at };
    });
    rows.push({ run, concurrency: o.concurrency, waved, plain, perWave });
    process.stderr.write(`three waves run ${run}: ${waved.durationMs} ms (one wave: ${plain.durationMs} ms)\n`);
  }
  return rows;
}

function check(result: RolloutResult, count: number, what: string): void {
  if (result.phase !== "complete" || result.counts.byState.applied !== count) {
    throw new Error(`${what}: phase ${result.phase}, ${JSON.stringify(result.counts)}${result.gateFailure ? `, ${result.gateFailure.reason}` : ""}`);
  }
}

const withApi = (protocol: string): SandboxPolicy =>
  create(SandboxPolicySchema, {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp"] },
    networkPolicies: {
      github: { name: "github", endpoints: [{ host: "github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] },
      api: { name: "api", endpoints: [{ host: "api.example.com", ports: [443], protocol }], binaries: [{ path: "/usr/bin/git" }] },
    },
  });

// L7 rules on the "api" endpoint: valid where it speaks REST, rejected where it is plain L4.
const addL7: PolicyMergeOperationInput[] = [
  { operation: { case: "addAllowRules", value: { target: { ruleName: "api", anyBinary: true }, rules: [{ allow: { method: "GET", path: "/v1/**" } }] } } },
];

/**
 * `names.length` sandboxes on their own supervisor process; the last one's "api" endpoint is L4,
 * so the change is invalid there. Two waves: every other sandbox, then that one — its gate fails
 * and the rollout rolls every sandbox back.
 */
export async function runRollback(client: ConfigClient, stack: LocalStack, names: readonly string[], concurrency: number): Promise<RollbackRow> {
  const raw = client.raw(OpenShell);
  const bad = names.at(-1)!;
  for (let i = 0; i < names.length; i += 25) {
    await Promise.all(
      names.slice(i, i + 25).map((name) => raw.createSandbox({ name, labels: { env: "bench-rb" }, spec: { policy: withApi(name === bad ? "" : "rest") }, workspaceScope: workspaceScope() })),
    );
  }
  const prefix = names[0]!.replace(/\d+$/, "");
  stack.startSupervisor({ fleet: { prefix, count: names.length } });
  for (;;) {
    const page = await raw.listSandboxes({ pageSize: 1000, labelSelector: "env=bench-rb", workspaceScope: workspaceScope() });
    if (page.sandboxes.filter((s) => s.status?.phase === SandboxPhase.READY).length === names.length) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const versions = async () => {
    const page = await raw.listSandboxes({ pageSize: 1000, labelSelector: "env=bench-rb", workspaceScope: workspaceScope() });
    return new Map(page.sandboxes.map((s) => [s.metadata!.name, s.status!.desiredPolicyVersion]));
  };
  const before = await versions();
  const t0 = Date.now();
  let gateAt = 0;
  let rollbackAt = 0;
  const result = await rollout(client, {
    sandboxes: names,
    mergeOperations: addL7,
    concurrency,
    waves: [names.slice(0, -1), [bad]],
    rollback: "on-halt",
    waitTimeoutMs: 120_000,
    onProgress: (e) => {
      if (e.type === "gate" && e.verdict === "failed") gateAt = Date.now();
      if (e.type === "rollback-started") rollbackAt = Date.now();
    },
  });
  const end = Date.now();
  if (result.phase !== "rolled-back" || result.rollback?.rolledBack !== names.length) {
    throw new Error(`rollback run: phase ${result.phase}, rollback ${JSON.stringify(result.rollback)}`);
  }
  const after = await versions();
  let verified = 0;
  for (const name of names) {
    if (after.get(name) !== before.get(name)! + 2) continue;
    const cfg = await client.getConfig({ sandbox: name });
    const rules = cfg.desired.policy?.networkPolicies.api?.endpoints[0]?.rules.length;
    if (rules === 0) verified++;
  }
  process.stderr.write(`rollback of ${names.length}: ${end - rollbackAt} ms, ${verified} verified\n`);
  return { count: names.length, result, rolloutMs: gateAt - t0, rollbackMs: end - rollbackAt, verified };
}

/** The report's sections for the two runs above. */
export function wavesReport(rows: readonly WavesRow[], rb: RollbackRow | undefined): string[] {
  const s = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`);
  const lines: string[] = [];
  if (rows.length > 0) {
    const count = rows[0]!.waved.counts.total;
    lines.push(
      "## Three waves with health gates",
      "",
      `\`waves: [1, "10%", "100%"], rollback: "on-halt"\` on the same ${count} sandboxes at concurrency ${rows[0]!.concurrency}: a canary, then up to 10%, then the rest; each wave's before-state is read (for the rollback) and its gate judged before the next starts. Beside it, a one-wave rollout of the same fleet at the same concurrency, run right after (its floor). Every sandbox must end \`applied\`, every gate pass.`,
      "",
      "| run | three waves | one wave | waves ÷ one wave | wave 1 (canary) | wave 2 | wave 3 | before-state reads (all waves) |",
      "| --- | --- | --- | --- | --- | --- | --- | --- |",
      ...rows.map((r) => {
        const w = (i: number) => (r.perWave[i] ? `${r.perWave[i]!.sandboxes} in ${s(r.perWave[i]!.ms)}` : "–");
        const beforeMs = r.perWave.reduce((a, x) => a + x.beforeMs, 0);
        return `| ${r.run} | ${s(r.waved.durationMs)} | ${s(r.plain.durationMs)} | **${(r.waved.durationMs / r.plain.durationMs).toFixed(2)}×** | ${w(0)} | ${w(1)} | ${w(2)} | ${s(beforeMs)} |`;
      }),
      "",
    );
  }
  if (rb) {
    lines.push(
      "## Automatic rollback",
      "",
      `${rb.count} more sandboxes on their own supervisor process; a merge that adds L7 rules, invalid on one of them (an L4 endpoint). Two waves: the ${rb.count - 1} others, then that one, whose gate fails; the rollout then rolls back every sandbox it changed (including the failed one) with one waited update each, \`expectedResourceVersion\`-checked.`,
      "",
      "| sandboxes | rollout to the failed gate | rollback | rolled back | left alone | verified at the gateway (version before + 2, policy as before) |",
      "| --- | --- | --- | --- | --- | --- |",
      `| ${rb.count} | ${s(rb.rolloutMs)} | **${s(rb.rollbackMs)}** | ${rb.result.rollback?.rolledBack ?? 0} | ${rb.result.rollback?.leftAlone.length ?? 0} | ${rb.verified} of ${rb.count} |`,
      "",
    );
  }
  return lines;
}
