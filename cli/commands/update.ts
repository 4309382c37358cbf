// The shared flow of `policy set`, `settings set` and `settings delete`: commit, optionally wait
// with a spinner, report the outcome and turn it into the exit status. Also the report of a wait
// that ended here (timeout or Ctrl-C), shared with `operation wait`: one message on stderr with
// the committed version and the command that resumes the wait as it was asked for.

import {
  CompletionTimeoutError,
  newIdempotencyKey,
  type Completion,
  type IdempotencyKeyRef,
  type OperationStatus,
  type UpdateResult,
  type WaitOptions,
  type WaitedUpdateResult,
} from "openshell-config";
import { EXIT, exitCodeOf, reportProblems, statusJson, statusRows, summarize } from "../outcome.js";
import { startSpinner, type Spinner } from "../spinner.js";
import { checkCommand, formatTimeoutFlag, rerunCommand, resumeTimeout, waitCommand, type Repeat } from "../resume.js";
import { DEFAULT_TIMEOUT_MS, type WaitFlags } from "../args.js";
import type { CommandContext } from "./context.js";

export interface UpdateSpec extends WaitFlags {
  readonly sandbox: string;
  readonly workspace: string | undefined;
  readonly idempotencyKey: string | undefined;
  /** What is changed, for messages: `policy`, `setting log_level`. */
  readonly what: string;
  /** Sends the update through the SDK. */
  send(options: {
    readonly idempotencyKey: string;
    readonly signal: AbortSignal;
    readonly wait?: WaitOptions;
  }): Promise<UpdateResult | WaitedUpdateResult>;
  /** The change as sent, for resuming by idempotency key. */
  readonly change: IdempotencyKeyRef["request"];
  /** The subject of a committed update, e.g. `policy v4 of sandbox web`. */
  subject(res: UpdateResult): string;
  /** Rows describing the committed change, for the human table. */
  rows(res: UpdateResult): [string, string | undefined][];
  /** The committed change as JSON-ready data. */
  json(res: UpdateResult): Record<string, unknown>;
}

/** Progress text for the spinner: `base: pending`, `base: gateway unavailable, retry 2`. */
export function progressHandler(spinner: Spinner, base: string): NonNullable<WaitOptions["onProgress"]> {
  return (e) => spinner.update(e.type === "state" ? `${base}: ${e.status.state}` : `${base}: gateway unavailable, retry ${e.attempt}`);
}

/** What follow-up commands repeat of this command line. */
function repeatOf(ctx: CommandContext): Repeat {
  return { connectionArgs: ctx.connectionArgs, format: ctx.out.format };
}

/** The policy version an operation's target names, if any. */
function policyVersionOf(s: OperationStatus | undefined): number | undefined {
  const t = s?.target;
  return t?.kind === "sandbox-config" || t?.kind === "policy-version" ? t.policyVersion : undefined;
}

/** `policy v3`, `policy v3 (settings revision 5)`, for an operation known by id alone. */
function describeTarget(s: OperationStatus): string | undefined {
  const t = s.target;
  if (t === undefined) return undefined;
  switch (t.kind) {
    case "sandbox-config":
      return `policy v${t.policyVersion}${t.settingsRevision > 0n ? ` (settings revision ${t.settingsRevision})` : ""}`;
    case "policy-version":
      return `policy v${t.policyVersion}`;
    case "provider-environment":
      return `provider environment revision ${t.providerEnvRevision}`;
    case "provider-target":
      return `provider ${t.providerId}`;
  }
}

