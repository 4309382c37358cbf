// `operation get ID [--watch]` (the current state and the sandbox it is for, without waiting, or
// each change of state until the outcome), `operation wait ID` (the outcome) and `operation list
// --sandbox S` (a sandbox's operations, newest first, through our gateway's
// ListConfigUpdateOperations extension; a gateway without it is named as such).

import { Code, ConnectError } from "@connectrpc/connect";
import { CompletionTimeoutError, fromOperation, isTerminal, NotFoundError, type OperationStatus } from "openshell-config";
import { OpenShell, workspaceScope, type ConfigUpdateOperation } from "openshell-config/raw";
import type { Command } from "../types.js";
import { EXIT, statusJson, statusRows, summarize } from "../outcome.js";
import { DEFAULT_TIMEOUT_MS } from "../args.js";
import { formatAge, formatClock, formatTime, shortId } from "../format.js";
import { sandboxNameOf } from "../sandbox-query.js";
import { startSpinner } from "../spinner.js";
import { progressHandler, reportCompletion, reportWaitEnded } from "./update.js";
import type { CommandContext } from "./context.js";

type OperationGet = Extract<Command, { name: "operation get" }>;
type OperationWait = Extract<Command, { name: "operation wait" }>;
type OperationList = Extract<Command, { name: "operation list" }>;

const ref = (cmd: OperationGet | OperationWait) => (cmd.workspace === undefined ? { operationId: cmd.id } : { operationId: cmd.id, workspace: cmd.workspace });

/** The sandbox row: its name, looked up by the id the operation names, else the id. */
async function sandboxOf(ctx: CommandContext, status: OperationStatus, workspace: string | undefined): Promise<{ name: string | null; row: string | undefined }> {
  if (!status.sandboxId) return { name: null, row: undefined };
  const name = await sandboxNameOf(ctx.client, status.sandboxId, workspace, ctx.signal).catch((err: unknown) => {
    if (ctx.signal.aborted) throw err;
    return undefined;
  });
  return { name: name ?? null, row: name ?? `sandbox id ${status.sandboxId} (not found in workspace ${workspace ?? "default"})` };
}

function printStatus(ctx: CommandContext, cmd: OperationGet, status: OperationStatus, sandbox: { name: string | null; row: string | undefined }) {
  ctx.out.line(summarize(status, `operation ${cmd.id}`));
  ctx.out.fields([["sandbox", sandbox.row], ...statusRows(status)]);
  if (status.state === "pending" && !cmd.watch) {
    // A hint, not the answer: on stderr.
    ctx.out.note(`wait for the outcome: ${ctx.resumeCommand(cmd.id, cmd.workspace)}`);
  }
  ctx.out.json({ sandbox: sandbox.name, ...statusJson(status) });
}

export async function operationGet(ctx: CommandContext, cmd: OperationGet): Promise<number> {
  const status = await ctx.client.getOperation(ref(cmd), { signal: ctx.signal }).catch((err: unknown) => {
    // The gateway's "update operation not found" names no operation; the line says which, and
    // where it was looked for (another workspace's operations are not found either).
    if (err instanceof NotFoundError) {
      throw new NotFoundError(`update operation ${cmd.id} not found in workspace ${cmd.workspace ?? "default"}`, { cause: err, ...(err.connectCode !== undefined ? { connectCode: err.connectCode } : {}) });
    }
    throw err;
  });
  const sandbox = await sandboxOf(ctx, status, cmd.workspace);
  if (!cmd.watch || isTerminal(status)) {
    printStatus(ctx, cmd, status, sandbox);
    // A read: its exit status does not depend on the state (see `operation wait`).
    return EXIT.ok;
  }
  return watchOperation(ctx, cmd, status, sandbox);
}

/** `operation get --watch`: a line per change of state (the block redrawn in place on a terminal), then the outcome. */
async function watchOperation(ctx: CommandContext, cmd: OperationGet, first: OperationStatus, sandbox: { name: string | null; row: string | undefined }): Promise<number> {
  const { out } = ctx;
  let last = "";
  const show = (s: OperationStatus) => {
    // A time of day, not a full timestamp: the state word must fit an 80-column row with the id.
    const line = `${formatClock(new Date())}  ${summarize(s, `operation ${cmd.id}`)}`;
    const key = `${s.state}/${s.outcome}`;
    if (key === last) return;
    last = key;
    if (out.live) out.frame([line, ...(sandbox.row ? [`sandbox  ${sandbox.row}`] : []), "watching until the outcome; Ctrl-C stops"]);
    else out.line(line);
    out.json({ sandbox: sandbox.name, ...statusJson(s) });
  };
  show(first);
  try {
    // The SDK follows the operation over WatchConfigUpdateOperations (polling where a gateway lacks it).
    const done = await ctx.client.awaitCompletion(ref(cmd), {
      timeoutMs: Infinity,
      signal: ctx.signal,
      onProgress: (e) => e.type === "state" && show(e.status),
    });
    if (out.live) out.frame([]);
    else out.line();
    out.line(summarize(done, `operation ${cmd.id}`));
    out.fields([["sandbox", sandbox.row], ...statusRows(done)]);
    if (last !== `${done.state}/${done.outcome}`) out.json({ sandbox: sandbox.name, ...statusJson(done) });
    return EXIT.ok;
  } catch (err) {
    if (ctx.signal.aborted || (err instanceof CompletionTimeoutError && err.reason === "aborted")) return EXIT.interrupted;
    if (err instanceof CompletionTimeoutError) {
      // The gateway went away under the watch: say so with the command that picks it up again.
      if (out.live) out.frame([]);
      return reportWaitEnded(ctx, err, { operationId: cmd.id, timeoutMs: DEFAULT_TIMEOUT_MS, subject: `operation ${cmd.id}`, workspace: cmd.workspace, status: first });
    }
    throw err;
  }
}

