// Authentication for every RPC: a Connect server interceptor that turns the caller's credentials
// into a Principal in the handler context, or rejects the call. A bearer token decides when one
// is sent (an auth-file token, or with --oidc-issuer a JWT); without one, a verified client
// certificate (--tls-client-ca) stands for the principal the auth file gives it.

import { Code, ConnectError, createContextKey, type Interceptor } from "@connectrpc/connect";
import { tokenDigest, type AuthFile } from "./auth-file.js";
import { certificatePrincipal, DEFAULT_CERTIFICATE_PRINCIPALS } from "./certificate-principals.js";
import type { OidcVerifier } from "./oidc-verifier.js";
import { peerCertificateKey } from "./peer-certificate.js";
import { NO_AUTH_PRINCIPAL, type Principal } from "./principal.js";

/** Where handlers find the caller: `ctx.values.get(principalKey)`. Undefined only on unauthenticated methods. */
export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "openshell principal" });

export interface AuthInterceptorOptions {
  /**
   * Methods callable without credentials, by name (`Health`) or path (`openshell.v1.OpenShell/Health`).
   * Valid credentials on them still set the principal; invalid ones are ignored.
   */
  readonly unauthenticatedMethods?: readonly string[];
  /** Validates JWT bearer tokens (`--oidc-issuer`). Without it every token is looked up in the auth file. */
  readonly oidc?: OidcVerifier;
}

/** Three base64url parts: how a JWT looks (an auth-file token may be anything else). */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;

/** Authenticates each call against the auth file's tokens and certificates, and OIDC when configured. */
export function createAuthInterceptor(auth: AuthFile, options: AuthInterceptorOptions = {}): Interceptor {
  const byDigest = indexByDigest(auth);
  const open = new Set(options.unauthenticatedMethods ?? ["Health"]);
  const certificates = auth.clientCertificates ?? DEFAULT_CERTIFICATE_PRINCIPALS;
  const oidc = options.oidc;

  return (next) => async (req) => {
    const isOpen = open.has(req.method.name) || open.has(`${req.service.typeName}/${req.method.name}`);
    const token = bearerToken(req.header.get("authorization"));
    let principal: Principal | undefined;
    if (token !== undefined) {
      if (oidc && JWT_SHAPE.test(token)) {
        try {
          principal = await oidc.verify(token);
        } catch (err) {
          if (!isOpen) throw err;
        }
      } else {
        // Kept synchronous: this is every supervisor's and most clients' path.
        principal = byDigest.get(tokenDigest(token).toString("hex"));
        if (principal === undefined && !isOpen) throw new ConnectError("invalid bearer token", Code.Unauthenticated);
      }
    } else {
      const cert = req.contextValues.get(peerCertificateKey);
      if (cert?.status === "verified") {
        principal = certificatePrincipal(certificates, cert);
        if (principal === undefined && !isOpen) {
          throw new ConnectError("missing bearer token: this gateway's client certificates identify no principal", Code.Unauthenticated);
        }
      }
      if (principal === undefined && !isOpen) throw new ConnectError("missing bearer token", Code.Unauthenticated);
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