export async function runUpdate(ctx: CommandContext, spec: UpdateSpec): Promise<number> {
  const { out } = ctx;
  const idempotencyKey = spec.idempotencyKey ?? newIdempotencyKey();
  if (!spec.wait) {
    const res = await spec.send({ idempotencyKey, signal: ctx.signal });
    const id = res.operation?.operationId;
    out.line(`${spec.subject(res)}: committed`);
    out.fields([...spec.rows(res), ["idempotency key", idempotencyKey], ["operation", id || undefined], ["state", res.operation?.state]]);
    // A hint, not the answer: on stderr (the operation id is in the answer above).
    if (id) out.note(`wait for the outcome: ${waitCommand(repeatOf(ctx), id, { workspace: spec.workspace })}`);
    out.json({ ...spec.json(res), idempotencyKey, operationId: id ?? null, operation: res.operation ? statusJson(res.operation) : null });
    return EXIT.ok;
  }

  // Commit first, then wait by the handle: from the commit on, the version and the operation are
  // known (to the spinner, and to the message when the wait ends here).
  const deadline = Date.now() + spec.timeoutMs;
  const spinner = startSpinner(ctx.spinnerStream, `committing the ${spec.what} of sandbox ${spec.sandbox}`);
  let res: UpdateResult;
  try {
    res = await spec.send({ idempotencyKey, signal: ctx.signal });
  } catch (err) {
    spinner.stop();
    if (ctx.signal.aborted) return reportNotConfirmed(ctx, spec, idempotencyKey);
    throw err;
  }
  const subject = spec.subject(res);
  const committed = spec.what === "policy" ? subject : `${subject} (settings revision ${res.settingsRevision})`;
  const change = spec.what === "policy" ? `policy v${res.policyVersion}` : spec.what;
  const base = `${change} committed, waiting for sandbox ${spec.sandbox}`;
  spinner.update(`${base}: ${res.operation?.state ?? "pending"}`);
  let seen = res.operation;
  let completion: Completion;
  try {
    const onProgress = progressHandler(spinner, base);
    completion = await ctx.client.awaitCompletion(res.handle, {
      timeoutMs: Math.max(1, deadline - Date.now()),
      signal: ctx.signal,
      onProgress: (e) => {
        if (e.type === "state") seen = e.status;
        onProgress(e);
      },
    });
  } catch (err) {
    spinner.stop();
    if (err instanceof CompletionTimeoutError) {
      return reportWaitEnded(ctx, err, {
        operationId: res.operation?.operationId || undefined,
        status: seen,
        describe: () => committed,
        timeoutMs: spec.timeoutMs,
        subject: committed,
        workspace: spec.workspace,
        idempotencyKey,
        check: checkCommand(repeatOf(ctx), { sandbox: spec.sandbox, workspace: spec.workspace, settings: spec.what !== "policy" }),
        extra: { ...spec.json(res), idempotencyKey },
      });
    }
    throw err;
  }
  spinner.stop();
  out.line(summarize(completion, subject));
  out.fields([...spec.rows(res), ["idempotency key", idempotencyKey], ...statusRows(completion)]);
  out.json({ ...spec.json(res), idempotencyKey, operationId: completion.operationId || null, completion: statusJson(completion) });
  reportProblems(out, completion, subject);
  return exitCodeOf(completion);
}

/**
 * Ctrl-C before the gateway answered the commit: the change may or may not be committed. The
 * same command with the same idempotency key commits it at most once.
 */
function reportNotConfirmed(ctx: CommandContext, spec: UpdateSpec, idempotencyKey: string): number {
  const rerun = rerunCommand(process.argv.slice(2), idempotencyKey);
  ctx.out.json({ sandbox: spec.sandbox, idempotencyKey, operationId: null, state: "unknown", timedOut: false, interrupted: true, resume: rerun });
  ctx.out.note(
    `interrupted before the gateway confirmed the ${spec.what} of sandbox ${spec.sandbox}: it may or may not be committed; the same command with its idempotency key commits it at most once on a gateway that tracks operations (on one that does not, check ${checkCommand(repeatOf(ctx), { sandbox: spec.sandbox, workspace: spec.workspace, settings: spec.what !== "policy" })} first)`,
  );
  ctx.out.note(`resume with: ${rerun}`);
  return EXIT.interrupted;
}

// Reads after a wait ended are bounded: the user is waiting for the prompt.
const READ_AFTER_WAIT_MS = 3_000;

/** The operation's current status (read only), or undefined when it cannot be read quickly. */
async function readOperation(ctx: CommandContext, operationId: string, workspace: string | undefined): Promise<OperationStatus | undefined> {
  try {
    return await ctx.client.getOperation(workspace === undefined ? { operationId } : { operationId, workspace }, { signal: AbortSignal.timeout(READ_AFTER_WAIT_MS) });
  } catch {
    return undefined;
  }
}

/** Prints the outcome of `operation wait`. */
export function reportCompletion(ctx: CommandContext, c: Completion, subject: string): number {
  ctx.out.line(summarize(c, subject));
  ctx.out.fields(statusRows(c));
  ctx.out.json(statusJson(c));
  reportProblems(ctx.out, c, subject);
  return exitCodeOf(c);
}

/**
 * A wait that ended here: by the local deadline (exit 124), Ctrl-C (exit 130), or a gateway that
 * stayed unreachable through the SDK's retries (exit 69, EX_UNAVAILABLE). The operation keeps
 * running at the gateway. One message on stderr, e.g.
 *
 *     policy v3 of sandbox web committed; still pending after 2s (operation 0f3c…)
 *     resume with: openshell-config operation wait 0f3c… --timeout 2s
 *
 * and with `--output json` the same facts as a document on stdout (nothing on stdout otherwise:
 * there is no outcome to print).
 */
