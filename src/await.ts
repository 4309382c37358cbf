// Waiting for a committed update's terminal outcome, by whichever means the gateway offers, best
// first: the WatchConfigUpdateOperations stream (our extension), a server-side wait by re-sending
// the identical request with its idempotency key (upstream), polling the operation, and, for a
// gateway that tracks no operations at all, polling the policy status. Every UpdateConfig goes
// through commit.ts, which never resends one that could commit twice.
//
// A wait that ends on this side (deadline, abort, or a gateway lost through the retry rule's
// attempts) throws CompletionTimeoutError carrying a ref that resumes it; a terminal outcome, good
// or bad, is returned as data.

import { Code, ConnectError } from "@connectrpc/connect";
import {
  ConfigUpdateWaitMode,
  type UpdateConfigRequest,
  type UpdateConfigResponse,
} from "./gen/openshell/v1/config_pb.js";
import { fromOperation, isTerminal, type Completion, type OperationStatus } from "./completion.js";
import {
  CompletionTimeoutError,
  CompletionUnavailableError,
  InvalidArgumentError,
  OpenShellConfigError,
  UnavailableError,
  operationIdOf,
  toSdkError,
} from "./errors.js";
import { handleRequest } from "./refs.js";
import { isOperationHandle, type CompletionRef, type IdempotencyKeyRef } from "./handle.js";
import type { ProgressEvent, WaitOptions } from "./wait-options.js";
import { buildRequest } from "./update.js";
import { workspaceScope } from "./workspace.js";
import { deadlineSignal, isTransient, withRetry } from "./retry.js";
import { learnTracking, noteTracking, sendUpdate, type SendUpdateOptions } from "./commit.js";
import { afterSlice, checkDeadline, LocalDeadline, pauseFor, type Pace } from "./wait-pace.js";
import { policyStatusOnce } from "./policy-status.js";
import { drainWatch } from "./watch-drain.js";
import { toDuration } from "./convert/timestamp.js";
import type { ClientContext } from "./context.js";

/** What the wait targets, normalized from any ref form. */
export interface WaitTarget {
  operationId: string | undefined;
  readonly workspace: string | undefined;
  /** The commit-only request; re-sending it with its key replays the committed operation. */
  readonly request: UpdateConfigRequest | undefined;
  /** The committed policy version, when known (what a gateway without operations is followed by). */
  policyVersion: number | undefined;
  /** The request has not been sent yet: its first send is the commit itself, not a resend. */
  fresh: boolean;
}

// Every slice of the wait (a server-side wait, a watch stream, a poll) ends through the pacing
// in wait-pace.ts: a pause after an early end, a yield, the deadline check.
interface Waiting {
  readonly ctx: ClientContext;
  readonly target: WaitTarget;
  readonly emit: (event: ProgressEvent) => void;
  /** The pacing shared by all slices, with the wait's signal and deadline. */
  readonly pace: Pace;
  /** The latest committed response seen on a replay. */
  response?: UpdateConfigResponse;
}

// Extra time granted to one server-side wait before the client gives up on that call.
const SERVER_WAIT_GRACE_MS = 10_000;

/** Normalizes any ref form, or throws InvalidArgumentError naming what is wrong. */
export function resolveRef(ctx: ClientContext, ref: CompletionRef): WaitTarget {
  if (isOperationHandle(ref)) {
    return {
      operationId: ref.operationId,
      workspace: ref.workspace,
      request: handleRequest(ref),
      policyVersion: ref.policyVersion,
      fresh: false,
    };
  }
  const r = ref as unknown as Partial<Record<string, unknown>>;
  if (typeof r.idempotencyKey === "string" && typeof r.request === "object" && r.request !== null) {
    const k = ref as IdempotencyKeyRef;
    const workspace = k.workspace ?? ctx.workspace;
    return {
      operationId: undefined,
      workspace,
      request: buildRequest(
        {
          sandbox: k.sandbox,
          idempotencyKey: k.idempotencyKey,
          workspace,
          expectedResourceVersion: k.expectedResourceVersion,
          annotations: k.annotations,
        },
        k.request,
      ),
      policyVersion: undefined,
      fresh: false,
    };
  }
  if (typeof r.operationId === "string" && r.operationId !== "") {
    return {
      operationId: r.operationId,
      workspace: (r.workspace as string | undefined) ?? ctx.workspace,
      request: undefined,
      policyVersion: undefined,
      fresh: false,
    };
  }
  throw new InvalidArgumentError(
    "ref must be an operation handle, { operationId }, or { sandbox, idempotencyKey, request }",
    { field: "ref" },
  );
}

