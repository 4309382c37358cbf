// `operation get ID` (the current state, without waiting) and `operation wait ID` (the outcome).

import { CompletionTimeoutError } from "openshell-config";
import type { Command } from "../args.js";
import { EXIT, statusJson, statusRows, summarize } from "../outcome.js";
import { startSpinner } from "../spinner.js";
import { progressHandler, reportCompletion, reportWaitEnded } from "./update.js";
import type { CommandContext } from "./context.js";

type OperationGet = Extract<Command, { name: "operation get" }>;
type OperationWait = Extract<Command, { name: "operation wait" }>;

const ref = (cmd: OperationGet | OperationWait) => (cmd.workspace === undefined ? { operationId: cmd.id } : { operationId: cmd.id, workspace: cmd.workspace });

export async function operationGet(ctx: CommandContext, cmd: OperationGet): Promise<number> {
  const status = await ctx.client.getOperation(ref(cmd), { signal: ctx.signal });
  ctx.out.line(summarize(status, `operation ${cmd.id}`));
  ctx.out.fields(statusRows(status));
  if (status.state === "pending") {
    ctx.out.line();
    ctx.out.line(`wait for the outcome: ${ctx.resumeCommand(cmd.id, cmd.workspace)}`);
  }
  ctx.out.json(statusJson(status));
  // A read: its exit status does not depend on the state (see `operation wait`).
  return EXIT.ok;
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
