// Scratch: the reference supervisor's per-update work in one process, without a network: a real
// connection (supervisor/src/connection.ts) on a fake client that decodes each gateway message
// from its bytes and encodes each answer (as connect would), one sandbox, N policy updates, each
// a sandbox-config and a provider-environment ConfigUpdate; beside it the floor supervisor's
// session on the same fake client. Prints CPU µs per policy update of each.
//   node --import tsx bench/scratch/sup-apply.ts [N=20000] [ours|floor|both]
import { mkdtempSync, rmSync } from "node:fs";
import { fromBinary, fromJson, toBinary } from "@bufbuild/protobuf";
import { GatewayMessageSchema, SupervisorMessageSchema, type SupervisorMessage } from "openshell-config/raw";
import { answer, hello } from "../floor/answers.js";
import { AsyncQueue } from "../floor/queue.js";
import { runConnection, NO_FAULTS } from "../../supervisor/src/connection.js";
import { SimulatedSandbox } from "../../supervisor/src/sandbox.js";
import { StateDir } from "../../supervisor/src/runtime.js";
import { createLogger } from "../../supervisor/src/log.js";
// As the bench runs the supervisor: --log-level warn.
const silentLogger = createLogger({ level: "warn", sink: () => {} });

const N = Number(process.argv[2] ?? 20000);
const which = process.argv[3] ?? "both";
// Each policy has its own hash, as each update of the probe has.
const hashOf = (i: number) => i.toString(16).padStart(64, "0");
function snapshotJson(i: number) {
  return {
    policy: { version: 1, filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] }, networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] }, bench: { name: "bench", endpoints: [{ host: `x${i}.example.com`, ports: [443] }], binaries: [{ path: "/usr/bin/curl" }] } } },
    version: i + 1, policyHash: hashOf(i), configRevision: String(1000 + i), policySource: "POLICY_SOURCE_SANDBOX", providerEnvRevision: "1", workspace: "default", policyValidationFailureMode: "retain_last_valid",
  };
}
const bytes = (j: unknown) => toBinary(GatewayMessageSchema, fromJson(GatewayMessageSchema, j as never));
const accepted = bytes({ sessionAccepted: { sessionId: "s", configApplyEnabled: true, bootstrap: { sandboxConfig: snapshotJson(0), providerEnvironment: { providerEnvRevision: "1", policyHash: hashOf(0) } } } });
const updates: [Uint8Array, Uint8Array][] = [];
for (let i = 1; i <= N; i++) {
  updates.push([
    bytes({ configUpdate: { updateId: `u-${i}-a`, componentSequence: String(2 * i), sandboxConfig: snapshotJson(i) } }),
    bytes({ configUpdate: { updateId: `u-${i}-b`, componentSequence: String(2 * i + 1), providerEnvironment: { providerEnvRevision: "1", policyHash: hashOf(i) } } }),
  ]);
}

/**
 * A client whose ConnectSupervisor stream plays the gateway: the session answer, then each
 * update's two messages (decoded from their bytes) once both answers to the one before came
 * back (encoded as connect would). Resolves with CPU µs per policy update.
 */
function fakeClient(resolve: (us: number) => void) {
  let answered: (() => void) | undefined;
  let answers = 0;
  return {
    connectSupervisor(out: AsyncIterable<SupervisorMessage>) {
      void (async () => {
        for await (const m of out) {
          toBinary(SupervisorMessageSchema, m);
          if (m.payload.case === "configUpdateResult" && ++answers % 2 === 0) answered?.();
        }
      })();
      return (async function* () {
        yield fromBinary(GatewayMessageSchema, accepted);
        await new Promise((r) => setTimeout(r, 50));
        const cpu0 = process.cpuUsage();
        for (const [a, b] of updates) {
          const both = new Promise<void>((r) => (answered = r));
          yield fromBinary(GatewayMessageSchema, a);
          yield fromBinary(GatewayMessageSchema, b);
          await both;
        }
        const c = process.cpuUsage(cpu0);
        resolve((c.user + c.system) / N);
      })();
    },
  };
}

async function ours(): Promise<number> {
  const dir = mkdtempSync("/dev/shm/sup-apply-");
  const stateDir = new StateDir(dir);
  // NOFILE=1: state files are not written (what the rest of the apply costs).
  if (process.env.NOFILE) stateDir.writeJson = () => Promise.resolve();
  const sandbox = new SimulatedSandbox({ name: "s0000", stateDir, logger: silentLogger });
  await sandbox.start();
  // STUB=1: the sandbox answers every snapshot with the decision of the first (what the connection costs alone).
  if (process.env.STUB) {
    const first = { sandbox: undefined as unknown, provider: undefined as unknown };
    const realS = sandbox.applySandboxConfig.bind(sandbox), realP = sandbox.applyProviderEnvironment.bind(sandbox);
    // STUB=sandbox or STUB=provider stubs only that component.
    if (process.env.STUB !== "provider") sandbox.applySandboxConfig = async (s, o) => (first.sandbox ??= await realS(s, o)) as never;
    if (process.env.STUB !== "sandbox") sandbox.applyProviderEnvironment = async (s, o) => (first.provider ??= await realP(s, o)) as never;
  }
  const us = await new Promise<number>((resolve) => {
    void runConnection({ client: fakeClient(resolve) as never, url: "fake", sandboxId: "s0000", instanceId: "i", epoch: 1n, token: undefined, sandbox, logger: silentLogger, faults: NO_FAULTS, acceptTimeoutMs: 60_000, stopSignal: new AbortController().signal });
  });
  rmSync(dir, { recursive: true, force: true });
  return us;
}

/** The floor supervisor's session (bench/floor/supervisor.ts, its answers.ts) on the same fake client. */
async function floor(): Promise<number> {
  return new Promise<number>((resolve) => {
    const out = new AsyncQueue<SupervisorMessage>();
    out.push(hello("s0000", "i"));
    void (async () => {
      for await (const m of fakeClient(resolve).connectSupervisor(out)) answer(m, "s0000", "i", (r) => out.push(r));
    })();
  });
}

for (let round = 0; round < 3; round++) {
  const line: string[] = [];
  if (which !== "floor") line.push(`ours ${(await ours()).toFixed(1)} µs`);
  if (which !== "ours") line.push(`floor ${(await floor()).toFixed(1)} µs`);
  (globalThis as { gc?: () => void }).gc?.();
  const heap = (globalThis as { gc?: unknown }).gc ? `; heap after a full GC ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB` : "";
  console.log(`round ${round}: ${line.join(", ")} per policy update (two messages answered)${heap}`);
}
if ((globalThis as any).__dumpPromoted) await (globalThis as any).__dumpPromoted();
if (process.env.SNAP) { const v8 = await import("node:v8"); console.log(v8.writeHeapSnapshot(process.env.SNAP)); }
process.exit(0);
