// createConfigClient: the SDK's entry point. Wires a transport, the bearer token and retries to
// the update, wait and status methods.

import { createClient, type CallOptions, type Client, type Transport } from "@connectrpc/connect";
import type { DescService } from "@bufbuild/protobuf";
import { ConfigUpdateWaitMode } from "./gen/openshell/v1/config_pb.js";
import { ConfigRpc } from "./rpc.js";
import { assertTokenTransportSafe, authorizationHeader, type TokenSource } from "./auth.js";
import { createFetchConnectTransport } from "./transport/fetch-connect.js";
import { baseUrlOf } from "./transport/base-url.js";
import { InvalidArgumentError, toSdkError } from "./errors.js";
import type { RetryOptions } from "./retry.js";
import { sendUpdate } from "./commit.js";
import { buildRequest, newIdempotencyKey, readCommitted } from "./update.js";
import type { PolicyUpdate, SettingsUpdate, UpdateResult, WaitedUpdateResult, UpdateOptions } from "./update.js";
import type { PolicyChange, SettingChange } from "./change.js";
import { createHandle } from "./refs.js";
import type { CompletionRef } from "./handle.js";
import { currentStatus, resolveRef, waitForTarget, type WaitTarget } from "./await.js";
import type { WaitOptions } from "./wait-options.js";
import type { Completion, OperationStatus } from "./completion.js";
import type { ClientContext } from "./context.js";
import { getSandboxConfig, type GetConfigOptions, type SandboxConfig } from "./sandbox-config.js";

/** Options of `createConfigClient`. Give `baseUrl`, or a `transport` from `openshell-config/transport/node` or `/web`. */
export interface ConfigClientOptions {
  /** The gateway URL; used with a fetch-based Connect transport when no `transport` is given. */
  readonly baseUrl?: string;
  /** A Connect transport (e.g. `createNodeTransport({ baseUrl, protocol: "grpc" })`). */
  readonly transport?: Transport;
  /** Bearer token, or a function returning one before each request. */
  readonly token?: TokenSource;
  /** Allow sending the token over plain http to a non-loopback host. Default false. */
  readonly allowInsecureToken?: boolean;
  /** The workspace used when a call names none. Default: the gateway's default workspace. */
  readonly workspace?: string;
  /**
   * Retries of transient failures (UNAVAILABLE, broken connections). A commit whose answer may
   * have been lost is resent only when that cannot commit it twice: on a gateway that tracks
   * operations (by its idempotency key), or with `expectedResourceVersion` pinned; otherwise the
   * update throws CommitOutcomeUnknownError.
   */
  readonly retry?: RetryOptions;
  /** Local wait bound when a wait gives none. Default 60 s. */
  readonly defaultWaitTimeoutMs?: number;
  /** The longest single server-side wait requested; longer waits loop. Default 50 s (under typical proxy idle timeouts). */
  readonly serverWaitSliceMs?: number;
  /** Backoff bounds for status polling, used only against gateways without push or watch. Default 100 ms to 2 s. */
  readonly pollDelayMs?: {
    /** The first delay between polls, in ms. Default 100. */
    readonly min?: number;
    /** The longest delay between polls, in ms. Default 2000. */
    readonly max?: number;
  };
}

/** Options of `getOperation`. */
export interface GetOperationOptions {
  /** Cancels the request; the operation itself is unaffected. */
  readonly signal?: AbortSignal;
}

