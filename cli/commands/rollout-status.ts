// `policy rollout status ID [-w]`: a rollout as its shared record at the gateway tells it (any
// machine, given the id: rollout-locate.ts), else as this machine's saved state: its phase, who
// created it, approvals and driver (rollout-status-shared.ts), each wave and its gate, the gate
// failure, the rollback mode and, for every sandbox it sent (and every rollback sent), its
// operation's state as the gateway reports it now: GetOperation a few at a time
// (STATUS_CONCURRENCY), never one request per sandbox all at once. With --watch it shows it again
// when the record (watchRollout) or the state file changes and every few seconds until the
// rollout is done, asking the gateway again only about operations that were not final yet;
// Ctrl-C ends it with status 130.

import { statSync } from "node:fs";
import { basename, dirname } from "node:path";
import type { OperationHandle, OperationStatus } from "openshell-config";
import { watchRollout, type RolloutState, type SharedRollout } from "openshell-config/rollout";
import { EXIT } from "../outcome.js";
import { countOf } from "../format.js";
import { rolloutApproveCommand, rolloutResumeCommand, rolloutUndoCommand } from "../resume.js";
import { waveName } from "../rollout-display.js";
import { createRolloutStore } from "../rollout-store.js";
import { locateRollout } from "../rollout-locate.js";
import { sharedFields, sharedLines } from "../rollout-status-shared.js";
import type { RolloutStatusCommand } from "../types.js";
import type { CommandContext } from "./context.js";

/** GetOperation calls in flight at once. */
export const STATUS_CONCURRENCY = 8;
const LOOKUP_MS = 5_000;
/** --watch: how often the state file is checked, and the gateway asked again. */
const FILE_POLL_MS = 250;
const GATEWAY_POLL_MS = 2_000;
const LISTED = 20;

/** What the gateway says of one operation now; `unknown` when it could not be asked. */
export interface OperationNow {
  readonly state: string;
  readonly outcome: string | null;
  readonly operationId: string | null;
  readonly error: string | null;
}

const FINAL = new Set(["applied", "failed", "superseded", "cancelled", "inactive"]);

/** Runs `f` over `items`, at most `limit` at a time. */
async function mapLimit<T, R>(items: readonly T[], limit: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i]!);
      }
    }),
  );
  return out;
}

/** The gateway's view of each handle (keyed as `refs` and `undoRefs` are), reusing `known` final answers. */
export async function lookUp(
  ctx: CommandContext,
  handles: ReadonlyMap<string, OperationHandle>,
  known: ReadonlyMap<string, OperationNow>,
): Promise<Map<string, OperationNow>> {
  const ask = [...handles].filter(([key]) => !FINAL.has(known.get(key)?.state ?? ""));
  const answers = await mapLimit(ask, STATUS_CONCURRENCY, async ([key, handle]): Promise<[string, OperationNow]> => {
    try {
      const s: OperationStatus = await ctx.client.getOperation(handle, { signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(LOOKUP_MS)]) });
      return [key, { state: s.state, outcome: s.outcome === "unspecified" ? null : s.outcome, operationId: s.operationId || handle.operationId || null, error: s.error ?? null }];
    } catch (err) {
      return [key, { state: "unknown", outcome: null, operationId: handle.operationId ?? null, error: (err as Error).message }];
    }
  });
  return new Map([...known, ...answers]);
}

/** The phase of a saved state in words. */
export function phaseText(s: RolloutState): string {
  const n = s.waves.length;
  switch (s.phase) {
    case "running":
      return n > 1 ? `running wave ${Math.min(s.wave + 1, n)}/${n}` : "running";
    case "paused":
      return s.pausedUntil ? `paused after wave ${s.wave}/${n} until ${s.pausedUntil}` : `paused after wave ${s.wave}/${n}, waiting for approval`;
    case "rolling-back":
      return "rolling back";
    case "done":
      if (Object.keys(s.undoRefs).length > 0) return "rolled back";
      return s.gateFailure ? "halted" : "done";
  }
}

/** A wave's gate as the state tells it. */
function gateOf(s: RolloutState, i: number): string {
  if (s.gateFailure?.wave === i) return "failed";
  if (i < s.wave) return "passed";
  if (i === s.wave && s.phase === "running") return "running";
  return "not reached";
}

