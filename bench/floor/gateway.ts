// The floor gateway: the real gateway's shape and messages with none of its work. A connect-node
// h2c server (gRPC, the same adapter settings as gateway/src/server.ts) whose ConnectSupervisor
// accepts a hello with a bootstrap, counts the sandbox READY when its ConfigBootstrapResult comes
// back, and whose UpdateConfig pushes one ConfigUpdate carrying the request's policy as a
// SandboxConfigSnapshot on that sandbox's stream and answers when the ConfigUpdateResult comes
// back. No storage, validation, logging, metrics or auth; the only state is the open sessions.
// --provider-too: each UpdateConfig also pushes a ProviderEnvironmentSnapshot update (the one our
// gateway sends for a sandbox without providers: the sandbox's provider_env_revision, no values,
// the new policy hash; upstream's provider fingerprint includes the policy hash, so every policy
// change delivers one) and answers when both results are back: the protocol's two messages.
// --created P:N,...: the sandboxes the real run creates before its supervisors start (N named
// P0000…, as bench/lib/names.ts): ListSandboxes lists every one of them, PROVISIONING until its
// session answers the bootstrap, as the real gateway lists created sandboxes; without it, the
// listing holds the connected sessions only.
//   node --import tsx bench/floor/gateway.ts [--port N] [--expect-ready N] [--provider-too] [--created P:N,...]
// Prints {"type":"listening","port":N} on stdout once bound, {"type":"all-ready","at":ms}
// (Date.now()) the moment --expect-ready sessions have answered their bootstrap, and its counters
// ({"type":"stats",…}) for each "stats" line on stdin.

import { randomUUID } from "node:crypto";
import * as http2 from "node:http2";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { create } from "@bufbuild/protobuf";
import { durationFromMs, timestampNow } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, type ConnectRouter } from "@connectrpc/connect";
import { compressionBrotli, compressionGzip, connectNodeAdapter } from "@connectrpc/connect-node";
import {
  ConfigApplyOutcome,
  ConfigComponent,
  ConfigUpdateOperationState,
  ConfigUpdateWaitMode,
  GatewayMessageSchema,
  PolicyEnforcementState,
  ListSandboxesResponseSchema,
  OpenShell,
  PolicySource,
  ProviderEnvironmentSnapshotSchema,
  ProviderReadinessReason,
  SandboxConfigSnapshotSchema,
  SandboxPhase,
  SandboxSchema,
  ServiceStatus,
  UpdateConfigResponseSchema,
  type ConfigUpdateResult,
  type GatewayMessage,
  type SandboxPolicy,
  type SupervisorMessage,
} from "openshell-config/raw";
import { sandboxNames } from "../lib/names.js";
import { policyFor } from "../lib/policies.js";
import { AsyncQueue } from "./queue.js";

const { values } = parseArgs({ options: { port: { type: "string" }, "expect-ready": { type: "string" }, "provider-too": { type: "boolean" }, created: { type: "string" } } });
const expectReady = values["expect-ready"] === undefined ? 0 : Number(values["expect-ready"]);
const providerToo = values["provider-too"] === true;

// The same as gateway/src/server.ts: no compression below 1 MiB, 10,000 streams per connection.
const COMPRESS_MIN_BYTES = 1024 * 1024;
const READ_MAX_BYTES = 16 * 1024 * 1024;
const MAX_CONCURRENT_STREAMS = 10_000;
const HEARTBEAT_MS = 15_000;

interface Session {
  readonly id: string;
  readonly sandbox: string;
  readonly out: AsyncQueue<GatewayMessage>;
  ready: boolean;
  sequence: bigint;
  /** --provider-too: the provider component's own sequence (component_sequence is per component). */
  providerSequence: bigint;
  version: number;
  /** The policy in force, for ListSandboxes (the bootstrap's, then each update's). */
  policy: SandboxPolicy;
  policyHash: string;
  readonly createdTime: ReturnType<typeof timestampNow>;
  readonly waiters: Map<string, { resolve: (r: ConfigUpdateResult) => void; reject: (e: unknown) => void }>;
}

const sessions = new Map<string, Session>();
/** --created: every created sandbox by name, in the real gateway's listing order (by name), with an id of the same length as its. */
const created = new Map(
  (values.created ?? "")
    .split(",")
    .filter((g) => g !== "")
    .flatMap((g) => sandboxNames(g.slice(0, g.lastIndexOf(":")), Number(g.slice(g.lastIndexOf(":") + 1))))
    .sort()
    .map((name) => [name, { id: randomUUID(), createdTime: timestampNow() }] as const),
);
const createdNames = [...created.keys()];
let sessionCount = 0;
let readyCount = 0;
let unmatched = 0;
/** What a sandbox was created with in the real stacks (bench/client.ts): the bootstrap's policy. */
const initialPolicy: SandboxPolicy = policyFor("initial") as SandboxPolicy;

