// `policy rollout`: one policy to every sandbox a label selector matches, through the SDK's
// rollout() (in waves with gates, pauses and rollback when asked), written to the gateway's shared
// record when it keeps them (this process its driver); runAndReport also runs `policy rollout
// resume|approve|undo ID` (rollout-resume.ts). Prints the rollout id first, keeps the state on disk
// at every step (onState: a crash or Ctrl-C resumes with `policy rollout resume ID`), shows the
// waves as they go on stderr (rollout-display.ts), and ends with a summary on stdout: per-wave counts and gates, the gate
// failure, what was rolled back and what was left alone, counts by state and outcome, the
// sandboxes that did not apply (each with its operation id), the slowest of those that finished;
// the resume, approve or undo command, when one applies, on stderr.

import type { OperationHandle } from "openshell-config";
import { getRollout, rollout, type RolloutOptions, type RolloutResult, type RolloutRun, type RolloutState, type SandboxRolloutResult } from "openshell-config/rollout";
import { usageOf, UsageError } from "../args.js";
import type { RolloutCommand } from "../rollout-args.js";
import { createRolloutStore, rolloutStateDir } from "../rollout-store.js";
import { EXIT } from "../outcome.js";
import { countOf, formatDuration } from "../format.js";
import { readPolicyFile } from "../policy-file.js";
import { driverId } from "../rollout-locate.js";
import { startRolloutDisplay, waveName } from "../rollout-display.js";
import { resumeTimeout, rolloutApproveCommand, rolloutResumeCommand, rolloutUndoCommand } from "../resume.js";
import { DEFAULT_TIMEOUT_MS } from "../types.js";
import type { CommandContext } from "./context.js";

// Sandboxes listed one by one in the summary (those that did not apply); the JSON has them all.
const LISTED = 20;
/** Exit status of a rollout paused for approval: not done, not failed (see ROLLOUT_EXIT_HELP). */
export const EXIT_PAUSED = 3;

/** The options for rollout(): a saved state to continue, or a new (or re-run) rollout. */
async function rolloutOptions(cmd: RolloutCommand, saved: RolloutOptions["resume"]): Promise<RolloutOptions> {
  const limits = {
    ...(cmd.concurrency !== undefined ? { concurrency: cmd.concurrency } : {}),
    ...(cmd.maxFailures !== undefined ? { maxFailures: cmd.maxFailures } : {}),
    ...(cmd.timeoutMs !== undefined ? { waitTimeoutMs: cmd.timeoutMs } : {}),
  };
  if (saved !== undefined) return { ...limits, resume: saved };
  const gate = cmd.gate;
  const policy = await readPolicyFile(cmd.file!);
  return {
    ...limits,
    ...(cmd.resume !== undefined ? { id: cmd.resume } : {}),
    // A set-based selector arrives resolved to names (commands/rollout-select.ts).
    ...(cmd.sandboxes !== undefined ? { sandboxes: cmd.sandboxes } : { labelSelector: cmd.selector! }),
    ...(cmd.workspace !== undefined ? { workspace: cmd.workspace } : {}),
    ...(cmd.waves !== undefined ? { waves: cmd.waves } : {}),
    ...(gate !== undefined ? { gate } : {}),
    ...(cmd.rollback ? { rollback: "on-halt" as const } : {}),
    policy,
  };
}

export async function policyRollout(ctx: CommandContext, cmd: RolloutCommand): Promise<number> {
  const store = createRolloutStore(rolloutStateDir());
  const saved = cmd.resume === undefined ? undefined : store.load(cmd.resume);
  if (saved !== undefined && cmd.file !== undefined) {
    throw new UsageError(`rollout ${cmd.resume} has a saved state (${store.pathOf(cmd.resume!)}); resume it without --selector and --file`, usageOf("policy rollout"));
  }
  if (cmd.resume !== undefined && saved === undefined && cmd.file === undefined) {
    throw new UsageError(`no saved state for rollout ${cmd.resume} in ${rolloutStateDir()}; give --selector and --file to run it again`, usageOf("policy rollout"));
  }
  if (saved !== undefined && cmd.workspace !== undefined && cmd.workspace !== saved.workspace) {
    throw new UsageError(`rollout ${cmd.resume} runs in workspace ${saved.workspace ?? "(default)"}; --workspace cannot change it`, usageOf("policy rollout"));
  }
  const options = await rolloutOptions(cmd, saved);
  // The shared record when the gateway keeps them ("auto"); --four-eyes needs it to mean anything.
  const share = { driver: driverId(), share: cmd.fourEyes ? ("required" as const) : ("auto" as const), ...(cmd.fourEyes ? { requireDistinctApprover: true } : {}) };

  // --four-eyes says so; a rollout resumed from its saved state says nothing (its record is asked).
  const fourEyes = cmd.fourEyes === true ? true : saved === undefined ? false : undefined;
  return runAndReport(ctx, { selector: cmd.selector ?? saved?.labelSelector, timeoutMs: cmd.timeoutMs, ...(fourEyes !== undefined ? { fourEyes } : {}) }, (onProgress, onState) =>
    rollout(ctx.client, { ...options, ...share, signal: ctx.signal, onProgress, onState }),
  );
}