/** The document of `status`: the same for -o json and yaml, and what the table shows. */
export function statusDocument(ctx: CommandContext, s: RolloutState, stateFile: string | null, now: ReadonlyMap<string, OperationNow>, record?: SharedRollout) {
  const repeat = { connectionArgs: ctx.connectionArgs, format: ctx.out.format };
  const waveOf = new Map<string, number>();
  s.waves.forEach((w, i) => w.sandboxes.forEach((x) => waveOf.set(x, i)));
  const sandboxes = s.sandboxes.map((name) => {
    const sent = s.refs[name] !== undefined;
    const op = now.get(`rollout:${name}`);
    const rb = s.undoRefs[name] !== undefined ? (now.get(`undo:${name}`) ?? { state: "unknown", outcome: null, operationId: s.undoRefs[name]!.operationId ?? null, error: null }) : null;
    return {
      sandbox: name,
      wave: waveOf.get(name) ?? null,
      sent,
      state: sent ? (op?.state ?? "unknown") : "not sent",
      outcome: op?.outcome ?? null,
      operationId: sent ? (op?.operationId ?? s.refs[name]!.operationId ?? null) : null,
      error: op?.error ?? null,
      rollback: rb,
    };
  });
  const done = s.phase === "done";
  const changed = Object.keys(s.refs).length > 0;
  const undone = Object.keys(s.undoRefs).length > 0 && done;
  return {
    id: s.id,
    phase: s.phase,
    status: phaseText(s),
    selector: s.labelSelector ?? null,
    workspace: s.workspace ?? null,
    stateFile,
    total: s.sandboxes.length,
    sent: sandboxes.filter((x) => x.sent).length,
    rollbackOnFailure: s.rollback === "on-halt",
    pausedUntil: s.pausedUntil ?? null,
    gateFailure: s.gateFailure ?? null,
    waves: s.waves.map((w, i) => {
      const mine = sandboxes.filter((x) => x.wave === i);
      return {
        index: i,
        name: waveName(i, s.waves),
        sandboxes: w.sandboxes.length,
        sent: mine.filter((x) => x.sent).length,
        applied: mine.filter((x) => x.state === "applied" || x.state === "inactive").length,
        failed: mine.filter((x) => x.state === "failed" || x.state === "cancelled").length,
        pending: mine.filter((x) => x.state === "pending").length,
        gate: gateOf(s, i),
        pause: w.gate.pause,
      };
    }),
    // A rollout that needs four eyes, paused for approval, waits for someone other than its creator.
    resume: done ? null : record?.requireDistinctApprover === true && s.phase === "paused" && !s.pausedUntil ? rolloutApproveCommand(repeat, s.id) : rolloutResumeCommand(repeat, s.id),
    undo: !undone && changed && Object.keys(s.before).length > 0 ? rolloutUndoCommand(repeat, s.id) : null,
    ...sharedFields(record),
    sandboxes,
  };
}

type StatusDocument = ReturnType<typeof statusDocument>;