export async function operationWait(ctx: CommandContext, cmd: OperationWait): Promise<number> {
  const base = `waiting for operation ${cmd.id}`;
  const spinner = startSpinner(ctx.spinnerStream, base);
  try {
    const completion = await ctx.client.awaitCompletion(ref(cmd), {
      timeoutMs: cmd.timeoutMs,
      signal: ctx.signal,
      onProgress: progressHandler(spinner, base),
    });
    spinner.stop();
    return reportCompletion(ctx, completion, `operation ${cmd.id}`);
  } catch (err) {
    spinner.stop();
    if (err instanceof CompletionTimeoutError) {
      return reportWaitEnded(ctx, err, {
        operationId: cmd.id,
        timeoutMs: cmd.timeoutMs,
        subject: `operation ${cmd.id}`,
        workspace: cmd.workspace,
      });
    }
    throw err;
  }
}

/**
 * What an operation changed, from its target next to the one before it (the next older in the
 * list): `policy v3`, `settings rev 5`, or both when nothing older tells which.
 */
function changed(s: OperationStatus, older: OperationStatus | undefined): string {
  const t = s.target;
  if (t === undefined) return "-";
  switch (t.kind) {
    case "sandbox-config": {
      const policy = `policy v${t.policyVersion}${t.policySource === "global" ? " (global)" : ""}`;
      const settings = `settings rev ${t.settingsRevision}`;
      // The sandbox's first operation: what it set, from nothing.
      const o = older?.target?.kind === "sandbox-config" ? older.target : { policyVersion: 0, policySource: t.policySource, settingsRevision: 0n };
      const parts = [...(o.policyVersion !== t.policyVersion || o.policySource !== t.policySource ? [policy] : []), ...(o.settingsRevision !== t.settingsRevision ? [settings] : [])];
      // Neither moved: the same revision again (an identical change).
      return parts.length > 0 ? parts.join(", ") : `${policy} (again)`;
    }
    case "policy-version":
      return `policy v${t.policyVersion}`;
    case "provider-environment":
      return `provider environment rev ${t.providerEnvRevision}`;
    case "provider-target":
      return `provider ${t.providerId}`;
  }
}

export async function operationList(ctx: CommandContext, cmd: OperationList): Promise<number> {
  const raw = ctx.client.raw(OpenShell);
  const wanted = cmd.limit === 0 ? Infinity : cmd.limit;
  const ops: ConfigUpdateOperation[] = [];
  let pageToken = "";
  try {
    // One more than shown: the next older operation tells what the last one shown changed.
    do {
      const pageSize = Math.min(1000, wanted + 1 - ops.length);
      const page = await raw.listConfigUpdateOperations({ sandbox: cmd.sandbox, workspaceScope: workspaceScope(cmd.workspace), pageSize, pageToken }, { signal: ctx.signal });
      ops.push(...page.operations.slice(0, wanted + 1 - ops.length));
      pageToken = page.nextPageToken;
    } while (pageToken !== "" && ops.length <= wanted);
  } catch (err) {
    if (ConnectError.from(err).code === Code.Unimplemented) {
      ctx.out.error("this gateway cannot list operations (it lacks the ListConfigUpdateOperations extension, which upstream gateways do not have); look one up by id with 'openshell-config operation get ID'");
      return EXIT.failed;
    }
    throw err;
  }
  const all = ops.map((op) => fromOperation(op));
  const statuses = all.slice(0, wanted);
  const more = all.length > statuses.length || pageToken !== "";
  const { out } = ctx;
  // Not the answer: on stderr, as kubectl's "No resources found".
  if (statuses.length === 0) out.note(`sandbox ${cmd.sandbox} has no update operations`);
  else {
    // An outcome that only repeats the state is left out; -o wide has full ids and times.
    const outcome = (s: OperationStatus) => (s.outcome === "unspecified" || s.outcome === s.state ? "-" : s.outcome);
    out.table(
      ["OPERATION", "CHANGE", "STATE", "OUTCOME", out.wide ? "CREATED" : "AGE", "ERROR"],
      statuses.map((s, i) => [shortId(s.operationId, out.wide), changed(s, all[i + 1]), s.state, outcome(s), out.wide ? formatTime(s.createdAt) : formatAge(s.createdAt), s.error ?? ""]),
    );
    if (more) out.note(`… older operations not shown (--limit ${cmd.limit}; --limit 0 lists all)`);
  }
  ctx.out.json({ sandbox: cmd.sandbox, workspace: cmd.workspace ?? "default", operations: statuses.map(statusJson), more });
  return EXIT.ok;
}
