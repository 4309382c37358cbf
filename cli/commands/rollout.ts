// `policy rollout`: one policy to every sandbox a label selector matches, through the SDK's
// rollout(). Prints the rollout id first, keeps the state on disk while it runs (so that a crash
// or Ctrl-C can be resumed with --resume ID), draws a progress bar on a terminal, and ends with a
// summary on stdout: counts by state and outcome, the sandboxes that did not apply (each with its
// operation id), the slowest of those that finished; the resume command, when one is needed, on
// stderr.

import type { OperationHandle } from "openshell-config";
import { rollout, type RolloutOptions, type RolloutResult, type SandboxRolloutResult } from "openshell-config/rollout";
import { usageOf, UsageError } from "../args.js";
import type { RolloutCommand } from "../rollout-args.js";
import { createRolloutStore, rolloutStateDir } from "../rollout-store.js";
import { EXIT } from "../outcome.js";
import { readPolicyFile } from "../policy-file.js";
import { startProgressBar } from "../progress-bar.js";
import { formatElapsed } from "../spinner.js";
import { rolloutResumeCommand } from "../resume.js";
import type { CommandContext } from "./context.js";

// Sandboxes listed one by one in the summary (those that did not apply); the JSON has them all.
const LISTED = 20;
// The state file is rewritten at most this often while sandboxes are being sent.
const SAVE_EVERY_MS = 500;

/** The options for rollout(): a saved state to continue, or a new (or re-run) rollout. */
async function rolloutOptions(cmd: RolloutCommand, saved: RolloutOptions["resume"]): Promise<RolloutOptions> {
  const limits = {
    ...(cmd.concurrency !== undefined ? { concurrency: cmd.concurrency } : {}),
    ...(cmd.maxFailures !== undefined ? { maxFailures: cmd.maxFailures } : {}),
    ...(cmd.timeoutMs !== undefined ? { waitTimeoutMs: cmd.timeoutMs } : {}),
  };
  if (saved !== undefined) return { ...limits, resume: saved };
  const policy = await readPolicyFile(cmd.file!);
  return {
    ...limits,
    ...(cmd.resume !== undefined ? { id: cmd.resume } : {}),
    // A set-based selector arrives resolved to names (commands/rollout-select.ts).
    ...(cmd.sandboxes !== undefined ? { sandboxes: cmd.sandboxes } : { labelSelector: cmd.selector! }),
    ...(cmd.workspace !== undefined ? { workspace: cmd.workspace } : {}),
    policy,
  };
}

export async function policyRollout(ctx: CommandContext, cmd: RolloutCommand): Promise<number> {
  const { out } = ctx;
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

  let selector = cmd.selector ?? saved?.labelSelector;
  const bar = startProgressBar(ctx.spinnerStream, "rolling out", { starting: `finding the sandboxes${selector ? ` (${selector})` : ""}` });
  let lastSave = 0;
  const run = rollout(ctx.client, {
    ...options,
    signal: ctx.signal,
    onProgress: (e) => {
      if (e.type === "started") {
        store.save(run.state());
        lastSave = Date.now();
        bar.update(0, e.sandboxes.length, "");
        bar.above(() => out.note(`rollout ${e.id}: ${e.sandboxes.length} sandboxes${selector ? ` (${selector})` : ""}${e.alreadyCommitted ? `, ${e.alreadyCommitted} sent before` : ""}`));
      } else if (e.type === "sent" && Date.now() - lastSave >= SAVE_EVERY_MS) {
        store.save(run.state());
        lastSave = Date.now();
      } else if (e.type === "result") {
        const { done, total, failures } = e.progress;
        bar.update(done, total, failures > 0 ? `${failures} failed` : "");
      } else if (e.type === "halted") {
        bar.above(() => out.warn(`${e.failures} sandboxes failed (--max-failures ${e.maxFailures}): no further sandbox is sent; waiting for those already sent`));
      }
    },
  });
  let result: RolloutResult;
  try {
    result = await withOperationIds(ctx, await run);
  } finally {
    bar.stop();
  }
  const stateFile = store.save(result.state);
  selector ??= result.state.labelSelector;
  if (result.counts.total === 0) {
    // Most likely a mistyped selector: a deploy script should not read this as success.
    out.error(`no sandboxes match ${selector}: nothing was sent`);
    out.json({ id: result.id, selector: selector ?? null, total: 0 });
    return EXIT.failed;
  }
  const resume = rolloutResumeCommand({ connectionArgs: ctx.connectionArgs, format: out.format }, result.id, { timeoutMs: cmd.timeoutMs });
  const slowest = slowestFinished(result);
  printSummary(ctx, result, slowest);
  if (!result.complete) out.note(`resume with: ${resume}`);
  out.json({
    id: result.id,
    selector: selector ?? null,
    stateFile,
    resume: result.complete ? null : resume,
    total: result.counts.total,
    counts: result.counts,
    failures: result.failures,
    halted: result.halted,
    aborted: result.aborted,
    complete: result.complete,
    durationMs: result.durationMs,
    slowest,
    sandboxes: result.sandboxes.map(sandboxJson),
  });
  return exitCodeOf(result);
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

/** 130 interrupted; 1 a failure, supersession, error or halt; 124 a wait timed out; else 0. */
export function exitCodeOf(r: RolloutResult): number {
  if (r.aborted) return EXIT.interrupted;
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

const WAIT_ENDED = { deadline: "wait timed out", aborted: "interrupted", "server-deadline": "the gateway ended the wait" } as const;

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

function printSummary(ctx: CommandContext, r: RolloutResult, slowest: readonly { sandbox: string; durationMs: number }[]): void {
  const { out } = ctx;
  const groups = new Map<string, number>();
  for (const s of r.sandboxes) {
    const d = describe(s);
    const key = `${d.state}\u0000${d.outcome}`;
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  const verdict = r.aborted ? "interrupted" : r.halted ? "halted" : r.complete ? "done" : "incomplete";
  // The selector is in the header above (stderr) and the JSON: without it the line fits 80 columns.
  out.line(`rollout ${r.id}: ${verdict}, ${r.counts.total} sandboxes in ${formatElapsed(r.durationMs)}`);
  out.line();
  out.table(
    ["STATE", "OUTCOME", "SANDBOXES"],
    [...groups].sort((a, b) => b[1] - a[1]).map(([key, n]) => [...(key.split("\u0000") as [string, string]), String(n)]),
  );
  if (r.halted) {
    out.line();
    out.line(`halted: ${r.failures} sandboxes failed; ${r.counts.byStatus.skipped} were not sent`);
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
    out.line(`slowest: ${slowest.map((s) => `${s.sandbox} ${formatElapsed(s.durationMs)}`).join(", ")}`);
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
  };
}
