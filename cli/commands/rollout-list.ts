// `policy rollout list [-A] [-w]` and `policy rollout history [-A]`: the gateway's shared rollout
// records, newest first. list shows those not done (ID, AGE, PHASE, WAVES, COUNTS, BY; -o wide
// adds who drives each, the selector and the change), history the finished ones with how each
// ended and its approvals. Tables fit 80 columns: ids cut to 8 characters (the commands that take
// an id complete it), the free-text column last. -w prints the table, then one row per change as
// kubectl get -w does, from watchRollouts(), until Ctrl-C (exit 130). Against a gateway without
// records: one line saying so and where this machine's state files are, exit 69.

import { listRollouts, watchRollouts, type SharedRollout } from "openshell-config/rollout";
import type { RolloutStatePhase } from "openshell-config/rollout";
import { formatAge, formatTime, shortId } from "../format.js";
import { formatTable } from "../output.js";
import { EXIT } from "../outcome.js";
import type { RolloutListCommand } from "../types.js";
import type { CommandContext } from "./context.js";

const LIVE: readonly RolloutStatePhase[] = ["running", "paused", "rolling-back"];
const PAGE = 500;

/** Whether a driver holds the rollout now. */
const driven = (r: SharedRollout, now: number) => r.lease !== undefined && r.lease.expiresAt.getTime() > now;

/** The phase for a table: "paused (approval)", "running"; a running rollout nobody drives says how its last run ended. */
export function phaseCell(r: SharedRollout, now: number = Date.now()): string {
  switch (r.phase) {
    case "paused":
      return r.awaitingApproval ? "paused (approval)" : r.pausedUntil ? "paused (timed)" : "paused";
    case "running":
      // Nobody drives it: its driver was interrupted or died; "policy rollout resume ID" continues it.
      return driven(r, now) ? "running" : r.result === "aborted" ? "interrupted" : r.result === "incomplete" ? "incomplete" : "stalled";
    case "rolling-back":
      return driven(r, now) ? "rolling-back" : "rolling-back (stalled)";
    case "done":
      return "done";
  }
}

/** `2/6 applied, 1 failed, 1 rolled back`: what the sandboxes came to. */
export function countsCell(r: SharedRollout): string {
  const c = r.counts;
  return [`${c.applied}/${c.targets} applied`, ...(c.failed > 0 ? [`${c.failed} failed`] : []), ...(c.rolledBack > 0 ? [`${c.rolledBack} rolled back`] : [])].join(", ");
}

/** The record as -o json / yaml print it (no state: that is `policy rollout status ID`). */
export function rolloutJson(r: SharedRollout, now: number = Date.now()) {
  return {
    id: r.id,
    workspace: r.workspace,
    phase: r.phase,
    result: r.result ?? null,
    status: phaseCell(r, now),
    createdBy: r.createdBy,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    labelSelector: r.labelSelector ?? null,
    change: r.changeSummary,
    changeHash: r.changeHash,
    waves: r.waves,
    counts: r.counts,
    awaitingApproval: r.awaitingApproval,
    pausedUntil: r.pausedUntil ?? null,
    gateFailure: r.gateFailure ?? null,
    approvals: r.approvals,
    requireDistinctApprover: r.requireDistinctApprover,
    lease: r.lease && driven(r, now) ? r.lease : null,
    resourceVersion: r.resourceVersion,
  };
}

function headersOf(history: boolean, wide: boolean, all: boolean): string[] {
  const where = all || wide ? ["WORKSPACE"] : [];
  const when = wide ? "CREATED" : "AGE";
  if (history) return ["ID", ...where, when, "RESULT", "WAVES", "COUNTS", "APPROVALS", "BY", ...(wide ? ["SELECTOR", "CHANGE"] : [])];
  return ["ID", ...where, when, "PHASE", "WAVES", "COUNTS", "BY", ...(wide ? ["DRIVER", "SELECTOR", "CHANGE"] : [])];
}

function rowOf(r: SharedRollout, history: boolean, wide: boolean, all: boolean, now: number): string[] {
  const where = all || wide ? [r.workspace] : [];
  const when = wide ? formatTime(r.createdAt) : formatAge(r.createdAt, now);
  const waves = `${r.waves.done}/${r.waves.total}`;
  const extra = [r.labelSelector ?? "-", r.changeSummary || "-"];
  if (history) return [shortId(r.id, wide), ...where, when, r.result ?? "-", waves, countsCell(r), String(r.approvals.length), r.createdBy || "-", ...(wide ? extra : [])];
  const driver = r.lease && driven(r, now) ? r.lease.holder : "-";
  return [shortId(r.id, wide), ...where, when, phaseCell(r, now), waves, countsCell(r), r.createdBy || "-", ...(wide ? [driver, ...extra] : [])];
}