/**
 * Runs a rollout (or undo) with the display and the state file, then prints the summary; returns
 * the exit status. A run resumed by id (resumeRollout) takes the shared record's lease first: a
 * refusal (RolloutLeaseHeldError) rejects it before anything is sent.
 */
export async function runAndReport(
  ctx: CommandContext,
  how: {
    readonly selector: string | undefined;
    readonly timeoutMs: number | undefined;
    readonly undo?: boolean;
    /** The rollout needs an approver other than its creator (--four-eyes, or its shared record says so). */
    readonly fourEyes?: boolean;
  },
  start: (onProgress: RolloutOptions["onProgress"], onState: (state: RolloutState) => void) => RolloutRun,
): Promise<number> {
  const { out } = ctx;
  const store = createRolloutStore(rolloutStateDir());
  let run: RolloutRun | undefined;
  const display = startRolloutDisplay(ctx.spinnerStream, out, () => run!.state(), { selector: how.selector, undo: how.undo === true });
  // onState is awaited by the SDK where resuming needs it: the write (temp file, rename) is done when it returns.
  run = start((e) => display.event(e), (state) => void store.save(state));
  let result: RolloutResult;
  try {
    result = await withOperationIds(ctx, await run);
  } finally {
    display.stop();
  }
  const stateFile = store.save(result.state);
  const selector = how.selector ?? result.state.labelSelector;
  if (result.counts.total === 0) {
    // Most likely a mistyped selector: a deploy script should not read this as success.
    out.error(`no sandboxes match ${selector}: nothing was sent`);
    out.json({ id: result.id, selector: selector ?? null, total: 0 });
    return EXIT.failed;
  }
  const repeat = { connectionArgs: ctx.connectionArgs, format: out.format };
  const resume = rolloutResumeCommand(repeat, result.id, { timeoutMs: how.timeoutMs === undefined ? undefined : resumeTimeout(how.timeoutMs, DEFAULT_TIMEOUT_MS) });
  const undoable = Object.keys(result.state.before).length > 0;
  const undo = rolloutUndoCommand(repeat, result.id);
  const next = nextSteps(result, undoable, how.undo === true);
  const slowest = slowestFinished(result);
  printSummary(ctx, result, slowest, how.undo === true);
  // A rollout that needs four eyes waits for someone else: its creator's resume would be refused.
  // Known from --four-eyes or the shared record of a resumed one; otherwise (a saved state resumed
  // with --resume) the gateway's record is asked, once, when the rollout waits for approval.
  const paused = result.phase === "paused" && result.state.pausedUntil === undefined;
  const otherApproves =
    paused &&
    (how.fourEyes ??
      (await getRollout(ctx.client, result.id, { ...(result.state.workspace !== undefined ? { workspace: result.state.workspace } : {}), signal: ctx.signal }).then(
        (r) => r.requireDistinctApprover,
        () => false,
      )));
  const goOn = otherApproves ? rolloutApproveCommand(repeat, result.id) : resume;
  if (next.resume) out.note(`${otherApproves ? "another person approves the next wave with" : result.phase === "paused" ? "approve the next wave with" : "resume with"}: ${goOn}`);
  if (next.undo) out.note(`undo with: ${undo}`);
  out.json({
    id: result.id,
    selector: selector ?? null,
    stateFile,
    phase: result.phase,
    resume: next.resume ? goOn : null,
    undo: next.undo ? undo : null,
    total: result.counts.total,
    counts: result.counts,
    failures: result.failures,
    halted: result.halted,
    aborted: result.aborted,
    complete: result.complete,
    durationMs: result.durationMs,
    waves: result.waves.map((w) => ({
      index: w.index,
      name: waveName(w.index, result.waves),
      sandboxes: w.sandboxes.length,
      counts: w.counts,
      failures: w.failures,
      gate: w.gate,
      reason: w.reason ?? null,
    })),
    gateFailure: result.gateFailure ?? null,
    rollback: result.rollback ?? null,
    slowest,
    sandboxes: result.sandboxes.map(sandboxJson),
  });
  return how.undo ? undoExitCode(result) : exitCodeOf(result);
}