/**
 * Waits until the target reaches a terminal state. Returns the outcome and, when one was seen,
 * the committed response of the request (for updates that waited from the start).
 */
export async function waitForTarget(
  ctx: ClientContext,
  target: WaitTarget,
  options: WaitOptions,
  errorRef: () => CompletionRef,
): Promise<{ completion: Completion; response: UpdateConfigResponse | undefined }> {
  const timeoutMs = options.timeoutMs ?? ctx.defaultWaitTimeoutMs;
  if (!(timeoutMs >= 0)) throw new InvalidArgumentError("timeoutMs must be a non-negative number", { field: "timeoutMs" });
  const deadline = Date.now() + timeoutMs;
  // A wait resumed from a ref (not an update's own first send) follows a change already sent.
  const resumed = !target.fresh;
  const ds = deadlineSignal(options.signal, deadline);
  let last = "";
  const w: Waiting = {
    ctx,
    target,
    pace: { signal: ds.signal, deadline, earlyEnds: 0 },
    emit: (event) => {
      if (event.type === "state") {
        const s = event.status;
        const key = `${s.state}|${s.outcome}|${s.target === undefined ? "" : "t"}`;
        if (key === last) return;
        last = key;
      }
      options.onProgress?.(event);
    },
  };
  try {
    const completion = await waitAny(w);
    return { completion, response: w.response };
  } catch (err) {
    // The deadline timer may not have run yet when a slice saw the deadline pass.
    const expired = ds.expired() || err instanceof LocalDeadline;
    // Before the gateway confirmed anything, the commit itself may not have happened: the ref
    // still resumes correctly (re-sending with the same key commits at most once).
    const known = target.operationId !== undefined || w.response !== undefined || target.policyVersion !== undefined;
    const state = known
      ? target.operationId !== undefined
        ? "the update remains committed and its operation keeps running"
        : "the update remains committed"
      : ctx.operations === "untracked"
        ? "the update may or may not have been committed, and this gateway does not track operations: check the sandbox's policy history before sending it again"
        : "the update may not have been committed yet; resuming with the same idempotency key commits it at most once";
    // Only once the commit has returned (or for a wait resumed from a ref): an update whose own
    // commit got no answer fails as the commit (UnavailableError), not as a wait.
    if (!expired && !options.signal?.aborted && (known || resumed) && lostGateway(err)) {
      // The gateway went away (down, restarting, UNAVAILABLE, a stream cut short) and stayed away
      // through the retry rule's attempts. Nothing says the operation ended: the wait, not the
      // update, failed, and the ref resumes it once the gateway is back.
      const cause = toSdkError(err);
      throw new CompletionTimeoutError(`stopped waiting: the gateway could not be reached (${cause.message}); ${state}`, {
        reason: "unavailable",
        ref: errorRef(),
        ...(target.operationId ? { operationId: target.operationId } : {}),
        cause,
        ...(cause instanceof OpenShellConfigError && cause.connectCode !== undefined ? { connectCode: cause.connectCode } : {}),
      });
    }
    if (expired || options.signal?.aborted) {
      const aborted = !expired;
      throw new CompletionTimeoutError(
        aborted ? `stopped waiting: the wait was aborted; ${state}` : `stopped waiting after ${timeoutMs} ms; ${state}`,
        {
          reason: aborted ? "aborted" : "deadline",
          ref: errorRef(),
          ...(target.operationId ? { operationId: target.operationId } : {}),
          cause: aborted ? options.signal?.reason : err,
        },
      );
    }
    throw toSdkError(err, errorRef());
  } finally {
    ds.dispose();
  }
}

