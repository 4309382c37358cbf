// `policy rollout resume|approve|undo ID`: act on a rollout from any machine given only its id.
// The gateway's shared record is preferred (resumeRollout, approveRollout, undoSharedRollout: each
// takes the record's lease first, so a live driver elsewhere refuses this one with exit 75); a
// rollout the gateway has no record of (or a gateway without records) is worked from this
// machine's state file as before. Either way the local state file is written too: it is the
// export format and the fallback. The display and summary are runAndReport's (rollout.ts).

import { approveRollout, resumeRollout, undoRollout, undoSharedRollout, type RolloutState, type UndoOptions } from "openshell-config/rollout";
import { EXIT } from "../outcome.js";
import { driverId, locateRollout } from "../rollout-locate.js";
import type { RolloutApproveCommand, RolloutResumeCommand, RolloutUndoCommand } from "../types.js";
import type { CommandContext } from "./context.js";
import { policyRollout, runAndReport } from "./rollout.js";

/** The workspace a record is looked up in: --workspace, else $OPENSHELL_WORKSPACE (resume keeps it off the command). */
const lookupWorkspace = (given: string | undefined) => given ?? (process.env.OPENSHELL_WORKSPACE || undefined);

const limitsOf = (cmd: { concurrency: number | undefined; maxFailures?: number | undefined; timeoutMs: number | undefined }) => ({
  ...(cmd.concurrency !== undefined ? { concurrency: cmd.concurrency } : {}),
  ...(cmd.maxFailures !== undefined ? { maxFailures: cmd.maxFailures } : {}),
  ...(cmd.timeoutMs !== undefined ? { waitTimeoutMs: cmd.timeoutMs } : {}),
});

/** `policy rollout --resume ID` of a saved state, as before the shared record. */
function resumeLocal(ctx: CommandContext, cmd: RolloutResumeCommand | RolloutApproveCommand): Promise<number> {
  return policyRollout(ctx, {
    name: "policy rollout",
    file: undefined,
    selector: undefined,
    workspace: cmd.workspace,
    concurrency: cmd.concurrency,
    maxFailures: cmd.maxFailures,
    timeoutMs: cmd.timeoutMs,
    resume: cmd.id,
  });
}

/**
 * `policy rollout resume ID` and `policy rollout approve ID`: continue the rollout; a rollout
 * paused for approval is approved by either. approve fails (exit 1) on a shared rollout that
 * waits for no approval; on a local-only one it is resume, as before.
 */
export async function policyRolloutResume(ctx: CommandContext, cmd: RolloutResumeCommand | RolloutApproveCommand): Promise<number> {
  const approving = cmd.name === "policy rollout approve";
  const found = await locateRollout(ctx, cmd.id, lookupWorkspace(cmd.workspace), cmd.name);
  if (found.kind === "local") return resumeLocal(ctx, { ...cmd, id: found.state.id });
  const r = found.record;
  if (approving && !r.awaitingApproval) {
    const why = r.phase === "done" ? "it is done" : r.phase === "paused" && r.pausedUntil ? `its pause ends by itself at ${r.pausedUntil.toISOString()}` : `it is ${r.phase}`;
    ctx.out.error(`rollout ${r.id} waits for no approval (${why}); "policy rollout resume ${r.id}" continues it`);
    return EXIT.failed;
  }
  const act = approving ? approveRollout : resumeRollout;
  return runAndReport(ctx, { selector: r.labelSelector ?? r.state.labelSelector, timeoutMs: cmd.timeoutMs, fourEyes: r.requireDistinctApprover }, (onProgress, onState) =>
    act(ctx.client, r.id, { ...limitsOf(cmd), workspace: r.workspace, driver: driverId(), signal: ctx.signal, onProgress, onState }),
  );
}

/** `policy rollout undo ID`: undoSharedRollout() of the record, else undoRollout() of the saved state. */
export async function policyRolloutUndo(ctx: CommandContext, cmd: RolloutUndoCommand): Promise<number> {
  const found = await locateRollout(ctx, cmd.id, lookupWorkspace(cmd.workspace), cmd.name);
  const limits = limitsOf({ concurrency: cmd.concurrency, timeoutMs: cmd.timeoutMs });
  if (found.kind === "local") {
    const saved: RolloutState = found.state;
    // The driver too (UndoOptions does not name it, the run takes it): the record a rollback of a
    // local rollout creates says who drove it.
    const options: UndoOptions = Object.assign({ ...limits, signal: ctx.signal }, { driver: driverId() });
    return runAndReport(ctx, { selector: saved.labelSelector, timeoutMs: cmd.timeoutMs, undo: true }, (onProgress, onState) => undoRollout(ctx.client, saved, { ...options, onProgress, onState }));
  }
  const r = found.record;
  return runAndReport(ctx, { selector: r.labelSelector ?? r.state.labelSelector, timeoutMs: cmd.timeoutMs, undo: true }, (onProgress, onState) =>
    undoSharedRollout(ctx.client, r.id, { ...limits, workspace: r.workspace, driver: driverId(), signal: ctx.signal, onProgress, onState }),
  );
}
