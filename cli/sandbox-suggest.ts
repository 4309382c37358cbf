// "Did you mean …?" for a sandbox name the gateway does not know. Asked only after a command
// failed with NotFound for its --sandbox, so a command that works never pays for it; bounded like
// the shell completion's lookup: one page of the workspace's sandboxes, one attempt, at most
// SUGGEST_BUDGET_MS, and silence on any failure (the NotFound line stands as it was).

import type { ConfigClient } from "openshell-config";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { didYouMean } from "./suggest.js";

/** The lookup gives up after this; the error line is printed without a suggestion. */
export const SUGGEST_BUDGET_MS = 2_000;
/** Names compared at most (one ListSandboxes page). */
const PAGE_SIZE = 1000;

/** `; did you mean "x"?` for the workspace's sandbox closest to `typed`, or "". */
export async function suggestSandbox(client: ConfigClient, typed: string, workspace: string | undefined, signal: AbortSignal): Promise<string> {
  try {
    const page = await client.raw(OpenShell).listSandboxes(
      { labelSelector: "", workspaceScope: workspaceScope(workspace), pageSize: PAGE_SIZE, pageToken: "" },
      { signal: AbortSignal.any([signal, AbortSignal.timeout(SUGGEST_BUDGET_MS)]) },
    );
    const names = page.sandboxes.map((sb) => sb.metadata?.name ?? "").filter((n) => n !== "" && n !== typed);
    return didYouMean(typed, names);
  } catch {
    return "";
  }
}

/** The --sandbox of a command whose failure is a NotFound naming a sandbox, if it has one. */
export function missingSandbox(command: object, failure: { readonly notFound?: true; readonly message: string }): string | undefined {
  const sandbox = (command as { sandbox?: unknown }).sandbox;
  if (!failure.notFound || typeof sandbox !== "string" || sandbox === "") return undefined;
  // An operation or rollout not found is not the sandbox's fault.
  return /\bsandbox\b/i.test(failure.message) ? sandbox : undefined;
}
