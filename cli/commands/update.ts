// The shared flow of `policy set`, `settings set` and `settings delete`: commit, optionally wait
// with a spinner, report the outcome and turn it into the exit status. Also the report of a wait
// that ended here (timeout or Ctrl-C), shared with `operation wait`.

import {
  CompletionTimeoutError,
  newIdempotencyKey,
  type Completion,
  type IdempotencyKeyRef,
  type UpdateResult,
  type WaitOptions,
  type WaitedUpdateResult,
} from "openshell-config";
import { EXIT, exitCodeOf, reportProblems, statusJson, statusRows, summarize } from "../outcome.js";
import { formatElapsed, startSpinner, type Spinner } from "../spinner.js";
import type { WaitFlags } from "../args.js";
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

/** Progress text for the spinner. */
export function progressHandler(spinner: Spinner, base: string): NonNullable<WaitOptions["onProgress"]> {
  return (e) => {
    if (e.type === "state") {
      const id = e.status.operationId ? `operation ${e.status.operationId}, ` : "";
      spinner.update(`${base} (${id}${e.status.state})`);
    } else {
      spinner.update(`${base} (gateway unavailable, retry ${e.attempt})`);
    }
  };
}

export async function runUpdate(ctx: CommandContext, spec: UpdateSpec): Promise<number> {
  const { out } = ctx;
  const idempotencyKey = spec.idempotencyKey ?? newIdempotencyKey();
  if (!spec.wait) {
    const res = await spec.send({ idempotencyKey, signal: ctx.signal });
    const id = res.operation?.operationId;
    out.line(`${spec.subject(res)}: committed`);
    out.fields([...spec.rows(res), ["idempotency key", idempotencyKey], ["operation", id || undefined], ["state", res.operation?.state]]);
    if (id) {
      out.line();
      out.line(`wait for the outcome: ${ctx.resumeCommand(id, spec.workspace)}`);
    }
    out.json({ ...spec.json(res), idempotencyKey, operationId: id ?? null, operation: res.operation ? statusJson(res.operation) : null });
    return EXIT.ok;
  }

  const base = `waiting for sandbox ${spec.sandbox} to apply the ${spec.what}`;
  const spinner = startSpinner(ctx.spinnerStream, base);
  let res: WaitedUpdateResult;
  try {
    res = (await spec.send({
      idempotencyKey,
      signal: ctx.signal,
      wait: { timeoutMs: spec.timeoutMs, signal: ctx.signal, onProgress: progressHandler(spinner, base) },
    })) as WaitedUpdateResult;
  } catch (err) {
    spinner.stop();
    if (err instanceof CompletionTimeoutError) {
      return reportWaitEnded(ctx, err, {
        operationId: err.operationId ?? (err.reason === "aborted" ? undefined : await lookUpOperation(ctx, spec, idempotencyKey)),
        timeoutMs: spec.timeoutMs,
        subject: `${spec.what} of sandbox ${spec.sandbox}`,
        workspace: spec.workspace,
        idempotencyKey,
        extra: { sandbox: spec.sandbox, idempotencyKey },
      });
    }
    throw err;
  }
  spinner.stop();
  const c = res.completion;
  const subject = spec.subject(res);
  out.line(summarize(c, subject));
  out.fields([...spec.rows(res), ["idempotency key", idempotencyKey], ...statusRows(c)]);
  out.json({ ...spec.json(res), idempotencyKey, operationId: c.operationId || null, completion: statusJson(c) });
  reportProblems(out, c, subject);
  return exitCodeOf(c);
}

/**
 * The operation id of an update whose wait timed out before the gateway named it (a very short
 * --timeout, a slow gateway): replays the identical commit-only request with the same key, which
 * returns the original operation and never creates a second revision. Not after Ctrl-C: a user
 * who interrupted must not have an update committed on their behalf.
 */
async function lookUpOperation(ctx: CommandContext, spec: UpdateSpec, idempotencyKey: string): Promise<string | undefined> {
  try {
    const ref: IdempotencyKeyRef = { sandbox: spec.sandbox, idempotencyKey, request: spec.change, ...(spec.workspace !== undefined ? { workspace: spec.workspace } : {}) };
    const status = await ctx.client.getOperation(ref, { signal: AbortSignal.timeout(3_000) });
    return status.operationId || undefined;
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
 * A wait that ended here: by the local deadline (exit 124) or Ctrl-C (exit 130). The operation
 * keeps running at the gateway; prints its id and the command that resumes the wait.
 */
export function reportWaitEnded(
  ctx: CommandContext,
  err: CompletionTimeoutError,
  info: {
    /** The operation, when known (`err.operationId`, or looked up). */
    readonly operationId: string | undefined;
    readonly timeoutMs: number;
    readonly subject: string;
    readonly workspace: string | undefined;
    /** For an update whose operation id never arrived: resending with this key resumes it. */
    readonly idempotencyKey?: string;
    readonly extra?: Record<string, unknown>;
  },
): number {
  const { out } = ctx;
  const interrupted = err.reason === "aborted";
  const id = info.operationId;
  const resume = id ? ctx.resumeCommand(id, info.workspace) : undefined;
  const why = interrupted ? "interrupted" : `timed out after ${formatElapsed(info.timeoutMs)}`;
  out.line(
    id
      ? `${info.subject}: still pending (${why}); the operation keeps running at the gateway`
      : `${info.subject}: outcome unknown (${why}); the update may or may not have been committed`,
  );
  out.fields([
    ["operation", id],
    ["idempotency key", info.idempotencyKey],
  ]);
  out.line();
  if (resume) out.line(`resume with: ${resume}`);
  else if (info.idempotencyKey) {
    out.line(`resume by running the same command again with --idempotency-key ${info.idempotencyKey} (it commits the change at most once)`);
  }
  out.json({
    ...info.extra,
    operationId: id ?? null,
    state: id ? "pending" : "unknown",
    timedOut: !interrupted,
    interrupted,
    resume: resume ?? null,
  });
  out.error(id ? `${why} waiting for the outcome of operation ${id}; it keeps running at the gateway` : `${why} before the gateway confirmed the update`);
  return interrupted ? EXIT.interrupted : EXIT.timeout;
}
