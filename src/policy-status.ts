// Completion as a polling-mode gateway can tell it: the load status of one policy version. Used
// only when the gateway returns no durable operation for an update.

import { PolicyStatus } from "./gen/openshell/v1/config_pb.js";
import { toDate } from "./convert/timestamp.js";
import { workspaceScope } from "./workspace.js";
import { withRetry } from "./retry.js";
import type { OperationStatus } from "./completion.js";
import type { ClientContext } from "./context.js";

/** Reads the status of `version` once and maps it to an operation status. */
export async function policyStatusOnce(
  ctx: ClientContext,
  sandbox: string,
  workspace: string | undefined,
  version: number,
  signal: AbortSignal | undefined,
): Promise<OperationStatus> {
  const res = await withRetry(
    async () =>
      ctx.rpc.getSandboxPolicyStatus(
        { sandbox, version, workspaceScope: workspaceScope(workspace) },
        await ctx.callOptions(signal),
      ),
    { ...ctx.retry, signal },
  );
  const rev = res.revision;
  const base = {
    operationId: "",
    sandboxId: "",
    component: "sandbox-config",
    target: { kind: "policy-version", policyVersion: version },
    error: rev?.loadError ? rev.loadError : undefined,
    createdAt: toDate(rev?.createdTime),
    updatedAt: toDate(rev?.loadedTime) ?? toDate(rev?.createdTime),
    tracking: "policy-status",
  } as const;
  switch (rev?.status) {
    case PolicyStatus.LOADED:
      return { ...base, state: "applied", outcome: "applied", completedAt: toDate(rev.loadedTime) };
    case PolicyStatus.FAILED:
      return { ...base, state: "failed", outcome: "unspecified", completedAt: toDate(rev.loadedTime) };
    case PolicyStatus.SUPERSEDED:
      return { ...base, state: "superseded", outcome: "ignored-stale", completedAt: toDate(rev.loadedTime) };
    default:
      return { ...base, state: "pending", outcome: "unspecified", completedAt: undefined };
  }
}
