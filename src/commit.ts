// Sending an UpdateConfig without ever committing it twice. A gateway that tracks operations
// replays a resent request by its idempotency key; an upstream release before durable operations
// ignores the key, so a resend of a request that may have arrived can make a second revision. A
// fork gateway with push delivery off still replays keys but returns no operation either; the
// client cannot tell the two apart from an answer, and treats both as the older release. What the client has learnt about the
// gateway decides which failures may be sent again:
// - a failure that proves the request never left (connection refused, DNS, TLS): as any request;
// - one after which it may have arrived (a reset, UNAVAILABLE, a lost answer): only when the
//   gateway tracks operations (asked first when not known yet), or when expected_resource_version
//   is pinned (then at most one attempt can commit); otherwise CommitOutcomeUnknownError.

import { Code, ConnectError } from "@connectrpc/connect";
import type { UpdateConfigRequest, UpdateConfigResponse } from "./gen/openshell/v1/config_pb.js";
import { CommitOutcomeUnknownError, operationIdOf } from "./errors.js";
import { backoffDelay, isTransient, sleep, withRetry } from "./retry.js";
import { tlsFailureOf } from "./tls-failure.js";
import { workspaceScope } from "./workspace.js";
import type { ClientContext } from "./context.js";

/** Whether the gateway tracks operations, as far as the client has learnt. */
export type OperationTracking = ClientContext["operations"];

/**
 * Records what an answer said. "Untracked" is final for the life of the client: a sandbox-scoped
 * response without an operation, or GetConfigUpdateOperation answering UNIMPLEMENTED, is proof
 * enough, and a gateway behind a load balancer may answer both ways.
 */
export function noteTracking(ctx: ClientContext, tracked: boolean): void {
  if (!tracked) ctx.operations = "untracked";
  else if (ctx.operations === "unknown") ctx.operations = "tracked";
}

/**
 * Asks the gateway, when not known yet, with GetConfigUpdateOperation for an id that exists
 * nowhere: NOT_FOUND means it tracks operations, UNIMPLEMENTED that it does not. Any other answer
 * (or none, after the usual retries) leaves it unknown.
 */
export async function learnTracking(ctx: ClientContext, workspace: string | undefined, signal: AbortSignal | undefined): Promise<OperationTracking> {
  if (ctx.operations !== "unknown") return ctx.operations;
  try {
    await withRetry(
      async () =>
        ctx.rpc.getConfigUpdateOperation(
          { operationId: globalThis.crypto.randomUUID(), workspaceScope: workspaceScope(workspace) },
          await ctx.callOptions(signal),
        ),
      { ...ctx.retry, signal },
    );
    noteTracking(ctx, true);
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    // The gateway was not reached for a reason that no later attempt changes: say that, not "unknown".
    if (tlsFailureOf(err) !== undefined) throw err;
    const code = ConnectError.from(err).code;
    if (code === Code.NotFound) noteTracking(ctx, true);
    else if (code === Code.Unimplemented) noteTracking(ctx, false);
  }
  return ctx.operations;
}

/** Where the Node transport records a failed socket's TLS state (transport/tls-classify.ts). */
const TLS_CONNECTION = Symbol.for("openshell-config.tls.connection");

// System error codes that only a connection attempt or a name lookup produces.
const BEFORE_SENDING = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN"]);
// Node's certificate and handshake errors: no request goes out before the handshake completes.
const TLS_CODE = /^(ERR_SSL_|ERR_TLS_|CERT_|UNABLE_TO_(GET|VERIFY)_|DEPTH_ZERO_SELF_SIGNED_CERT$|SELF_SIGNED_CERT_IN_CHAIN$|HOSTNAME_MISMATCH$)/;

/**
 * True when `err` proves the request never left this process: the connection was refused, the
 * name did not resolve, the connection attempt itself failed (`syscall` connect), or TLS refused
 * the handshake. Anything else that breaks a call may have happened after the gateway read it.
 */
export function neverSent(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 6; e = (e as { cause?: unknown }).cause, depth++) {
    const { code, syscall, name } = e as { code?: unknown; syscall?: unknown; name?: unknown };
    if (name === "TlsError") return true;
    // The Node transport marks a socket's error with whether its TLS handshake had completed.
    if ((e as { [TLS_CONNECTION]?: { secured?: unknown } })[TLS_CONNECTION]?.secured === false) return true;
    if (typeof code !== "string") continue;
    if (BEFORE_SENDING.has(code) || TLS_CODE.test(code)) return true;
    if (syscall === "connect" || syscall === "getaddrinfo") return true;
  }
  return false;
}