/** Which follow-up commands apply: resume (or approve) an unfinished rollout, undo one that changed sandboxes. */
function nextSteps(r: RolloutResult, undoable: boolean, undoing: boolean): { resume: boolean; undo: boolean } {
  if (undoing) return { resume: false, undo: r.phase !== "rolled-back" };
  const unfinished = !r.complete && r.phase !== "rolled-back";
  // A failed gate stays failed when resumed: what is left to do then is undo.
  const resume = unfinished && !(r.phase === "halted" && r.waves.length > 1);
  const changed = Object.keys(r.state.refs).length > 0;
  return { resume, undo: undoable && changed && r.phase !== "rolled-back" && r.phase !== "complete" };
}

/** 130 interrupted; 1 a rollback failed; 124 a rollback is still pending; else 0 (left-alone sandboxes are reported, not failures). */
export function undoExitCode(r: RolloutResult): number {
  if (r.aborted) return EXIT.interrupted;
  if ((r.rollback?.failed.length ?? 0) > 0) return EXIT.failed;
  if ((r.rollback?.pending.length ?? 0) > 0 || r.phase === "incomplete") return EXIT.timeout;
  return EXIT.ok;
}

// The lookups after a rollout ended are bounded: the user is waiting for the prompt.
const LOOKUP_MS = 3_000;

/**
 * The result with an operation id for every pending sandbox, in its rows and in the state to
 * save. A sandbox whose wait ended (Ctrl-C, the timeout) before the gateway answered its request
 * has none: its change was sent, so replaying the request with its key (what --resume does
 * anyway) reads the one commit back, and commits it at most once if it never arrived.
 */
async function withOperationIds(ctx: CommandContext, r: RolloutResult): Promise<RolloutResult> {
  const missing = r.sandboxes.filter((s): s is Extract<SandboxRolloutResult, { status: "pending" }> => s.status === "pending" && !s.handle.operationId);
  if (missing.length === 0) return r;
  const found = new Map<string, OperationHandle>();
  await Promise.all(
    missing.map(async (s) => {
      try {
        const status = await ctx.client.getOperation(s.handle, { signal: AbortSignal.timeout(LOOKUP_MS) });
        if (status.operationId) found.set(s.sandbox, { ...s.handle, operationId: status.operationId });
      } catch {
        // Left without an id: --resume still finds it by its key.
      }
    }),
  );
  if (found.size === 0) return r;
  return {
    ...r,
    sandboxes: r.sandboxes.map((s) => (s.status === "pending" && found.has(s.sandbox) ? { ...s, handle: found.get(s.sandbox)! } : s)),
    state: { ...r.state, refs: { ...r.state.refs, ...Object.fromEntries(found) } },
  };
}

/** 130 interrupted; 3 paused for approval; 1 a failure, supersession, error, failed gate (halted or rolled back); 124 a wait timed out; else 0. */
export function exitCodeOf(r: RolloutResult): number {
  if (r.aborted) return EXIT.interrupted;
  if (r.phase === "paused") return EXIT_PAUSED;
  if (r.phase === "rolled-back" || r.gateFailure !== undefined) return EXIT.failed;
  const bad = r.sandboxes.some((s) => s.status === "error" || (s.status === "completed" && !["applied", "inactive"].includes(s.completion.state)));
  if (bad || r.halted) return EXIT.failed;
  if (r.counts.byStatus.pending > 0) return EXIT.timeout;
  return EXIT.ok;
}