export async function reportWaitEnded(
  ctx: CommandContext,
  err: CompletionTimeoutError,
  info: {
    /** The operation, when known (`err.operationId`, or looked up). */
    readonly operationId: string | undefined;
    readonly timeoutMs: number;
    /** What was waited for, e.g. `policy of sandbox web` or `operation 0f3c…`. */
    readonly subject: string;
    readonly workspace: string | undefined;
    /** The operation's status after the wait; read here by id when not given. */
    readonly status?: OperationStatus | undefined;
    /** The committed change named from the status, e.g. `policy v3 of sandbox web`. */
    readonly describe?: (status: OperationStatus) => string | undefined;
    /** For an update whose operation id never arrived: resending with this key resumes it. */
    readonly idempotencyKey?: string;
    /**
     * For an update committed without an operation (a gateway that tracks none, and so ignores
     * idempotency keys): the command that shows what became of it, printed instead of a resend.
     */
    readonly check?: string;
    readonly extra?: Record<string, unknown>;
  },
): Promise<number> {
  const { out } = ctx;
  const interrupted = err.reason === "aborted";
  const unreachable = err.reason === "unavailable";
  const id = info.operationId;
  // A gateway that could not be reached through the retries is not asked again here.
  const status = info.status ?? (id !== undefined && !unreachable ? await readOperation(ctx, id, info.workspace) : undefined);
  const committed = status === undefined ? undefined : (info.describe ?? describeTarget)(status);
  // Repeated only when it differs from the default and is not too short to be of use; `0` (no
  // limit) never times out.
  const timeoutMs = resumeTimeout(info.timeoutMs, DEFAULT_TIMEOUT_MS);
  const after = interrupted
    ? "when interrupted"
    : err.reason === "server-deadline"
      ? "when the gateway ended the wait"
      : unreachable
        ? `when the gateway could not be reached (${gatewayLoss(err)})`
        : `after ${formatTimeoutFlag(info.timeoutMs)}`;
  const still = status === undefined || status.state === "pending" ? `still pending ${after}` : `${status.state} just after the wait ended (${after.replace(/^(after|when) /, "")})`;

  let message: string;
  let resume: string | undefined;
  if (id !== undefined) {
    resume = waitCommand(repeatOf(ctx), id, { workspace: info.workspace, timeoutMs });
    message =
      committed !== undefined
        ? `${committed} committed; ${still} (operation ${id})`
        : info.subject.includes(id)
          ? `${info.subject}: ${still}`
          : `${info.subject} committed; ${still} (operation ${id})`;
  } else if (info.check !== undefined) {
    // Committed on a gateway that tracks no operation: it ignores idempotency keys, so the same
    // command again could commit a second revision. Point at where the outcome shows instead.
    message = `${committed ?? info.subject} committed; ${still} (the gateway tracks no operation for it, and a resend could commit it again)`;
  } else {
    message = `${committed ?? info.subject} committed; ${still} (the gateway tracks no operation for it)`;
    if (info.idempotencyKey !== undefined) resume = rerunCommand(process.argv.slice(2), info.idempotencyKey);
  }
  out.json({
    ...info.extra,
    operationId: id ?? null,
    state: status?.state ?? (id !== undefined ? "pending" : "unknown"),
    policyVersion: policyVersionOf(status) ?? null,
    target: status?.target ?? null,
    timedOut: !interrupted && !unreachable,
    interrupted,
    unreachable,
    resume: resume ?? null,
    ...(id === undefined && info.check !== undefined ? { check: info.check } : {}),
  });
  out.note(message);
  if (resume !== undefined) out.note(`resume with: ${resume}`);
  else if (id === undefined && info.check !== undefined) out.note(`follow it with: ${info.check}`);
  return interrupted ? EXIT.interrupted : unreachable ? EXIT.unreachable : EXIT.timeout;
}

/** The last attempt's failure, short: `connect ECONNREFUSED 127.0.0.1:8080`, `protocol error: missing status`. */
function gatewayLoss(err: CompletionTimeoutError): string {
  const cause = err.cause as { message?: unknown } | undefined;
  const text = typeof cause?.message === "string" && cause.message !== "" ? cause.message : "no answer";
  return text.length > 120 ? `${text.slice(0, 119)}…` : text;
}