function snapshot(policy: SandboxPolicy | undefined, version: number, policyHash: string) {
  return create(SandboxConfigSnapshotSchema, {
    policy,
    version,
    policyHash,
    configRevision: BigInt(version),
    policySource: PolicySource.SANDBOX,
    providerEnvRevision: 1n,
    workspace: "default",
    policyValidationFailureMode: "retain_last_valid",
  });
}

/** --provider-too: what gateway/src/delivery/provider-snapshot.ts builds for a sandbox without providers. */
function providerSnapshot(policyHash: string) {
  return create(ProviderEnvironmentSnapshotSchema, {
    providerEnvRevision: 1n,
    values: [],
    dynamicCredentials: {},
    providerAttachmentEpoch: "",
    policyHash,
    readinessReason: ProviderReadinessReason.UNSPECIFIED,
  });
}

function onSupervisorMessage(s: Session, m: SupervisorMessage): void {
  const p = m.payload;
  if (p.case === "configUpdateResult") {
    const w = s.waiters.get(p.value.updateId);
    if (!w) {
      unmatched += 1;
      process.stderr.write(`floor gateway: a result for an unknown update ${p.value.updateId} (${s.sandbox})\n`);
      return;
    }
    s.waiters.delete(p.value.updateId);
    w.resolve(p.value);
  } else if (p.case === "configBootstrapResult") {
    if (s.ready) return;
    s.ready = true;
    readyCount += 1;
    if (readyCount === expectReady) process.stdout.write(`${JSON.stringify({ type: "all-ready", at: Date.now() })}\n`);
  }
  // heartbeat, runtimeReady: nothing to do.
}

