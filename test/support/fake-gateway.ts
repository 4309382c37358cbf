// An in-memory gateway for SDK tests: the upstream UpdateConfig semantics the SDK relies on
// (idempotent replay, exact-revision operations, server-side waits that end in
// DEADLINE_EXCEEDED with `operation-id`), plus switches for older gateway generations and fault
// injection. Served through createRouterTransport (Node path) or a fetch handler (browser path).

import { create, clone, toJsonString, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampNow, timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createConnectRouter, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { OpenShell } from "../../src/gen/openshell/v1/openshell_pb.js";
import {
  ConfigUpdateOperationSchema,
  ConfigUpdateOperationState as State,
  ConfigApplyOutcome as Outcome,
  ConfigComponent,
  ConfigUpdateWaitMode,
  PolicyStatus,
  UpdateConfigRequestSchema,
  UpdateConfigResponseSchema,
  SandboxPolicyRevisionSchema,
  type ConfigUpdateOperation,
  type UpdateConfigRequest,
  type UpdateConfigResponse,
} from "../../src/gen/openshell/v1/config_pb.js";

/** Which generation of gateway to imitate. */
export type GatewayMode =
  /** Current: operations, server-side waits. */
  | "push"
  /** Push disabled: no `operation` in responses; completion via policy status only. */
  | "polling"
  /** Returns operations but ignores `wait_mode` (answers at once, PENDING). */
  | "no-wait"
  /**
   * A release before durable operations: as "polling", and it also ignores `idempotency_key`
   * (every commit is a new revision) and answers the operation RPCs UNIMPLEMENTED.
   */
  | "untracked";

export interface FakeGatewayOptions {
  mode?: GatewayMode;
  /** Offer the WatchConfigUpdateOperations extension. Default true. */
  watch?: boolean;
  /** Require `authorization: Bearer <token>`. */
  token?: string;
  /** Called after each new commit (not on replays); return an outcome to complete it after `delayMs`. */
  autoComplete?: (op: ConfigUpdateOperation, req: UpdateConfigRequest) => Resolution | undefined;
}

export interface Resolution {
  state: State;
  outcome?: Outcome;
  error?: string;
  delayMs?: number;
}

interface Sandbox {
  id: string;
  phase: "ready" | "stopped" | "deleting";
  policyVersion: number;
  settingsRevision: bigint;
  resourceVersion: bigint;
}

interface KeyRecord {
  fingerprint: string;
  response: UpdateConfigResponse;
  operationId: string | undefined;
}

type Fault = { method: string; code: Code; afterCommit?: boolean; message?: string };

export interface FakeGateway {
  routes: (router: ConnectRouter) => void;
  /** Adds a sandbox; returns its id. */
  addSandbox(name: string, phase?: Sandbox["phase"]): string;
  setPhase(name: string, phase: Sandbox["phase"]): void;
  /** Moves a PENDING operation to a terminal state (no-op when already terminal). */
  complete(operationId: string, resolution: Resolution): boolean;
  /** Polling mode: sets the load status of a policy version. */
  setPolicyStatus(sandbox: string, version: number, status: PolicyStatus, loadError?: string): void;
  /** The next call(s) of `method` fail with `code` (before or after committing). */
  inject(fault: Fault, times?: number): void;
  operation(id: string): ConfigUpdateOperation | undefined;
  operations(): ConfigUpdateOperation[];
  /** Every revision committed (policy versions and settings revisions), to detect duplicates. */
  readonly commits: { sandbox: string; dimension: "policy" | "settings"; revision: string }[];
  /** Calls received, per method name. */
  readonly calls: Record<string, number>;
  /** Authorization headers seen. */
  readonly authorizations: (string | null)[];
  /** Wait timeouts requested on UpdateConfig (ms), in order. */
  readonly waitTimeouts: number[];
  /** Every UpdateConfig request received (a copy, as decoded by the gateway), in order. */
  readonly requests: UpdateConfigRequest[];
}

export function createFakeGateway(options: FakeGatewayOptions = {}): FakeGateway {
  const mode = options.mode ?? "push";
  const sandboxes = new Map<string, Sandbox>();
  const ops = new Map<string, ConfigUpdateOperation>();
  const keys = new Map<string, KeyRecord>();
  const policyStatus = new Map<string, { status: PolicyStatus; loadError: string }>();
  const listeners = new Set<(op: ConfigUpdateOperation) => void>();
  const faults: Fault[] = [];
  const commits: FakeGateway["commits"] = [];
  const calls: Record<string, number> = {};
  const authorizations: (string | null)[] = [];
  const waitTimeouts: number[] = [];
  const requests: UpdateConfigRequest[] = [];

  function enter(method: string, ctx: HandlerContext, phase: "before" | "after" = "before"): void {
    if (phase === "before") {
      calls[method] = (calls[method] ?? 0) + 1;
      const auth = ctx.requestHeader.get("authorization");
      authorizations.push(auth);
      if (options.token !== undefined && auth !== `Bearer ${options.token}`) {
        throw new ConnectError("missing or invalid bearer token", Code.Unauthenticated);
      }
    }
    const i = faults.findIndex((f) => f.method === method && !!f.afterCommit === (phase === "after"));
    if (i >= 0) {
      const [f] = faults.splice(i, 1);
      throw new ConnectError(f!.message ?? `injected ${Code[f!.code]}`, f!.code);
    }
  }

  function transition(op: ConfigUpdateOperation, r: Resolution): boolean {
    if (op.state !== State.PENDING) return false;
    op.state = r.state;
    op.outcome = r.outcome ?? Outcome.UNSPECIFIED;
    op.sanitizedError = r.error ?? "";
    op.updatedTime = timestampNow();
    op.completedTime = op.updatedTime;
    for (const l of [...listeners]) l(op);
    return true;
  }

  function fingerprint(req: UpdateConfigRequest): string {
    const c = clone(UpdateConfigRequestSchema, req);
    c.waitMode = ConfigUpdateWaitMode.UNSPECIFIED;
    c.waitTimeout = undefined;
    c.requestId = "";
    return toJsonString(UpdateConfigRequestSchema, c);
  }

  function validate(req: UpdateConfigRequest): void {
    if (req.sandbox === "") throw new ConnectError("sandbox is required", Code.InvalidArgument);
    if (new TextEncoder().encode(req.idempotencyKey).length > 256) {
      throw new ConnectError("idempotency_key exceeds 256 bytes", Code.InvalidArgument);
    }
    if (req.idempotencyKey.trim() !== req.idempotencyKey) {
      throw new ConnectError("idempotency_key must not have leading or trailing whitespace", Code.InvalidArgument);
    }
    const set = [req.policy !== undefined, req.settingKey !== "", req.mergeOperations.length > 0].filter(Boolean);
    if (set.length !== 1) {
      throw new ConnectError("policy, setting_key, and merge_operations are mutually exclusive", Code.InvalidArgument);
    }
    if (req.waitTimeout && (req.waitTimeout.seconds < 0n || req.waitTimeout.nanos < 0)) {
      throw new ConnectError("wait_timeout must be a nonnegative duration", Code.InvalidArgument);
    }
  }

  function commit(req: UpdateConfigRequest, sb: Sandbox): { response: UpdateConfigResponse; op: ConfigUpdateOperation | undefined } {
    if (req.expectedResourceVersion !== 0n && req.expectedResourceVersion !== sb.resourceVersion) {
      throw new ConnectError("resource version mismatch", Code.Aborted);
    }
    const dimension = req.settingKey !== "" ? "settings" : "policy";
    if (dimension === "policy") sb.policyVersion += 1;
    else sb.settingsRevision += 1n;
    sb.resourceVersion += 1n;
    commits.push({
      sandbox: req.sandbox,
      dimension,
      revision: dimension === "policy" ? String(sb.policyVersion) : String(sb.settingsRevision),
    });
    const response = create(UpdateConfigResponseSchema, {
      version: sb.policyVersion,
      policyHash: `sha256:${sb.policyVersion}`,
      settingsRevision: sb.settingsRevision,
      deleted: req.deleteSetting,
      annotations: { ...req.annotations },
    });
    if (mode === "polling" || mode === "untracked") {
      policyStatus.set(`${req.sandbox}:${sb.policyVersion}`, { status: PolicyStatus.PENDING, loadError: "" });
      return { response, op: undefined };
    }
    // A newer revision of the same dimension supersedes older pending ones.
    for (const other of ops.values()) {
      const otherDim = (other as ConfigUpdateOperation & { dim?: string }).dim;
      if (other.sandboxId === sb.id && otherDim === dimension) {
        transition(other, {
          state: State.SUPERSEDED,
          outcome: Outcome.IGNORED_STALE,
          error: "a newer desired revision replaced this update before application",
        });
      }
    }
    const now = timestampNow();
    const op = create(ConfigUpdateOperationSchema, {
      operationId: crypto.randomUUID(),
      sandboxId: sb.id,
      component: ConfigComponent.SANDBOX_CONFIG,
      state: State.PENDING,
      targetRevision: {
        component: {
          case: "sandboxConfig",
          value: {
            configRevision: BigInt(sb.policyVersion) * 1000n + sb.settingsRevision,
            policyVersion: sb.policyVersion,
            settingsRevision: sb.settingsRevision,
          },
        },
      },
      createdTime: now,
      updatedTime: now,
    });
    Object.defineProperty(op, "dim", { value: dimension, enumerable: false });
    ops.set(op.operationId, op);
    if (sb.phase === "stopped") transition(op, { state: State.INACTIVE });
    if (sb.phase === "deleting") transition(op, { state: State.CANCELLED, error: "sandbox is deleting" });
    return { response, op };
  }

  function waitFor(op: ConfigUpdateOperation, timeoutMs: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (op.state !== State.PENDING) return resolve();
      const done = (fn: () => void) => {
        clearTimeout(timer);
        listeners.delete(listener);
        signal.removeEventListener("abort", onAbort);
        fn();
      };
      const listener = (changed: ConfigUpdateOperation) => {
        if (changed.operationId === op.operationId) done(resolve);
      };
      const onAbort = () => done(() => reject(new ConnectError("caller went away", Code.Canceled)));
      const timer = setTimeout(
        () =>
          done(() =>
            reject(
              new ConnectError(`timed out waiting for update operation ${op.operationId}`, Code.DeadlineExceeded, {
                "operation-id": op.operationId,
              }),
            ),
          ),
        timeoutMs,
      );
      listeners.add(listener);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  const gateway: FakeGateway = {
    commits,
    calls,
    authorizations,
    waitTimeouts,
    requests,
    addSandbox(name, phase = "ready") {
      const id = `sbx-${sandboxes.size + 1}-${name}`;
      sandboxes.set(name, { id, phase, policyVersion: 1, settingsRevision: 0n, resourceVersion: 1n });
      return id;
    },
    setPhase(name, phase) {
      sandboxes.get(name)!.phase = phase;
    },
    complete(id, r) {
      const op = ops.get(id);
      return op ? transition(op, r) : false;
    },
    setPolicyStatus(sandbox, version, status, loadError = "") {
      policyStatus.set(`${sandbox}:${version}`, { status, loadError });
    },
    inject(fault, times = 1) {
      for (let i = 0; i < times; i++) faults.push(fault);
    },
    operation: (id) => ops.get(id),
    operations: () => [...ops.values()],
    routes(router) {
      router.service(OpenShell, {
        async updateConfig(req, ctx) {
          requests.push(clone(UpdateConfigRequestSchema, req));
          enter("updateConfig", ctx);
          validate(req);
          const sb = sandboxes.get(req.sandbox);
          if (!sb) throw new ConnectError(`sandbox ${req.sandbox} not found`, Code.NotFound);
          const fp = fingerprint(req);
          const scope = `${sb.id}:${req.idempotencyKey}`;
          let record = req.idempotencyKey && mode !== "untracked" ? keys.get(scope) : undefined;
          if (record && record.fingerprint !== fp) {
            throw new ConnectError("idempotency_key was already used with a different request payload", Code.InvalidArgument);
          }
          if (!record) {
            const { response, op } = commit(req, sb);
            record = { fingerprint: fp, response, operationId: op?.operationId };
            if (req.idempotencyKey) keys.set(scope, record);
            const resolution = op && options.autoComplete?.(op, req);
            if (op && resolution) setTimeout(() => transition(op, resolution), resolution.delayMs ?? 0);
          }
          enter("updateConfig", ctx, "after");
          const op = record.operationId ? ops.get(record.operationId) : undefined;
          if (op && mode === "push" && req.waitMode === ConfigUpdateWaitMode.WAIT_FOR_COMPLETION) {
            const d = req.waitTimeout;
            const ms = d ? Number(d.seconds) * 1000 + Math.floor(d.nanos / 1e6) : 0;
            waitTimeouts.push(ms);
            await waitFor(op, ms === 0 ? 60_000 : Math.min(ms, 3_600_000), ctx.signal);
          }
          const response = clone(UpdateConfigResponseSchema, record.response);
          if (op) response.operation = clone(ConfigUpdateOperationSchema, op);
          return response;
        },
        async getConfigUpdateOperation(req, ctx) {
          enter("getConfigUpdateOperation", ctx);
          if (mode === "untracked") throw new ConnectError("method not implemented", Code.Unimplemented);
          if (req.operationId === "") throw new ConnectError("operation_id is required", Code.InvalidArgument);
          const op = ops.get(req.operationId);
          if (!op) throw new ConnectError("update operation not found", Code.NotFound);
          return { operation: clone(ConfigUpdateOperationSchema, op) };
        },
        async *watchConfigUpdateOperations(req, ctx) {
          enter("watchConfigUpdateOperations", ctx);
          if (options.watch === false || mode === "untracked") {
            throw new ConnectError("method not implemented", Code.Unimplemented);
          }
          const queue: ConfigUpdateOperation[] = [];
          let wake: (() => void) | undefined;
          const listener = (op: ConfigUpdateOperation) => {
            if (req.operationIds.includes(op.operationId)) {
              queue.push(clone(ConfigUpdateOperationSchema, op));
              wake?.();
            }
          };
          listeners.add(listener);
          try {
            for (const id of req.operationIds) {
              const op = ops.get(id);
              if (!op) throw new ConnectError("update operation not found", Code.NotFound);
              yield { operation: clone(ConfigUpdateOperationSchema, op), initial: true };
            }
            while (!ctx.signal.aborted) {
              if (queue.length === 0) {
                await new Promise<void>((resolve) => {
                  wake = resolve;
                  ctx.signal.addEventListener("abort", () => resolve(), { once: true });
                });
                wake = undefined;
                continue;
              }
              yield { operation: queue.shift()!, initial: false };
            }
          } finally {
            listeners.delete(listener);
          }
        },
        async getSandboxPolicyStatus(req, ctx) {
          enter("getSandboxPolicyStatus", ctx);
          const sb = sandboxes.get(req.sandbox);
          if (!sb) throw new ConnectError(`sandbox ${req.sandbox} not found`, Code.NotFound);
          const version = req.version || sb.policyVersion;
          const s = policyStatus.get(`${req.sandbox}:${version}`) ?? { status: PolicyStatus.LOADED, loadError: "" };
          return {
            activeVersion: sb.policyVersion,
            revision: create(SandboxPolicyRevisionSchema, {
              version,
              policyHash: `sha256:${version}`,
              status: s.status,
              loadError: s.loadError,
              createdTime: timestampFromMs(Date.parse("2026-01-01T00:00:00Z")),
              ...(s.status === PolicyStatus.PENDING ? {} : { loadedTime: timestampNow() }),
            }),
          };
        },
      });
    },
  };
  return gateway;
}

/** A connect router holding the fake gateway, for fetch-level serving (msw). */
export function fakeGatewayRouter(gateway: FakeGateway): ConnectRouter {
  const router = createConnectRouter();
  gateway.routes(router);
  return router;
}

/** A minimal valid policy for tests. */
export function samplePolicy(extraRule?: string): MessageInitShape<typeof import("../../src/gen/openshell/sandbox/v1/sandbox_pb.js").SandboxPolicySchema> {
  return {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp"] },
    networkPolicies: {
      github: {
        name: "github",
        endpoints: [{ host: "api.github.com", ports: [443] }],
        binaries: [{ path: "/usr/bin/git" }],
      },
      ...(extraRule ? { [extraRule]: { name: extraRule, endpoints: [{ host: `${extraRule}.example.com`, ports: [443] }] } } : {}),
    },
  };
}
