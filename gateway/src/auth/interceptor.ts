// Bearer-token authentication for every RPC: a Connect server interceptor that turns
// `authorization: Bearer <token>` into a Principal in the handler context, or rejects the call.

import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { tokenDigest, type AuthFile } from "./auth-file.js";
import { NO_AUTH_PRINCIPAL, type Principal } from "./principal.js";

/** Where handlers find the caller: `ctx.values.get(principalKey)`. Undefined only on unauthenticated methods. */
export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "openshell principal" });

export interface AuthInterceptorOptions {
  /**
   * Methods callable without a token, by name (`Health`) or path (`openshell.v1.OpenShell/Health`).
   * A valid token on them still sets the principal; an invalid one is ignored.
   */
  readonly unauthenticatedMethods?: readonly string[];
}

/** Authenticates each call against the tokens of `auth`. */
export function createAuthInterceptor(auth: AuthFile, options: AuthInterceptorOptions = {}): Interceptor {
  const byDigest = indexByDigest(auth);
  const open = new Set(options.unauthenticatedMethods ?? ["Health"]);
  return (next) => async (req) => {
    const isOpen = open.has(req.method.name) || open.has(`${req.service.typeName}/${req.method.name}`);
    const token = bearerToken(req.header.get("authorization"));
    const principal = token === undefined ? undefined : byDigest.get(tokenDigest(token).toString("hex"));
    if (!isOpen) {
      if (token === undefined) throw new ConnectError("missing bearer token", Code.Unauthenticated);
      if (principal === undefined) throw new ConnectError("invalid bearer token", Code.Unauthenticated);
    }
    req.contextValues.set(principalKey, principal);
    return next(req);
  };
}

/** `--no-auth`: every call runs as an admin of every workspace. For local demos only. */
export function createNoAuthInterceptor(): Interceptor {
  return (next) => async (req) => {
    req.contextValues.set(principalKey, NO_AUTH_PRINCIPAL);
    return next(req);
  };
}

/** The token of an `authorization: Bearer <token>` header value. */
function bearerToken(header: string | null): string | undefined {
  if (header === null) return undefined;
  const m = /^\s*Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1];
}

/**
 * Principals by the hex SHA-256 of their token. A keyed lookup (rather than comparing against
 * every entry) keeps authentication O(1) with thousands of supervisor tokens; it leaks no timing
 * about the token itself, since what is looked up is its digest.
 */
function indexByDigest(auth: AuthFile): Map<string, Principal> {
  const map = new Map<string, Principal>();
  for (const entry of auth.entries) map.set(entry.digest.toString("hex"), entry.principal);
  return map;
}