/** The typed configuration client. */
export interface ConfigClient {
  /** The workspace used when a call names none (`options.workspace`); undefined: the gateway's default. */
  readonly workspace: string | undefined;
  /**
   * Commits a policy change (full replacement or merge operations); with `wait`, also its outcome.
   * The outcome is returned whatever it is; only a wait that ends on this side throws
   * (CompletionTimeoutError).
   *
   * @example
   * ```ts
   * const { policyVersion, completion } = await client.updatePolicy({
   *   sandbox: "agent-7",
   *   policy, // a whole SandboxPolicy, as a plain object or a message from openshell-config/raw
   *   idempotencyKey: "deploy-2026-11-30-agent-7", // optional; a fresh UUIDv4 otherwise
   *   wait: { timeoutMs: 30_000 }, // or true (60 s); without wait, returns once committed
   * });
   * if (completion.state === "failed") throw new Error(`v${policyVersion} rejected: ${completion.error}`);
   * if (completion.state === "applied" && completion.outcome === "degraded") console.warn(completion.error);
   * ```
   */
  updatePolicy(update: PolicyUpdate & { readonly wait: true | WaitOptions }): Promise<WaitedUpdateResult>;
  /**
   * Commits a policy change (full replacement or merge operations) and returns once it is
   * committed, with a handle to wait on later, in this process or another.
   *
   * @example
   * ```ts
   * const { policyVersion, handle } = await client.updatePolicy({ sandbox: "agent-7", policy });
   * localStorage.setItem("pending", JSON.stringify(handle)); // plain JSON; restoreHandle reads it back
   * ```
   */
  updatePolicy(update: PolicyUpdate): Promise<UpdateResult>;
  /**
   * Commits a setting upsert or delete; with `wait`, also its outcome. Values are plain:
   * `string`, `boolean`, a safe-integer `number` or a `bigint` (int64), `Uint8Array` (bytes).
   *
   * @example
   * ```ts
   * const { completion } = await client.updateSettings({ sandbox: "agent-7", key: "log_level", value: "debug", wait: true });
   * await client.updateSettings({ sandbox: "agent-7", key: "max_connections", value: 64, wait: true }); // read back as 64n
   * await client.updateSettings({ sandbox: "agent-7", key: "log_level", delete: true, wait: true });
   * ```
   */
  updateSettings(update: SettingsUpdate & { readonly wait: true | WaitOptions }): Promise<WaitedUpdateResult>;
  /**
   * Commits a setting upsert or delete and returns once it is committed.
   *
   * @example
   * ```ts
   * const { settingsRevision, handle } = await client.updateSettings({ sandbox: "agent-7", key: "log_level", value: "info" });
   * ```
   */
  updateSettings(update: SettingsUpdate): Promise<UpdateResult>;
  /**
   * Waits for the terminal outcome of a committed update. Resumable: pass a handle, an
   * `{ operationId }`, or `{ sandbox, idempotencyKey, request }`. Throws CompletionTimeoutError
   * when the wait ends locally; a failed, superseded, inactive or cancelled update is returned.
   *
   * @example
   * ```ts
   * import { restoreHandle } from "openshell-config";
   *
   * // From a handle saved when the update was committed (here, before a page reload):
   * const completion = await client.awaitCompletion(restoreHandle(localStorage.getItem("pending")!), {
   *   timeoutMs: 120_000, // default 60 s; Infinity waits until the outcome or an abort
   *   onProgress: (e) => console.log(e.type === "state" ? e.status.state : `retry ${e.attempt}`),
   * });
   *
   * // By operation id alone, e.g. from a dashboard link:
   * const same = await client.awaitCompletion({ operationId: "0b6f7c1e-3f7a-4c59-9d2e-1c2b3a4d5e6f" });
   * ```
   */
  awaitCompletion(ref: CompletionRef, options?: WaitOptions): Promise<Completion>;
  /**
   * The current state of an operation, without waiting: a terminal outcome, or `pending`.
   *
   * @example
   * ```ts
   * import { isTerminal } from "openshell-config";
   *
   * const { handle } = await client.updatePolicy({ sandbox: "agent-7", policy });
   * const status = await client.getOperation(handle); // or { operationId }
   * console.log(isTerminal(status) ? `${status.state} (${status.outcome})` : "still pending");
   * ```
   */
  getOperation(ref: CompletionRef, options?: GetOperationOptions): Promise<OperationStatus>;
  /**
   * A sandbox's configuration: what the gateway delivers (`desired`), what the sandbox enforces
   * according to its latest result (`enforced`: a revision, failing closed, or a local policy),
   * and how the two differ (`drift`, empty when they agree).
   *
   * @example
   * ```ts
   * const cfg = await client.getConfig({ sandbox: "dev" });
   * if (cfg.enforced.state === "failed-closed") console.warn(`dev denies all: ${cfg.enforced.reason}`);
   * else if (cfg.drift.length > 0) console.warn(`dev drifts: ${cfg.drift.join(", ")}`);
   * ```
   */
  getConfig(options: GetConfigOptions): Promise<SandboxConfig>;
  /**
   * A Connect client for any service on this client's transport, sending the same bearer token:
   * `client.raw(OpenShell).getSandbox(...)`, with `OpenShell` from `openshell-config/raw`. For
   * RPCs the curated surface does not cover.
   */
  raw<S extends DescService>(service: S): Client<S>;
}

/**
 * Creates a configuration client. Throws InsecureTransportError for a token over plain remote
 * http (`allowInsecureToken` overrides), InvalidArgumentError without `baseUrl` or `transport`.
 *
 * @example
 * ```ts
 * import { createConfigClient } from "openshell-config";
 * import { createNodeTransport } from "openshell-config/transport/node";
 *
 * // In a browser (Connect over fetch), the gateway's URL is enough:
 * const client = createConfigClient({ baseUrl: "https://gateway.example.com" });
 *
 * // In Node, gRPC over HTTP/2, a token refreshed before each request, a workspace for every call:
 * const server = createConfigClient({
 *   transport: createNodeTransport({ baseUrl: "https://gateway.internal:8443", protocol: "grpc" }),
 *   token: async () => process.env.OPENSHELL_TOKEN!,
 *   workspace: "team-a",
 * });
 * ```
 */