/** The sandboxes that finished (completed) in this run, slowest first: those never finished have no duration to compare. */
export function slowestFinished(r: RolloutResult, n = 5): { sandbox: string; durationMs: number; state: string }[] {
  return r.sandboxes
    .filter((s): s is Extract<SandboxRolloutResult, { status: "completed" }> => s.status === "completed")
    .map((s) => ({ sandbox: s.sandbox, durationMs: s.durationMs, state: s.completion.state }))
    .sort((a, b) => b.durationMs - a.durationMs || a.sandbox.localeCompare(b.sandbox))
    .slice(0, n);
}

const WAIT_ENDED = { deadline: "wait timed out", aborted: "interrupted", "server-deadline": "the gateway ended the wait", unavailable: "gateway unreachable" } as const;

/** The operation id of a sandbox's result, when it has one. */
function operationIdOf(s: SandboxRolloutResult): string | undefined {
  if (s.status === "completed") return s.completion.operationId || s.handle.operationId || undefined;
  if (s.status === "skipped") return undefined;
  return s.handle?.operationId || undefined;
}

/**
 * One sandbox for the tables: its state, its outcome (the supervisor's report; `-` when there is
 * none: pending, not sent, an error) and the detail a person needs (why, and the operation).
 */
export function describe(s: SandboxRolloutResult): { state: string; outcome: string; detail: string } {
  const id = operationIdOf(s);
  const op = id ? `operation ${id}` : "";
  const join = (...parts: string[]) => parts.filter((p) => p !== "").join("; ");
  switch (s.status) {
    case "completed":
      return { state: s.completion.state, outcome: s.completion.outcome === "unspecified" ? "-" : s.completion.outcome, detail: join(s.completion.error ?? "", op) };
    case "pending":
      return { state: "pending", outcome: "-", detail: join(WAIT_ENDED[s.reason], op) };
    case "error":
      return { state: "error", outcome: "-", detail: join(`${(s.error as { code?: string }).code ?? "error"}: ${s.error.message}`, op) };
    case "skipped":
      return { state: "skipped", outcome: "-", detail: s.reason === "halted" ? "not sent (halted)" : "not sent (interrupted)" };
  }
}

const VERDICT: Readonly<Record<RolloutResult["phase"], string>> = {
  complete: "done",
  paused: "paused",
  halted: "halted",
  "rolled-back": "rolled back",
  incomplete: "incomplete",
  aborted: "interrupted",
};

const LEFT_ALONE = { "changed-by-others": "changed by someone else since", "no-earlier-revision": "no earlier revision to return to" } as const;