/** Options of `sendUpdate`. */
export interface SendUpdateOptions {
  readonly workspace: string | undefined;
  readonly signal: AbortSignal | undefined;
  /** Bound of each attempt (a server-side wait's slice plus grace). */
  readonly timeoutMs?: number;
  /**
   * Whether the request may have reached the gateway before, so that its first attempt is a
   * resend: false (a new commit), "resume" (a resumed wait or a replay) or "lost" (an earlier
   * send's answer was lost, e.g. a server-side wait that ended without an operation id).
   */
  readonly resend: false | "resume" | "lost";
  readonly onRetry?: (error: unknown, attempt: number) => void;
}

/**
 * Sends `request` with the client's retries, resending only when that cannot commit twice (see
 * the top of this file). Learns from every answer whether the gateway tracks operations. Throws
 * CommitOutcomeUnknownError when a resend would be blind, or when a pinned resend is refused.
 */
export async function sendUpdate(ctx: ClientContext, request: UpdateConfigRequest, options: SendUpdateOptions): Promise<UpdateConfigResponse> {
  const { signal, workspace } = options;
  const retries = ctx.retry.retries ?? 6;
  const minDelayMs = ctx.retry.minDelayMs ?? 100;
  const maxDelayMs = ctx.retry.maxDelayMs ?? 5_000;
  // How a resend is safe, once an attempt may have reached the gateway (decided before resending).
  let resendBy = options.resend ? await resendSafety(ctx, request, workspace, signal, options.resend) : undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await ctx.rpc.updateConfig(request, await ctx.callOptions(signal, options.timeoutMs));
      if (!request.global) noteTracking(ctx, res.operation !== undefined);
      return res;
    } catch (err) {
      if (signal?.aborted) throw err;
      const ce = ConnectError.from(err);
      if (resendBy === "pinned" && ce.code === Code.Aborted && !isTransient(err)) throw outcomeUnknown(ctx, request, workspace, "refused", err);
      // A server-side wait's slice ending is for the caller's loop; any other deadline is a lost answer.
      const deadline = ce.code === Code.DeadlineExceeded;
      if (deadline && operationIdOf(ce) !== undefined) noteTracking(ctx, true);
      if (deadline ? options.timeoutMs !== undefined : !isTransient(err)) throw err;
      const arrived = resendBy !== undefined || !neverSent(err);
      if (attempt > retries) {
        if (arrived && (await learnTracking(ctx, workspace, signal)) !== "tracked") throw outcomeUnknown(ctx, request, workspace, "lost", err);
        throw err;
      }
      if (arrived && resendBy !== "key") resendBy = await resendSafety(ctx, request, workspace, signal, "lost", err);
      options.onRetry?.(err, attempt);
    }
    await sleep(backoffDelay(attempt, minDelayMs, maxDelayMs), signal);
  }
}

/** How a resend can be safe: by key on a tracking gateway, else by a pinned resource version; else it throws. */
async function resendSafety(
  ctx: ClientContext,
  request: UpdateConfigRequest,
  workspace: string | undefined,
  signal: AbortSignal | undefined,
  why: "lost" | "resume",
  cause?: unknown,
): Promise<"key" | "pinned"> {
  if ((await learnTracking(ctx, workspace, signal)) === "tracked") return "key";
  if (request.expectedResourceVersion !== 0n) return "pinned";
  throw outcomeUnknown(ctx, request, workspace, why, cause);
}

function outcomeUnknown(
  ctx: ClientContext,
  request: UpdateConfigRequest,
  workspace: string | undefined,
  why: "lost" | "resume" | "refused",
  cause: unknown,
): CommitOutcomeUnknownError {
  const named = workspace !== undefined && workspace !== "default";
  const where = `sandbox "${request.sandbox}"${named ? ` in workspace "${workspace}"` : ""}`;
  const check = `"openshell-config ${request.settingKey !== "" ? "settings list" : "policy history"} --sandbox ${shellWord(request.sandbox)}${named ? ` --workspace ${shellWord(workspace)}` : ""}"`;
  const gateway = ctx.operations === "untracked" ? "this gateway does not track operations" : "whether this gateway tracks operations could not be learned";
  const tail = `so it may or may not have been committed; check ${check} before sending it again`;
  const message =
    why === "resume"
      ? `the update to ${where} cannot be resumed by its idempotency key: ${gateway}, ${tail}`
      : `the answer to the commit to ${where} was lost and ${gateway}${why === "refused" ? `; its retry, pinned to resource version ${request.expectedResourceVersion}, was refused because the sandbox changed, by this commit or another,` : ","} ${tail}${why === "lost" ? ", or pin expectedResourceVersion" : ""}`;
  return new CommitOutcomeUnknownError(message, {
    sandbox: request.sandbox,
    ...(workspace !== undefined ? { workspace } : {}),
    ...(cause !== undefined ? { cause, connectCode: ConnectError.from(cause).code } : {}),
  });
}

/** `name` as one shell word: as is when it needs no quoting. */
function shellWord(name: string): string {
  return /^[A-Za-z0-9._@%+=:,/-]+$/.test(name) ? name : `'${name.replace(/'/g, `'\\''`)}'`;
}