/** The table form of the document, as lines. */
export function statusLines(d: StatusDocument): string[] {
  // The status on a line of its own: beside the id ("paused after wave 1/2, waiting for approval")
  // it did not fit 80 columns, and a watch frame cut the state words.
  // The shared record's lines (creator, approvals, driver) after the counts: the first three lines stay as they were.
  const lines = [`rollout ${d.id}`, `status: ${d.status}`, `${countOf(d.total, "sandbox", "sandboxes")}${d.selector ? ` (${d.selector})` : ""}, ${d.sent} sent${d.rollbackOnFailure ? ", rollback on failure" : ""}`, ...sharedLines(d), ""];
  const table = (headers: string[], rows: string[][]) => {
    const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    for (const r of [headers, ...rows]) lines.push(r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  "));
  };
  table(
    ["WAVE", "SANDBOXES", "SENT", "APPLIED", "FAILED", "PENDING", "GATE"],
    d.waves.map((w) => [`${w.index + 1} ${w.name}`, String(w.sandboxes), String(w.sent), String(w.applied), String(w.failed), String(w.pending), w.gate]),
  );
  if (d.gateFailure) lines.push("", `gate failed: ${d.gateFailure.reason}`);
  const odd = d.sandboxes.filter((x) => x.sent && x.state !== "applied" && x.state !== "inactive");
  const rolled = d.sandboxes.filter((x) => x.rollback !== null);
  if (rolled.length > 0) {
    const back = rolled.filter((x) => x.rollback!.state === "applied" || x.rollback!.state === "inactive").length;
    lines.push("", `rolled back ${back} of ${rolled.length} sent rollbacks`);
  }
  if (odd.length > 0) {
    lines.push("");
    table(
      ["SANDBOX", "STATE", "OUTCOME", "DETAIL"],
      odd.slice(0, LISTED).map((x) => [x.sandbox, x.state, x.outcome ?? "-", [x.error ?? "", x.operationId ? `operation ${x.operationId}` : ""].filter((p) => p).join("; ")]),
    );
    if (odd.length > LISTED) lines.push(`… and ${odd.length - LISTED} more (--output json lists every sandbox)`);
  }
  if (d.resume || d.undo) lines.push("");
  // Each command on a line of its own, indented, so that it is whole at 80 columns and copied alone.
  const approval = d.phase === "paused" && d.pausedUntil === null;
  if (d.resume) lines.push(`${approval ? (d.requireDistinctApprover ? "another person approves the next wave with" : "approve the next wave with") : "resume with"}:`, `  ${d.resume}`);
  if (d.undo) lines.push("undo with:", `  ${d.undo}`);
  return lines;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

export async function policyRolloutStatus(ctx: CommandContext, cmd: RolloutStatusCommand): Promise<number> {
  const { out } = ctx;
  const found = await locateRollout(ctx, cmd.id, cmd.workspace, "policy rollout status");
  let record: SharedRollout | undefined = found.kind === "shared" ? found.record : undefined;
  let state = found.kind === "shared" ? found.record.state : found.state;
  const path = found.stateFile ?? null;
  const handles = (s: RolloutState) =>
    new Map<string, OperationHandle>([
      ...Object.entries(s.refs).map(([k, h]) => [`rollout:${k}`, h] as [string, OperationHandle]),
      ...Object.entries(s.undoRefs).map(([k, h]) => [`undo:${k}`, h] as [string, OperationHandle]),
    ]);
  let known = await lookUp(ctx, handles(state), new Map());
  let shown = "";
  const show = () => {
    const doc = statusDocument(ctx, state, path, known, record);
    const text = JSON.stringify(doc);
    if (text === shown) return;
    shown = text;
    if (out.format === "json" || out.format === "yaml") out.json(doc);
    else if (cmd.watch) out.frame(statusLines(doc));
    else for (const l of statusLines(doc)) out.line(l);
  };
  show();
  if (!cmd.watch) return EXIT.ok;
  const finished = () => state.phase === "done" && [...known.values()].every((o) => FINAL.has(o.state) || o.state === "unknown");
  // What changed since the last look: the record (its watch) or the state file (its mtime).
  const changes = found.kind === "shared" ? followRecord(ctx, found.record) : followFile(found.stateFile);
  let askedAt = Date.now();
  try {
    while (!finished()) {
      await sleep(FILE_POLL_MS, ctx.signal);
      // Ctrl-C ends watching with 130, as every other --watch (and kubectl's) does: under npx, which
      // reports an interrupted child as 130 whatever it returns, the two then agree.
      if (ctx.signal.aborted) return EXIT.interrupted;
      const next = changes.poll();
      if (next !== undefined) {
        state = next.state;
        record = next.record ?? record;
      }
      if (next !== undefined || Date.now() - askedAt >= GATEWAY_POLL_MS) {
        known = await lookUp(ctx, handles(state), known);
        askedAt = Date.now();
        if (ctx.signal.aborted) return EXIT.interrupted;
        show();
      }
    }
  } finally {
    changes.stop();
  }
  return EXIT.ok;
}

interface Changes {
  /** The rollout as it is now when it changed since the last call; else undefined. Throws what ended the watch. */
  poll(): { state: RolloutState; record?: SharedRollout } | undefined;
  stop(): void;
}

/** The state file, read again when its mtime changes. */
function followFile(path: string): Changes {
  const store = createRolloutStore(dirname(path));
  const id = basename(path, ".json");
  const mtime = () => {
    try {
      return statSync(path).mtimeMs;
    } catch {
      return 0;
    }
  };
  let seen = mtime();
  return {
    poll() {
      const m = mtime();
      if (m === seen) return undefined;
      seen = m;
      try {
        const state = store.load(id);
        return state === undefined ? undefined : { state };
      } catch {
        // Written while read (never half a file, but the rename may race): read it next time.
        seen = 0;
        return undefined;
      }
    },
    stop() {},
  };
}

/** The shared record, through watchRollout(): the latest version it sent. */
function followRecord(ctx: CommandContext, first: SharedRollout): Changes {
  const stop = new AbortController();
  let latest: SharedRollout | undefined;
  let failure: unknown;
  void (async () => {
    try {
      for await (const r of watchRollout(ctx.client, first.id, { workspace: first.workspace, signal: AbortSignal.any([ctx.signal, stop.signal]) })) {
        if (r.resourceVersion > first.resourceVersion && r.state !== undefined) latest = r;
      }
    } catch (err) {
      failure = err;
    }
  })();
  return {
    poll() {
      if (failure !== undefined) throw failure;
      const r = latest;
      latest = undefined;
      return r === undefined ? undefined : { state: r.state!, record: r };
    },
    stop: () => stop.abort(),
  };
}