export function createConfigClient(options: ConfigClientOptions): ConfigClient {
  if (options.transport === undefined && options.baseUrl === undefined) {
    throw new InvalidArgumentError("createConfigClient needs baseUrl or transport", { field: "baseUrl" });
  }
  const transport = options.transport ?? createFetchConnectTransport({ baseUrl: options.baseUrl! });
  if (options.token !== undefined) {
    // Check the URL the token actually travels to: a given transport's own URL wins over baseUrl.
    const tokenUrl = options.transport === undefined ? options.baseUrl : (baseUrlOf(options.transport) ?? options.baseUrl);
    assertTokenTransportSafe(tokenUrl, options.allowInsecureToken);
  }
  const rpc = createClient(ConfigRpc, transport);
  const ctx: ClientContext = {
    rpc,
    async callOptions(signal, timeoutMs): Promise<CallOptions> {
      const authorization = await authorizationHeader(options.token);
      return {
        ...(signal ? { signal } : {}),
        ...(timeoutMs !== undefined ? { timeoutMs } : {}),
        ...(authorization ? { headers: { authorization } } : {}),
      };
    },
    retry: options.retry ?? {},
    workspace: options.workspace,
    defaultWaitTimeoutMs: options.defaultWaitTimeoutMs ?? 60_000,
    serverWaitSliceMs: options.serverWaitSliceMs ?? 50_000,
    poll: { minDelayMs: options.pollDelayMs?.min ?? 100, maxDelayMs: options.pollDelayMs?.max ?? 2_000 },
    watch: "unknown",
    operations: "unknown",
  };

  const update = (input: UpdateOptions, change: PolicyChange | SettingChange) => runUpdate(ctx, input, change);
  return {
    workspace: options.workspace,
    updatePolicy: ((input: PolicyUpdate) => update(input, input)) as ConfigClient["updatePolicy"],
    updateSettings: ((input: SettingsUpdate) => update(input, input)) as ConfigClient["updateSettings"],
    async awaitCompletion(ref, waitOptions = {}) {
      if (waitOptions.signal?.aborted) throw waitOptions.signal.reason;
      const target = resolveRef(ctx, ref);
      const { completion } = await waitForTarget(ctx, target, waitOptions, () => ref);
      return completion;
    },
    async getOperation(ref, getOptions = {}) {
      getOptions.signal?.throwIfAborted();
      return currentStatus(ctx, resolveRef(ctx, ref), getOptions.signal);
    },
    async getConfig(getOptions) {
      getOptions.signal?.throwIfAborted();
      return getSandboxConfig(ctx, getOptions);
    },
    raw: (service) => createClient(service, withAuthorization(transport, options.token)),
  };
}

async function runUpdate(
  ctx: ClientContext,
  input: UpdateOptions,
  change: PolicyChange | SettingChange,
): Promise<UpdateResult | WaitedUpdateResult> {
  input.signal?.throwIfAborted();
  const workspace = input.workspace ?? ctx.workspace;
  const request = buildRequest(
    {
      sandbox: input.sandbox,
      idempotencyKey: input.idempotencyKey ?? newIdempotencyKey(),
      workspace,
      expectedResourceVersion: input.expectedResourceVersion,
      annotations: input.annotations,
    },
    change,
  );

  if (!input.wait) {
    try {
      const res = await sendUpdate(ctx, request, { workspace, signal: input.signal, resend: false });
      return readCommitted(request, res, workspace);
    } catch (err) {
      if (input.signal?.aborted) throw input.signal.reason;
      throw toSdkError(err);
    }
  }

  // Waiting from the start sends one request: the commit and the server-side wait together.
  const waitOptions: WaitOptions = input.wait === true ? {} : input.wait;
  const target: WaitTarget = { operationId: undefined, workspace, request, policyVersion: undefined, fresh: true };
  const { completion, response } = await waitForTarget(
    ctx,
    target,
    { ...waitOptions, signal: waitOptions.signal ?? input.signal },
    () => createHandle(request, { operationId: target.operationId, workspace, policyVersion: target.policyVersion }),
  );
  if (response === undefined) {
    // Only a watch saw the outcome (so the gateway tracks operations); read the committed
    // response by replaying the request with its key.
    let replay;
    try {
      replay = await sendUpdate(ctx, { ...request, waitMode: ConfigUpdateWaitMode.COMMIT_ONLY }, { workspace, signal: input.signal, resend: "resume" });
    } catch (err) {
      if (input.signal?.aborted) throw input.signal.reason;
      throw toSdkError(err);
    }
    return { ...readCommitted(request, replay, workspace), completion };
  }
  return { ...readCommitted(request, response, workspace), completion };
}

// Adds the bearer token to every call made through `transport` (for `raw` clients, whose calls
// do not pass through this module's per-call options).
function withAuthorization(transport: Transport, token: TokenSource | undefined): Transport {
  if (token === undefined) return transport;
  const headers = async (init: HeadersInit | undefined) => {
    const h = new Headers(init);
    const authorization = await authorizationHeader(token);
    if (authorization !== undefined) h.set("authorization", authorization);
    return h;
  };
  return {
    unary: async (method, signal, timeoutMs, header, input, contextValues) =>
      transport.unary(method, signal, timeoutMs, await headers(header), input, contextValues),
    stream: async (method, signal, timeoutMs, header, input, contextValues) =>
      transport.stream(method, signal, timeoutMs, await headers(header), input, contextValues),
  };
}