function printSummary(ctx: CommandContext, r: RolloutResult, slowest: readonly { sandbox: string; durationMs: number }[], undoing = false): void {
  const { out } = ctx;
  const groups = new Map<string, number>();
  for (const s of r.sandboxes) {
    if (undoing && s.status === "skipped") continue;
    const d = describe(s);
    const key = `${d.state}\u0000${d.outcome}`;
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  const waved = r.waves.length > 1;
  // The selector is in the header above (stderr) and the JSON, the waves in the table below:
  // without them the line fits 80 columns.
  // The whole run's duration: 240ms, 31.8s, 2m05s (never "0.0s"), as every duration the CLI prints.
  // A rollback that did not return every sandbox says so here too, as the line about it below does.
  const rb = r.rollback;
  const verdict = r.phase === "rolled-back" && rb !== undefined && (rb.failed.length > 0 || rb.pending.length > 0) ? (rb.rolledBack > 0 ? "partly rolled back" : "not rolled back") : (VERDICT[r.phase] ?? (r.complete ? "done" : "incomplete"));
  out.line(`rollout ${r.id}: ${verdict}, ${countOf(r.counts.total, "sandbox", "sandboxes")} in ${formatDuration(r.durationMs)}`);
  if (waved) {
    out.line();
    out.table(
      ["WAVE", "SANDBOXES", "APPLIED", "FAILED", "NOT SENT", "GATE"],
      r.waves.map((w) => {
        const applied = (w.counts.byState.applied ?? 0) + (w.counts.byState.inactive ?? 0);
        return [`${w.index + 1} ${waveName(w.index, r.waves)}`, String(w.sandboxes.length), String(applied), String(w.failures), String(w.counts.byStatus.skipped), w.gate.replace("-", " ")];
      }),
    );
  }
  if (r.gateFailure) {
    out.line();
    out.line(`gate failed: ${r.gateFailure.reason}`);
  }
  if (r.rollback) {
    const rb = r.rollback;
    const considered = rb.rolledBack + rb.leftAlone.length + rb.failed.length + rb.pending.length;
    out.line();
    out.line(`rolled back ${rb.rolledBack} of ${countOf(considered, "changed sandbox", "changed sandboxes")}${rb.leftAlone.length ? `; ${rb.leftAlone.length} left alone` : ""}${rb.failed.length ? `; ${rb.failed.length} failed` : ""}${rb.pending.length ? `; ${rb.pending.length} pending` : ""}`);
    const rows = [
      ...rb.leftAlone.map((x) => [x.sandbox, "left alone", LEFT_ALONE[x.reason]]),
      ...rb.failed.map((x) => [x.sandbox, "failed", x.reason]),
      ...rb.pending.map((x) => [x, "pending", "its wait ended; undo again waits for it"]),
    ];
    if (rows.length > 0) {
      out.line();
      out.table(["SANDBOX", "ROLLBACK", "WHY"], rows.slice(0, LISTED));
      if (rows.length > LISTED) out.line(`… and ${rows.length - LISTED} more (--output json lists every sandbox)`);
    }
  }
  if (undoing) return;
  out.line();
  out.table(
    ["STATE", "OUTCOME", "SANDBOXES"],
    [...groups].sort((a, b) => b[1] - a[1]).map(([key, n]) => [...(key.split("\u0000") as [string, string]), String(n)]),
  );
  if (r.halted && !waved) {
    out.line();
    out.line(`halted: ${countOf(r.failures, "sandbox", "sandboxes")} failed; ${r.counts.byStatus.skipped} ${r.counts.byStatus.skipped === 1 ? "was" : "were"} not sent`);
  }
  const notApplied = r.sandboxes.filter((s) => !(s.status === "completed" && (s.completion.state === "applied" || s.completion.state === "inactive")) && s.status !== "skipped");
  if (notApplied.length > 0) {
    out.line();
    out.table(
      ["SANDBOX", "STATE", "OUTCOME", "DETAIL"],
      notApplied.slice(0, LISTED).map((s) => {
        const d = describe(s);
        return [s.sandbox, d.state, d.outcome, d.detail];
      }),
    );
    if (notApplied.length > LISTED) out.line(`… and ${notApplied.length - LISTED} more (--output json lists every sandbox)`);
  }
  if (slowest.length > 0) {
    out.line();
    // On a terminal, as many as fit its width (five names with "819ms" each pass 80 columns), the
    // slowest at least; on a pipe all of them, and -o json has each one's milliseconds.
    const [first, ...rest] = slowest.map((s) => `${s.sandbox} ${formatDuration(s.durationMs)}`);
    const width = out.tableLayout().maxWidth ?? Infinity;
    let text = `slowest: ${first}`;
    for (const entry of rest) {
      if (text.length + 2 + entry.length > width) break;
      text += `, ${entry}`;
    }
    out.line(text);
  }
}

function sandboxJson(s: SandboxRolloutResult) {
  const d = describe(s);
  return {
    sandbox: s.sandbox,
    status: s.status,
    state: d.state,
    outcome: s.status === "completed" ? s.completion.outcome : null,
    reason: s.status === "pending" || s.status === "skipped" ? s.reason : null,
    error: s.status === "completed" ? (s.completion.error ?? null) : s.status === "error" ? s.error.message : null,
    operationId: operationIdOf(s) ?? null,
    durationMs: s.status === "skipped" ? null : s.durationMs,
    wave: s.wave,
    rollback: s.rollback ? rollbackJson(s.rollback) : null,
  };
}

function rollbackJson(rb: NonNullable<SandboxRolloutResult["rollback"]>) {
  switch (rb.status) {
    case "completed":
      return { status: rb.status, state: rb.completion.state, outcome: rb.completion.outcome, error: rb.completion.error ?? null, operationId: rb.completion.operationId || rb.handle.operationId || null };
    case "pending":
      return { status: rb.status, operationId: rb.handle.operationId ?? null };
    case "error":
      return { status: rb.status, error: rb.error.message };
    case "changed-by-others":
      return { status: rb.status, detail: rb.detail };
    case "no-earlier-revision":
      return { status: rb.status };
  }
}