async function waitAny(w: Waiting): Promise<Completion> {
  const { ctx, target } = w;
  if (target.operationId !== undefined && (ctx.watch !== "unsupported" || target.request === undefined)) {
    return waitById(w);
  }
  // Committed on a gateway that returned no operation: follow its policy version, never resend.
  if (target.operationId === undefined && target.policyVersion !== undefined && target.request !== undefined) {
    return waitForPolicyStatus(w, target.policyVersion, undefined);
  }
  if (target.request !== undefined) {
    if (!target.fresh) await assertSettingsResumable(ctx, target, w.pace.signal);
    return waitByRequest(w);
  }
  throw new InvalidArgumentError("nothing to wait for: the ref has neither an operation id nor a request", {
    field: "ref",
  });
}

/** The server-side wait: re-send the committed request with WAIT_FOR_COMPLETION, in bounded slices. */
async function waitByRequest(w: Waiting): Promise<Completion> {
  const { ctx, target, pace } = w;
  let resend: SendUpdateOptions["resend"] = target.fresh ? false : "resume";
  for (;;) {
    checkDeadline(pace);
    // A shallow copy: only the two top-level wait fields differ from the committed request, and
    // nothing below them is ever mutated (a deep clone of the policy per slice costs more CPU and
    // garbage than the rest of the SDK's work on an update).
    const req: UpdateConfigRequest = { ...target.request!, waitMode: ConfigUpdateWaitMode.WAIT_FOR_COMPLETION };
    // End each server wait a little before the local deadline, so that the gateway's answer
    // (with the operation-id) arrives before the local wait gives up. Never send zero: the
    // gateway reads a zero wait_timeout as its 60 s default.
    const remaining = pace.deadline - Date.now();
    const sliceMs = Math.max(
      1,
      Math.floor(Math.min(ctx.serverWaitSliceMs, remaining > 500 ? remaining - 250 : remaining / 2)),
    );
    req.waitTimeout = toDuration(sliceMs);
    const startedAt = Date.now();
    let res: UpdateConfigResponse;
    try {
      res = await sendUpdate(ctx, req, {
        workspace: target.workspace,
        signal: pace.signal,
        timeoutMs: sliceMs + SERVER_WAIT_GRACE_MS,
        resend,
        onRetry: (error, attempt) => w.emit({ type: "retry", attempt, error }),
      });
    } catch (err) {
      if (pace.signal.aborted) throw err;
      const ce = ConnectError.from(err);
      // The slice ended with the operation still running: learn its id and wait again, after a
      // pause when the gateway ended it early. Without an id the answer may be lost: the next
      // send is a resend, which commit.ts allows only when it cannot commit twice.
      if (ce.code === Code.DeadlineExceeded) {
        target.operationId ??= operationIdOf(ce);
        resend = "lost";
        await afterSlice(pace, startedAt, sliceMs);
        // Knowing the id, the watch stream is cheaper than re-sending the whole request.
        if (target.operationId !== undefined && ctx.watch !== "unsupported") return waitById(w);
        continue;
      }
      throw err;
    } finally {
      target.fresh = false;
    }
    w.response = res;
    if (res.operation === undefined) {
      if (target.request!.settingKey === "") target.policyVersion = res.version;
      return waitForPolicyStatus(w, res.version, res);
    }
    const status = fromOperation(res.operation);
    target.operationId ??= status.operationId || undefined;
    w.emit({ type: "state", status });
    if (isTerminal(status)) return status;
    // A gateway that answered PENDING to a waited request does not wait server-side.
    return waitById({ ...w, target: { ...target, request: undefined } });
  }
}