function routes(router: ConnectRouter): void {
  router.service(OpenShell, {
    health() {
      return { status: ServiceStatus.HEALTHY, version: "floor" };
    },

    async *connectSupervisor(requests) {
      const it = requests[Symbol.asyncIterator]();
      const first = await it.next();
      if (first.done || first.value.payload.case !== "hello") throw new ConnectError("expected a hello", Code.InvalidArgument);
      const hello = first.value.payload.value;
      const s: Session = { id: `s${++sessionCount}`, sandbox: hello.sandboxId, out: new AsyncQueue(), ready: false, sequence: 0n, providerSequence: 0n, version: 1, policy: initialPolicy, policyHash: "initial", createdTime: timestampNow(), waiters: new Map() };
      sessions.set(s.sandbox, s);
      yield create(GatewayMessageSchema, {
        payload: {
          case: "sessionAccepted",
          value: {
            sessionId: s.id,
            bootstrap: { sandboxConfig: snapshot(initialPolicy, 1, "initial"), providerEnvironment: { providerEnvRevision: 1n } },
            configApplyEnabled: true,
            heartbeatInterval: durationFromMs(HEARTBEAT_MS),
          },
        },
      });
      // Incoming messages are read beside the outgoing queue; the stream ends with either side.
      void (async () => {
        try {
          for (;;) {
            const r = await it.next();
            if (r.done) break;
            onSupervisorMessage(s, r.value);
          }
        } catch {
          // the stream failed: end it below
        } finally {
          s.out.close();
        }
      })();
      try {
        yield* s.out;
      } finally {
        if (sessions.get(s.sandbox) === s) sessions.delete(s.sandbox);
        if (s.ready) readyCount -= 1;
        for (const w of s.waiters.values()) w.reject(new ConnectError("the supervisor session ended", Code.Unavailable));
      }
    },

    async updateConfig(req) {
      const s = sessions.get(req.sandbox);
      if (!s) throw new ConnectError(`no session for ${req.sandbox}`, Code.FailedPrecondition);
      const version = ++s.version;
      const sequence = ++s.sequence;
      const updateId = `${s.id}-${sequence}`;
      const createdTime = timestampNow();
      // The request's idempotency key stands in for the policy hash: it comes back in the
      // admission, so the client can tell that the answer is about its own update.
      const snap = snapshot(req.policy, version, req.idempotencyKey);
      if (req.policy) {
        s.policy = req.policy;
        s.policyHash = req.idempotencyKey;
      }
      const result = new Promise<ConfigUpdateResult>((resolve, reject) => s.waiters.set(updateId, { resolve, reject }));
      s.out.push(create(GatewayMessageSchema, { payload: { case: "configUpdate", value: { updateId, componentSequence: sequence, component: { case: "sandboxConfig", value: snap } } } }));
      let providerResult: Promise<ConfigUpdateResult> | undefined;
      if (providerToo) {
        const providerSequence = ++s.providerSequence;
        const providerUpdateId = `${s.id}-p${providerSequence}`;
        providerResult = new Promise<ConfigUpdateResult>((resolve, reject) => s.waiters.set(providerUpdateId, { resolve, reject }));
        s.out.push(
          create(GatewayMessageSchema, {
            payload: { case: "configUpdate", value: { updateId: providerUpdateId, componentSequence: providerSequence, component: { case: "providerEnvironment", value: providerSnapshot(req.idempotencyKey) } } },
          }),
        );
      }
      const operation = { operationId: updateId, sandboxId: s.sandbox, component: ConfigComponent.SANDBOX_CONFIG, createdTime, updatedTime: createdTime };
      if (req.waitMode !== ConfigUpdateWaitMode.WAIT_FOR_COMPLETION) {
        void result.catch(() => {});
        void providerResult?.catch(() => {});
        return create(UpdateConfigResponseSchema, { version, policyHash: req.idempotencyKey, operation: { ...operation, state: ConfigUpdateOperationState.PENDING } });
      }
      const r = await result;
      // --provider-too: the provider result must be back too, APPLIED for the provider component.
      const p = providerResult ? await providerResult : undefined;
      const providerApplied = !p || (p.result?.outcome === ConfigApplyOutcome.APPLIED && p.result.component === ConfigComponent.PROVIDER_ENVIRONMENT);
      const applied = r.result?.outcome === ConfigApplyOutcome.APPLIED && providerApplied;
      const done = timestampNow();
      return create(UpdateConfigResponseSchema, {
        version,
        policyHash: r.admission?.policyHash ?? "",
        operation: {
          ...operation,
          targetRevision: r.result?.appliedRevision,
          state: applied ? ConfigUpdateOperationState.APPLIED : ConfigUpdateOperationState.FAILED,
          outcome: r.result?.outcome ?? ConfigApplyOutcome.UNSPECIFIED,
          updatedTime: done,
          completedTime: done,
        },
      });
    },

    /**
     * For the READY watcher (the same paging as against the real gateway), each sandbox as the
     * real gateway lists it: metadata, the spec with its policy, and a status with what it
     * enforces, so the floor serializes messages of the same shape and size.
     */
    listSandboxes(req) {
      const all = created.size > 0 ? createdNames : [...sessions.keys()];
      const from = req.pageToken === "" ? 0 : Number(req.pageToken);
      const size = req.pageSize > 0 ? req.pageSize : 100;
      const page = all.slice(from, from + size);
      return create(ListSandboxesResponseSchema, {
        sandboxes: page.map((name) => {
          const s = sessions.get(name);
          const c = created.get(name);
          if (!s) {
            // Created, its supervisor not connected yet: what the real gateway lists before the bootstrap.
            return create(SandboxSchema, {
              metadata: { id: c?.id ?? name, name, workspace: "default", resourceVersion: 1n, createdTime: c?.createdTime },
              spec: { policy: initialPolicy },
              status: { phase: SandboxPhase.PROVISIONING, currentPolicyVersion: 0, desiredPolicyVersion: 1 },
            });
          }
          return create(SandboxSchema, {
            metadata: { id: c?.id ?? s.id, name: s.sandbox, workspace: "default", resourceVersion: BigInt(s.version), createdTime: c?.createdTime ?? s.createdTime },
            spec: { policy: s.policy },
            status: {
              phase: s.ready ? SandboxPhase.READY : SandboxPhase.PROVISIONING,
              currentPolicyVersion: s.ready ? s.version : 0,
              desiredPolicyVersion: s.version,
              policyEnforcement: s.ready
                ? { state: PolicyEnforcementState.ENFORCING, policyVersion: s.version, policyHash: s.policyHash, policySource: PolicySource.SANDBOX, configRevision: BigInt(s.version), reportedPolicyVersion: s.version, outcome: ConfigApplyOutcome.APPLIED, observedTime: s.createdTime }
                : undefined,
            },
          });
        }),
        nextPageToken: from + size < all.length ? String(from + size) : "",
      });
    },
  });
}

const rpc = connectNodeAdapter({
  routes,
  acceptCompression: [compressionGzip, compressionBrotli],
  compressMinBytes: COMPRESS_MIN_BYTES,
  readMaxBytes: READ_MAX_BYTES,
});
const server = http2.createServer({ settings: { maxConcurrentStreams: MAX_CONCURRENT_STREAMS } }, rpc);
server.listen(Number(values.port ?? 0), "127.0.0.1", () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ type: "listening", port })}\n`);
});

// A "stats" line on stdin: how many results matched no update (the runs fail on any).
createInterface({ input: process.stdin }).on("line", (line) => {
  if (line.trim() === "stats") process.stdout.write(`${JSON.stringify({ type: "stats", sessions: sessions.size, ready: readyCount, unmatched })}\n`);
});
process.stdin.on("error", () => {});
process.once("SIGTERM", () => process.exit(0));
