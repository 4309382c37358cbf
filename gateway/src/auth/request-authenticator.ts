// Authentication from a request's headers alone: the bearer token (an auth-file token, or with
// --oidc-issuer a JWT) or, without one, the connection's verified client certificate. The server
// runs it before anything reads a request's body (http/front-door.ts), so that a caller without
// valid credentials cannot make the gateway receive, buffer and decode megabytes; the auth
// interceptor runs it for calls that reach a handler some other way (in-process transports).

import { Code, ConnectError } from "@connectrpc/connect";
import { tokenDigest, type AuthFile } from "./auth-file.js";
import { certificatePrincipal, DEFAULT_CERTIFICATE_PRINCIPALS } from "./certificate-principals.js";
import type { OidcVerifier } from "./oidc-verifier.js";
import type { PeerCertificate } from "./peer-certificate.js";
import type { Principal } from "./principal.js";

export interface RequestCredentials {
  /** `/package.Service/Method` or `package.Service/Method`. */
  readonly procedure: string;
  /** The `authorization` header, if any. */
  readonly authorization: string | null | undefined;
  /** The connection's client certificate (undefined: none asked). */
  readonly peer: PeerCertificate | undefined;
}

/**
 * The principal of a request's credentials. Resolves undefined for a method callable without
 * credentials (Health) when none or invalid ones came; throws ConnectError (UNAUTHENTICATED, or
 * UNAVAILABLE/PERMISSION_DENIED from OIDC) otherwise. Synchronous (no promise) for auth-file
 * tokens and certificates: every supervisor's and most clients' path.
 */
export type RequestAuthenticator = (credentials: RequestCredentials) => Principal | undefined | Promise<Principal | undefined>;

export interface RequestAuthenticatorOptions {
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

export function createRequestAuthenticator(auth: AuthFile, options: RequestAuthenticatorOptions = {}): RequestAuthenticator {
  const byDigest = indexByDigest(auth);
  const open = new Set(options.unauthenticatedMethods ?? ["Health"]);
  const certificates = auth.clientCertificates ?? DEFAULT_CERTIFICATE_PRINCIPALS;
  const oidc = options.oidc;
  const isOpen = (procedure: string) => {
    const path = procedure.startsWith("/") ? procedure.slice(1) : procedure;
    return open.has(path) || open.has(path.slice(path.lastIndexOf("/") + 1));
  };

  return ({ procedure, authorization, peer }) => {
    const openMethod = isOpen(procedure);
    const token = bearerToken(authorization);
    if (token !== undefined) {
      if (oidc && JWT_SHAPE.test(token)) {
        return oidc.verify(token).catch((err: unknown) => {
          if (openMethod) return undefined;
          throw err;
        });
      }
      const principal = byDigest.get(tokenDigest(token).toString("hex"));
      if (principal === undefined && !openMethod) throw new ConnectError("invalid bearer token", Code.Unauthenticated);
      return principal;
    }
    if (peer?.status === "verified") {
      const principal = certificatePrincipal(certificates, peer);
      if (principal === undefined && !openMethod) {
        throw new ConnectError("missing bearer token: this gateway's client certificates identify no principal", Code.Unauthenticated);
      }
      return principal;
    }
    if (!openMethod) throw new ConnectError("missing bearer token", Code.Unauthenticated);
    return undefined;
  };
}

/** The token of an `authorization: Bearer <token>` header value. */
function bearerToken(header: string | null | undefined): string | undefined {
  if (header === null || header === undefined) return undefined;
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