/** Follow one operation by id: the watch stream when offered, else the request's server wait, else polling. */
async function waitById(w: Waiting): Promise<Completion> {
  if (w.ctx.watch !== "unsupported") {
    const done = await watch(w);
    if (done !== undefined) return done;
  }
  if (w.target.request !== undefined) return waitByRequest(w);
  return pollOperation(w);
}

/** Returns the outcome, or `undefined` when the gateway does not implement the watch. */
async function watch(w: Waiting): Promise<Completion | undefined> {
  const { ctx, target, pace } = w;
  const id = target.operationId!;
  let failures = 0;
  for (;;) {
    checkDeadline(pace);
    const startedAt = Date.now();
    // A watch should stay open until the outcome; one that closes sooner than this ended early.
    const expectedMs = Math.min(pace.deadline - startedAt, ctx.serverWaitSliceMs);
    // Connect's stream iterator has no return(): leaving the loop does not end the call, so each
    // stream gets its own signal, aborted once we stop reading (else it stays open, holding a
    // connection, until the gateway closes it).
    const call = new AbortController();
    const stop = () => call.abort(pace.signal.reason);
    if (pace.signal.aborted) stop();
    else pace.signal.addEventListener("abort", stop, { once: true });
    let handedOff = false;
    let failed = false;
    try {
      const stream = ctx.rpc.watchConfigUpdateOperations(
        { operationIds: [id], workspaceScope: workspaceScope(target.workspace) },
        await ctx.callOptions(call.signal),
      );
      const messages = stream[Symbol.asyncIterator]();
      for (;;) {
        const next = await messages.next();
        if (next.done) break;
        const msg = next.value;
        // A stream that never pauses must not outlive the deadline either.
        checkDeadline(pace);
        ctx.watch = "supported";
        failures = 0;
        if (msg.operation === undefined || msg.operation.operationId !== id) continue;
        const status = fromOperation(msg.operation);
        w.emit({ type: "state", status });
        if (isTerminal(status)) {
          handedOff = true;
          drainWatch(messages, call);
          return status;
        }
      }
      // The gateway closed the stream (shutting down, rebalancing): watch again.
    } catch (err) {
      if (pace.signal.aborted || err instanceof LocalDeadline) throw err;
      const ce = ConnectError.from(err);
      if (ce.code === Code.Unimplemented) {
        ctx.watch = "unsupported";
        return undefined;
      }
      if (!isTransient(err)) throw err;
      if (++failures > (ctx.retry.retries ?? 6)) throw err;
      w.emit({ type: "retry", attempt: failures, error: err });
      failed = true;
    } finally {
      pace.signal.removeEventListener("abort", stop);
      if (!handedOff) call.abort();
    }
    if (failed) await pauseFor(pace, backoff(failures, ctx.retry.minDelayMs ?? 100, ctx.retry.maxDelayMs ?? 5_000));
    else await afterSlice(pace, startedAt, expectedMs);
  }
}

/** Last resort for an id-only ref on a gateway without the watch: poll with capped backoff. */
async function pollOperation(w: Waiting): Promise<Completion> {
  const { ctx, target, pace } = w;
  let delay = ctx.poll.minDelayMs;
  for (;;) {
    checkDeadline(pace);
    const res = await readOperation(ctx, target.operationId!, target.workspace, pace.signal);
    if (res.operation !== undefined) {
      const status = fromOperation(res.operation);
      w.emit({ type: "state", status });
      if (isTerminal(status)) return status;
    }
    await pauseFor(pace, delay);
    delay = Math.min(delay * 2, ctx.poll.maxDelayMs);
  }
}

/**
 * A gateway that returns no operation: follow the committed policy version's load status.
 * `committed`: the response, when this wait committed the update (a resumed handle has none).
 */