/** Every record of `phases`, newest first, up to `limit` (0: all), paging through. */
async function listAll(ctx: CommandContext, cmd: RolloutListCommand, phases: readonly RolloutStatePhase[]): Promise<SharedRollout[]> {
  const out: SharedRollout[] = [];
  const workspace = cmd.allWorkspaces ? "*" : cmd.workspace;
  let pageToken: string | undefined;
  do {
    const want = cmd.limit > 0 ? Math.min(PAGE, cmd.limit - out.length) : PAGE;
    const page = await listRollouts(ctx.client, { ...(workspace !== undefined ? { workspace } : {}), phases, pageSize: want, ...(pageToken !== undefined ? { pageToken } : {}), signal: ctx.signal });
    out.push(...page.rollouts);
    pageToken = page.nextPageToken;
  } while (pageToken !== undefined && (cmd.limit === 0 || out.length < cmd.limit));
  return out;
}

export async function policyRolloutList(ctx: CommandContext, cmd: RolloutListCommand): Promise<number> {
  const { out } = ctx;
  const history = cmd.name === "policy rollout history";
  const all = cmd.allWorkspaces;
  const headers = headersOf(history, out.wide, all);
  const rows = await listAll(ctx, cmd, history ? ["done"] : LIVE);
  const now = Date.now();
  const empty = `no ${history ? "finished " : ""}rollouts${history ? "" : " in progress"}${all ? "" : cmd.workspace ? ` in workspace ${cmd.workspace}` : ""}`;
  // Nothing to list is not an answer for stdout (kubectl's "No resources found" goes to stderr).
  if (rows.length === 0) out.note(empty);
  // COUNTS is cut first on a narrow terminal: BY, after it, names a person.
  else out.table(headers, rows.map((r) => rowOf(r, history, out.wide, all, now)), { cut: headers.indexOf("COUNTS") });
  out.json({ rollouts: rows.map((r) => rolloutJson(r, now)) });
  if (!cmd.watch || history) return EXIT.ok;
  return watchList(ctx, cmd, headers, rows);
}

/**
 * After the table, a row for each rollout that changed (as kubectl get -w: in the table's columns,
 * no header, padded as the first table was), one JSON document per change with -o json. What a
 * row shows is compared, not the record's version: a driver renews its lease every few seconds.
 * A rollout that finished shows once more, as done, then is forgotten.
 */
async function watchList(ctx: CommandContext, cmd: RolloutListCommand, headers: readonly string[], first: readonly SharedRollout[]): Promise<number> {
  const { out } = ctx;
  const all = cmd.allWorkspaces;
  // AGE left out of the comparison: it changes by itself.
  const compared = (r: SharedRollout) => rowOf(r, false, true, all, Date.now()).filter((_, i) => headersOf(false, true, all)[i] !== "CREATED").join("\u0000");
  const shown = new Map(first.map((r) => [`${r.workspace}/${r.id}`, compared(r)]));
  const firstRows = first.map((r) => rowOf(r, false, out.wide, all, Date.now()));
  const line = (r: SharedRollout) => formatTable(headers, [...firstRows, rowOf(r, false, out.wide, all, Date.now())], { ...out.tableLayout(), headers: false, cut: headers.indexOf("COUNTS") }).at(-1)!;
  try {
    for await (const e of watchRollouts(ctx.client, { ...(all ? { workspace: "*" } : cmd.workspace !== undefined ? { workspace: cmd.workspace } : {}), signal: ctx.signal })) {
      if (e.type === "synced") continue;
      const r = e.rollout;
      const key = `${r.workspace}/${r.id}`;
      const seen = shown.get(key);
      // A done rollout never shown is history; one shown before is shown done, once.
      if (r.phase === "done" && seen === undefined) continue;
      const now = compared(r);
      if (now === seen) continue;
      if (r.phase === "done") shown.delete(key);
      else shown.set(key, now);
      out.line(line(r));
      out.json({ type: e.initial ? "initial" : "changed", rollout: rolloutJson(r) });
    }
  } catch (err) {
    if (!ctx.signal.aborted) throw err;
  }
  if (ctx.signal.aborted) return EXIT.interrupted;
  out.error("the gateway ended the watch");
  return EXIT.failed;
}
