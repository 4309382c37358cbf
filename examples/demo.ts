// `npm start`: the end-to-end demo. Starts a gateway on an embedded SQLite file and reference
// supervisors, then uses the SDK to show one update of each kind: applied, degraded, failed,
// superseded, inactive, and a wait that times out and is resumed by idempotency key.

import { create } from "@bufbuild/protobuf";
import { CompletionTimeoutError, createConfigClient, type Completion, type SandboxPolicyInput } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, SandboxPhase, SandboxPolicySchema, workspaceScope } from "openshell-config/raw";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startLocalStack } from "./local-stack.js";
import { stopOnSignals } from "./stop-signals.js";

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const paint = (state: string) => {
  if (!process.stdout.isTTY) return state;
  const color = { applied: 32, failed: 31, superseded: 33, inactive: 36, cancelled: 35, pending: 90 }[state] ?? 0;
  return `\x1b[${color}m${state}\x1b[0m`;
};

function describe(c: Completion): string {
  // The time before the reason: a long reason would otherwise seem to end "… unreachable in 14 ms".
  // The outcome when it says more than the state ("degraded"), never an enum's "unspecified".
  const parts = [c.outcome === c.state || c.outcome === "unspecified" ? paint(c.state) : `${paint(c.state)} (${c.outcome})`];
  if (c.createdAt && c.completedAt) parts.push(`in ${c.completedAt.getTime() - c.createdAt.getTime()} ms`);
  if (c.error) parts.push(`— ${c.error}`);
  return parts.join(" ");
}

function policy(rules: Record<string, { host: string; protocol?: string }>, middleware?: string): SandboxPolicyInput {
  return create(SandboxPolicySchema, {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] },
    networkPolicies: Object.fromEntries(
      Object.entries(rules).map(([name, r]) => [name, { name, endpoints: [{ host: r.host, ports: [443], protocol: r.protocol ?? "" }], binaries: [{ path: "/usr/bin/git" }] }]),
    ),
    networkMiddlewares: middleware
      ? { audit: { name: "audit", middleware: "audit-log", config: { grpc_endpoint: middleware }, order: 1 } }
      : {},
  });
}

async function main(): Promise<void> {
  console.log(bold("openshell-config demo: one gateway (SQLite), reference supervisors, the SDK\n"));
  // The stack's folder is the demo's: removed when it succeeds, kept (and named) when it fails.
  const dir = mkdtempSync(join(tmpdir(), "openshell-demo-"));
  const stack = await startLocalStack({ sandboxes: ["web", "audited", "slow"], dir });
  let succeeded = false;
  const stop = async () => {
    await stack.stop();
    if (!succeeded) console.error(`the processes' logs are kept in ${stack.logFile}`);
    else rmSync(dir, { recursive: true, force: true });
  };
  stopOnSignals(stop, () => 130);
  try {
    const transport = createNodeTransport({ baseUrl: stack.url, protocol: "grpc" });
    const client = createConfigClient({ transport, token: stack.adminToken });
    const raw = client.raw(OpenShell);
    console.log(`gateway ${stack.url}`);

    const base = { github: { host: "api.github.com" } };
    // An unreachable middleware service: the sandbox runs, but degraded.
    const unreachable = "127.0.0.1:9";
    await raw.createSandbox({ name: "web", spec: { policy: policy(base) }, workspaceScope: workspaceScope() });
    await raw.createSandbox({ name: "audited", spec: { policy: policy(base, unreachable) }, workspaceScope: workspaceScope() });
    await raw.createSandbox({ name: "slow", spec: { policy: policy(base) }, workspaceScope: workspaceScope() });
    await raw.createSandbox({ name: "paused", spec: { policy: policy(base) }, workspaceScope: workspaceScope() });
    await raw.stopSandbox({ name: "paused", workspaceScope: workspaceScope() });
    stack.startSupervisor({ sandbox: "web", args: ["--apply-delay-ms", "150"] });
    stack.startSupervisor({ sandbox: "audited" });
    stack.startSupervisor({ sandbox: "slow", args: ["--apply-delay-ms", "1500"] });
    for (const name of ["web", "audited", "slow"]) {
      for (let i = 0; ; i++) {
        const phase = (await raw.getSandbox({ name, workspaceScope: workspaceScope() })).sandbox?.status?.phase;
        if (phase === SandboxPhase.READY) break;
        if (i > 300) throw new Error(`sandbox ${name} did not become READY; see ${stack.logFile}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    console.log("sandboxes web, audited, slow are READY (their supervisors applied the bootstrap); paused is STOPPED\n");

    const step = (n: number, title: string) => console.log(bold(`${n}. ${title}`));

    step(1, "applied: add a rule to web and wait for the sandbox to run it");
    const applied = await client.updatePolicy({ sandbox: "web", policy: policy({ ...base, npm: { host: "registry.npmjs.org" } }), wait: true });
    console.log(`   v${applied.policyVersion}: ${describe(applied.completion)}\n`);

    step(2, "degraded: audited's middleware service is unreachable");
    const degraded = await client.updatePolicy({ sandbox: "audited", policy: policy({ ...base, pypi: { host: "pypi.org" } }, unreachable), wait: true });
    console.log(`   v${degraded.policyVersion}: ${describe(degraded.completion)}\n`);

    step(3, "failed: web gets a rule its supervisor rejects (protocol ftp); web keeps its last good policy");
    const failed = await client.updatePolicy({ sandbox: "web", policy: policy({ ...base, files: { host: "files.example.com", protocol: "ftp" } }), wait: true });
    console.log(`   v${failed.policyVersion}: ${describe(failed.completion)}\n`);

    step(4, "superseded: two quick updates to web; the first is replaced before it is applied");
    const first = await client.updatePolicy({ sandbox: "web", policy: policy({ ...base, a: { host: "a.example.com" } }) });
    const second = await client.updatePolicy({ sandbox: "web", policy: policy({ ...base, b: { host: "b.example.com" } }) });
    const [c1, c2] = await Promise.all([client.awaitCompletion(first.handle), client.awaitCompletion(second.handle)]);
    console.log(`   v${first.policyVersion}: ${describe(c1)}`);
    console.log(`   v${second.policyVersion}: ${describe(c2)}\n`);

    step(5, "inactive: paused is stopped; the change is stored and applies when it starts");
    const inactive = await client.updatePolicy({ sandbox: "paused", policy: policy({ ...base, c: { host: "c.example.com" } }), wait: true });
    console.log(`   v${inactive.policyVersion}: ${describe(inactive.completion)}\n`);

    step(6, "a wait that times out, resumed by idempotency key (no second revision)");
    const change = { policy: policy({ ...base, d: { host: "d.example.com" } }) };
    const idempotencyKey = `demo-${Date.now()}`;
    try {
      await client.updatePolicy({ sandbox: "slow", ...change, idempotencyKey, wait: { timeoutMs: 400 } });
      console.log("   (the supervisor was faster than the timeout)");
    } catch (err) {
      if (!(err instanceof CompletionTimeoutError)) throw err;
      console.log(`   timed out after 400 ms: operation ${err.operationId ?? "(id not yet known)"} keeps running`);
      const resumed = await client.awaitCompletion({ sandbox: "slow", idempotencyKey, request: change }, { timeoutMs: 10_000 });
      const versions = (await raw.listSandboxPolicies({ sandbox: "slow", workspaceScope: workspaceScope() })).revisions.map((r) => r.version);
      console.log(`   resumed by key: ${describe(resumed)}; slow has policy versions ${versions.join(", ")}`);
    }
    console.log(bold("\ndone."));
    succeeded = true;
  } finally {
    await stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
