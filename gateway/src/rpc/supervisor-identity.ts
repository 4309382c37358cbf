// Which sandbox a supervisor speaks for. With bearer tokens it is the one its supervisor token
// names, and any other role is refused. Under --no-auth there are no tokens to name one: a
// supervisor is bound to the sandbox it names itself (the hello's sandbox_id, or the sandbox_id of
// ReportPolicyStatus), by id, or by name in the default workspace. That is what the supervisor's
// warning about connecting without a token promises, and what a local demo needs.

import { Code, ConnectError } from "@connectrpc/connect";
import { NO_AUTH_PRINCIPAL, type Principal } from "../auth/principal.js";
import type { SandboxRecord } from "../store/store.js";
import { DEFAULT_WORKSPACE } from "./access.js";
import type { GatewayDeps } from "./deps.js";

/** How a caller may act as a supervisor: for its token's sandbox, or (--no-auth) for the sandbox it names. */
export type SupervisorScope =
  | { readonly kind: "token"; readonly workspace: string; readonly name: string }
  | { readonly kind: "self-named" };

/** The caller's supervisor scope; PERMISSION_DENIED for a token that is not a sandbox supervisor's. */
export function supervisorScope(p: Principal, method: string): SupervisorScope {
  if (p === NO_AUTH_PRINCIPAL) return { kind: "self-named" };
  if (p.role !== "supervisor" || !p.sandbox) {
    throw new ConnectError(`${method} requires a sandbox supervisor token`, Code.PermissionDenied);
  }
  return { kind: "token", workspace: p.sandbox.workspace, name: p.sandbox.name };
}

/** The sandbox `named` (an id or a name) within `scope`, or undefined when there is none there. */
export async function supervisorSandbox(deps: Pick<GatewayDeps, "store">, scope: SupervisorScope, named: string): Promise<SandboxRecord | undefined> {
  if (named === "") return undefined;
  if (scope.kind === "self-named") {
    return (await deps.store.sandboxById(named)) ?? (await deps.store.sandboxByName(DEFAULT_WORKSPACE, named));
  }
  const sb = await deps.store.sandboxByName(scope.workspace, scope.name);
  return sb && (named === sb.id || named === sb.name) ? sb : undefined;
}
