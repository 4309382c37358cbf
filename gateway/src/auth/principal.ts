// Who is calling: the principal an authenticated request runs as, and the workspace rule every
// handler applies before touching a sandbox.

/** The role of a principal. Admins may change configuration; supervisors speak only for their sandbox. */
export type Role = "admin" | "user" | "supervisor";

export interface Principal {
  /** Stable name for logs and provenance, e.g. `alice` or `supervisor:dev`. */
  readonly name: string;
  readonly role: Role;
  /** Workspaces this principal may use; `"*"` = all. */
  readonly workspaces: "*" | readonly string[];
  /**
   * For supervisors: the one sandbox they represent, by name, and by id when the auth file pins
   * the instance (`sandboxId`). Without an id the credential binds to the instance it first
   * serves (rpc/supervisor-identity.ts).
   */
  readonly sandbox?: { readonly workspace: string; readonly name: string; readonly id?: string };
}

/** The principal of `--no-auth` mode: every request is an admin of every workspace. */
export const NO_AUTH_PRINCIPAL: Principal = Object.freeze({
  name: "anonymous (--no-auth)",
  role: "admin",
  workspaces: "*",
});

/** Whether `principal` may act in workspace `workspace`. */
export function canAccessWorkspace(principal: Principal, workspace: string): boolean {
  return principal.workspaces === "*" || principal.workspaces.includes(workspace);
}
