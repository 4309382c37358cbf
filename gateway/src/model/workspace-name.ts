// The form of a workspace name, everywhere one is accepted (every RPC's workspace_scope, the auth
// file's workspaces): a DNS label, as sandbox names are and as Kubernetes namespaces (where
// upstream workspaces live) must be: 1 to 63 lowercase letters, digits and '-', starting and
// ending with a letter or digit ("default", "team-a"). Anything else ("../../etc", markup, SQL)
// is refused before it can name a stored row, a log line or a path.

const WORKSPACE_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** What a workspace name must be, for error messages. */
export const WORKSPACE_NAME_RULE = "1-63 lowercase letters, digits or '-', starting and ending with a letter or digit";

export function isWorkspaceName(name: string): boolean {
  return WORKSPACE_NAME.test(name);
}

/** `name` quoted for an error message, cut short: it is whatever the caller sent. */
export function quotedName(name: string): string {
  return JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name);
}
