// Finding sandboxes: every sandbox a label selector matches (ListSandboxes in pages of 1000, the
// selector's equality part evaluated by the gateway, the rest here), and a sandbox's name from
// its id (an operation names only the id).

import type { ConfigClient } from "openshell-config";
import { allWorkspacesScope, OpenShell, workspaceScope, type Sandbox } from "openshell-config/raw";
import { gatewaySelector, matches, type Selector } from "./selector.js";

const PAGE_SIZE = 1000;

export interface SandboxQuery {
  readonly selector: Selector | undefined;
  readonly workspace: string | undefined;
  readonly allWorkspaces?: boolean;
}

/** Every sandbox the query matches, in the gateway's order (workspace, name). */
export async function listSandboxes(client: ConfigClient, q: SandboxQuery, signal: AbortSignal): Promise<Sandbox[]> {
  const raw = client.raw(OpenShell);
  // Named (`default` unless --workspace) or all: the upstream gateway requires one of the two.
  const scope = q.allWorkspaces ? allWorkspacesScope() : workspaceScope(q.workspace);
  const labelSelector = q.selector === undefined ? "" : gatewaySelector(q.selector);
  const out: Sandbox[] = [];
  let pageToken = "";
  do {
    const page = await raw.listSandboxes({ labelSelector, workspaceScope: scope, pageSize: PAGE_SIZE, pageToken }, { signal });
    // Checked here too when the gateway had it all: a gateway that ignores label_selector lists everything.
    for (const sb of page.sandboxes) if (q.selector === undefined || matches(q.selector, sb.metadata?.labels ?? {})) out.push(sb);
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return out;
}

/** The name of the sandbox with this id in `workspace`; undefined when none is found. */
export async function sandboxNameOf(client: ConfigClient, id: string, workspace: string | undefined, signal: AbortSignal): Promise<string | undefined> {
  if (id === "") return undefined;
  const raw = client.raw(OpenShell);
  let pageToken = "";
  do {
    const page = await raw.listSandboxes({ labelSelector: "", workspaceScope: workspaceScope(workspace), pageSize: PAGE_SIZE, pageToken }, { signal });
    const hit = page.sandboxes.find((sb) => sb.metadata?.id === id);
    if (hit) return hit.metadata?.name;
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  return undefined;
}
