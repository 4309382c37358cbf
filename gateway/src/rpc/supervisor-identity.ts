// Which sandbox instance a supervisor speaks for. A sandbox deleted and re-created under the same
// name is a new instance (a new id), and it must not inherit the old one's supervisors: they
// enforce whatever policy the new instance is given (issue 29, finding 2).
//
// With credentials (a supervisor token or client certificate of the auth file) the instance is:
// - the auth file's `sandboxId`, when the entry names one (an admin pins the credential);
// - else the instance the credential was bound to at its first accepted call, stored under the
//   credential's key (a digest, never the credential; auth/principal-credential.ts). A credential
//   not yet bound binds to the current sandbox of its entry's name.
// Once that instance is deleted, every call with the credential is refused (PERMISSION_DENIED,
// naming the deleted instance): a new instance needs a credential of its own (a new entry), or an
// admin pins this one to it with `sandboxId`. Any other role is refused.
//
// Under --no-auth there are no credentials to bind: a supervisor is bound to the sandbox it names
// itself (the hello's sandbox_id, or the sandbox_id of ReportPolicyStatus), by id, or by name in
// the default workspace. An id names that instance alone: once it is deleted, the id is refused
// with the same reason rather than read as a name. That is what the supervisor's warning about
// connecting without a token promises, and what a local demo needs.
//
// Either way a session is bound to the instance it was accepted for: it is registered and
// delivered to by sandbox id, and ends when that instance is deleted (delivery/session.ts).

import { Code, ConnectError } from "@connectrpc/connect";
import { credentialOf } from "../auth/principal-credential.js";
import { NO_AUTH_PRINCIPAL, type Principal } from "../auth/principal.js";
import type { SandboxRecord, Store } from "../store/store.js";
import { DEFAULT_WORKSPACE } from "./access.js";
import type { GatewayDeps } from "./deps.js";

/** How a caller may act as a supervisor: for its credential's sandbox, or (--no-auth) for the sandbox it names. */
export type SupervisorScope =
  | {
      readonly kind: "token";
      readonly workspace: string;
      readonly name: string;
      /** The instance the auth file pins the credential to, if it does. */
      readonly pinnedId: string | undefined;
      /** The key the binding is stored under. */
      readonly credential: string;
      readonly principal: string;
    }
  | { readonly kind: "self-named" };

/** The caller's supervisor scope; PERMISSION_DENIED for a credential that is not a sandbox supervisor's. */
export function supervisorScope(p: Principal, method: string): SupervisorScope {
  if (p === NO_AUTH_PRINCIPAL) return { kind: "self-named" };
  if (p.role !== "supervisor" || !p.sandbox) {
    throw new ConnectError(`${method} requires a sandbox supervisor token`, Code.PermissionDenied);
  }
  const { workspace, name, id } = p.sandbox;
  return {
    kind: "token",
    workspace,
    name,
    pinnedId: id,
    // Every auth-file principal has a key; one made otherwise binds per principal and sandbox.
    credential: credentialOf(p) ?? `principal:${JSON.stringify([p.name, workspace, name])}`,
    principal: p.name,
  };
}

type Deps = Pick<GatewayDeps, "store" | "logger">;

/**
 * The sandbox `named` (an id or a name) within `scope`, or undefined when there is none there.
 * Throws PERMISSION_DENIED when the instance the caller serves was deleted.
 */
export async function supervisorSandbox(deps: Deps, scope: SupervisorScope, named: string): Promise<SandboxRecord | undefined> {
  if (named === "") return undefined;
  if (scope.kind === "self-named") {
    const byId = await deps.store.sandboxById(named);
    if (byId) return byId;
    const gone = await deletion(deps.store, named);
    if (gone) throw instanceGone(gone.name, named);
    return deps.store.sandboxByName(DEFAULT_WORKSPACE, named);
  }
  const bound = await deps.store.supervisorBinding(scope.credential);
  const instance = scope.pinnedId ?? bound?.sandboxId;
  let sb: SandboxRecord | undefined;
  if (instance === undefined) {
    sb = await deps.store.sandboxByName(scope.workspace, scope.name);
  } else {
    sb = await deps.store.sandboxById(instance);
    if (!sb) {
      // A binding names an instance that existed; a pin may name one not created yet.
      if (bound?.sandboxId === instance || (await deletion(deps.store, instance))) throw instanceGone(scope.name, instance);
      return undefined;
    }
    if (sb.workspace !== scope.workspace || sb.name !== scope.name) {
      deps.logger.warn({ principal: scope.principal, sandbox: scope.name, pinnedId: instance }, "a supervisor credential's sandboxId names another sandbox");
      return undefined;
    }
  }
  if (!sb) return undefined;
  if (named !== sb.id && named !== sb.name) {
    // Most likely a supervisor that names its instance by id and outlived it.
    const gone = await deletion(deps.store, named);
    if (gone && gone.workspace === scope.workspace && gone.name === scope.name) throw instanceGone(scope.name, named);
    return undefined;
  }
  if (bound?.sandboxId !== sb.id) {
    const now = await deps.store.bindSupervisor(
      { credential: scope.credential, workspace: sb.workspace, sandboxName: sb.name, sandboxId: sb.id, principal: scope.principal, boundAt: new Date() },
      scope.pinnedId !== undefined,
    );
    // A first session racing this one bound the credential to an instance since replaced.
    if (now.sandboxId !== sb.id) throw instanceGone(scope.name, now.sandboxId);
    deps.logger.info({ principal: scope.principal, workspace: sb.workspace, sandbox: sb.name, id: sb.id }, "supervisor credential bound to a sandbox instance");
  }
  return sb;
}

/** The deletion record of instance `id`, if it was deleted. */
async function deletion(store: Store, id: string) {
  return (await store.sandboxEvents(id)).find((e) => e.event === "deleted");
}

/** Permanent for this credential: only a new credential, or an admin's pin, serves a new instance. */
function instanceGone(name: string, id: string): ConnectError {
  return new ConnectError(
    `the sandbox "${name}" this supervisor served (id ${id}) was deleted; a new instance needs its own credential ` +
      `(a new supervisor token, or an admin pins this one with "sandboxId" in the auth file)`,
    Code.PermissionDenied,
  );
}