async function waitForPolicyStatus(w: Waiting, version: number, committed: UpdateConfigResponse | undefined): Promise<Completion> {
  const { ctx, target, pace } = w;
  const request = target.request!;
  if (request.settingKey !== "") {
    throw new CompletionUnavailableError(
      "the update was committed, but this gateway reports no completion for settings changes",
      committed,
    );
  }
  let delay = ctx.poll.minDelayMs;
  for (;;) {
    checkDeadline(pace);
    const status = await policyStatusOnce(ctx, request.sandbox, target.workspace, version, pace.signal);
    w.emit({ type: "state", status });
    if (isTerminal(status)) return status;
    await pauseFor(pace, delay);
    delay = Math.min(delay * 2, ctx.poll.maxDelayMs);
  }
}

/**
 * A settings change resumed by its request (a key ref or a handle without operation id) on a
 * gateway without operations: nothing can report its completion, and resending it is no way to
 * learn it (commit.ts would refuse a resend).
 */
async function assertSettingsResumable(ctx: ClientContext, target: WaitTarget, signal: AbortSignal | undefined): Promise<void> {
  if (target.request!.settingKey === "") return;
  if ((await learnTracking(ctx, target.workspace, signal)) === "untracked") {
    throw new CompletionUnavailableError("this gateway tracks no operations, so it reports no completion for settings changes", undefined);
  }
}

/** GetConfigUpdateOperation with retries; its answer says whether the gateway tracks operations. */
async function readOperation(ctx: ClientContext, operationId: string, workspace: string | undefined, signal: AbortSignal | undefined) {
  try {
    const res = await withRetry(
      async () => ctx.rpc.getConfigUpdateOperation({ operationId, workspaceScope: workspaceScope(workspace) }, await ctx.callOptions(signal)),
      // ABORTED here means the record changed while being read: read again.
      { ...ctx.retry, signal, retryOn: [Code.Aborted] },
    );
    noteTracking(ctx, true);
    return res;
  } catch (err) {
    if (!signal?.aborted && ConnectError.from(err).code === Code.Unimplemented) noteTracking(ctx, false);
    throw err;
  }
}

/** The gateway was not reached, or its answer was cut short: nothing was said about the operation. */
function lostGateway(err: unknown): boolean {
  // An interceptor's own retries (the CLI's) may end in an UnavailableError, possibly wrapped.
  for (let e = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof UnavailableError) return true;
  }
  if (err instanceof OpenShellConfigError) return false;
  return isTransient(err);
}

function backoff(attempt: number, min: number, max: number): number {
  const base = Math.min(max, min * 2 ** Math.max(0, attempt - 1));
  return base / 2 + Math.random() * (base / 2);
}

/** The current state of a target without waiting. A key ref replays the commit (never a new revision). */
export async function currentStatus(
  ctx: ClientContext,
  target: WaitTarget,
  signal: AbortSignal | undefined,
): Promise<OperationStatus> {
  try {
    if (target.operationId !== undefined) {
      const res = await readOperation(ctx, target.operationId, target.workspace, signal);
      if (res.operation === undefined) throw new ConnectError("update operation not found", Code.NotFound);
      return fromOperation(res.operation);
    }
    const request = target.request!;
    // Committed on a gateway that returned no operation: read its policy version's status.
    if (target.policyVersion !== undefined && request.settingKey === "") {
      return await policyStatusOnce(ctx, request.sandbox, target.workspace, target.policyVersion, signal);
    }
    if (!target.fresh) await assertSettingsResumable(ctx, target, signal);
    const res = await sendUpdate(ctx, request, { workspace: target.workspace, signal, resend: target.fresh ? false : "resume" });
    if (res.operation !== undefined) return fromOperation(res.operation);
    if (request.settingKey !== "") {
      throw new CompletionUnavailableError("this gateway reports no status for settings changes", res);
    }
    return await policyStatusOnce(ctx, request.sandbox, target.workspace, res.version, signal);
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    throw toSdkError(err);
  }
}
