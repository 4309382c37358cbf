// "Did you mean …?" for a sandbox name the gateway does not know. Asked only after a command
// failed with NotFound for its --sandbox, so a command that works never pays for it; bounded like
// the shell completion's lookup: one page of the workspace's sandboxes, one attempt without the
// CLI's retries (or their lines), at most SUGGEST_BUDGET_MS, and silence on any failure (the
// NotFound line stands as it was). The page comes from the gateway, so what is compared is bounded
// too: names no longer than a sandbox name may be, and within a typo's reach of the one typed.

import { createContextValues } from "@connectrpc/connect";
import type { ConfigClient } from "openshell-config";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { ONE_ATTEMPT } from "./retry.js";
import { didYouMean } from "./suggest.js";

/** The lookup gives up after this; the error line is printed without a suggestion. */
export const SUGGEST_BUDGET_MS = 2_000;
/** Names compared at most (one ListSandboxes page). */
const PAGE_SIZE = 1000;
/** Longest sandbox name there is (a DNS label, or a UUID); anything longer is not compared. */
const MAX_NAME = 253;
/** Typos suggest() accepts differ in length by this much at most. */
const MAX_LENGTH_GAP = 3;

/** `; did you mean "x"?` for the workspace's sandbox closest to `typed`, or "". */
export async function suggestSandbox(client: ConfigClient, typed: string, workspace: string | undefined, signal: AbortSignal, budgetMs = SUGGEST_BUDGET_MS): Promise<string> {
  if (typed.length > MAX_NAME) return "";
  try {
    const page = await client.raw(OpenShell).listSandboxes(
      { labelSelector: "", workspaceScope: workspaceScope(workspace), pageSize: PAGE_SIZE, pageToken: "" },
      { signal: AbortSignal.any([signal, AbortSignal.timeout(budgetMs)]), contextValues: createContextValues().set(ONE_ATTEMPT, true) },
    );
    const names = page.sandboxes.map((sb) => sb.metadata?.name ?? "");
    // It exists after all (the NotFound was about something else): no other name is meant.
    if (names.includes(typed)) return "";
    const prefix = typed.toLowerCase();
    const near = names.filter((n) => n !== "" && n.length <= MAX_NAME && (Math.abs(n.length - typed.length) <= MAX_LENGTH_GAP || n.toLowerCase().startsWith(prefix)));
    return didYouMean(typed, near);
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
