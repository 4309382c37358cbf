// Authentication for every RPC: a Connect server interceptor that puts the caller's Principal in
// the handler context, or rejects the call. The server normally authenticates a request from its
// headers before reading its body (auth/front-door.ts) and the interceptor takes that answer;
// otherwise (an in-process transport) it authenticates the call itself, the same way
// (auth/request-authenticator.ts).

import { createContextKey, type Interceptor } from "@connectrpc/connect";
import type { AuthFile } from "./auth-file.js";
import { admittedKey, withFrontDoor } from "./front-door.js";
import { peerCertificateKey } from "./peer-certificate.js";
import { NO_AUTH_PRINCIPAL, type Principal } from "./principal.js";
import { createRequestAuthenticator, type RequestAuthenticatorOptions } from "./request-authenticator.js";

/** Where handlers find the caller: `ctx.values.get(principalKey)`. Undefined only on unauthenticated methods. */
export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "openshell principal" });

export type AuthInterceptorOptions = RequestAuthenticatorOptions;

/** Authenticates each call against the auth file's tokens and certificates, and OIDC when configured. */
export function createAuthInterceptor(auth: AuthFile, options: AuthInterceptorOptions = {}): Interceptor {
  const authenticate = createRequestAuthenticator(auth, options);
  const interceptor: Interceptor = (next) => async (req) => {
    const admitted = req.contextValues.get(admittedKey);
    const principal = admitted
      ? admitted.principal
      : await authenticate({
          procedure: `${req.service.typeName}/${req.method.name}`,
          authorization: req.header.get("authorization"),
          peer: req.contextValues.get(peerCertificateKey),
        });
    req.contextValues.set(principalKey, principal);
    return next(req);
  };
  return withFrontDoor(interceptor, { kind: "authenticate", authenticate });
}

/** `--no-auth`: every call runs as an admin of every workspace. For local demos only. */
export function createNoAuthInterceptor(): Interceptor {
  const interceptor: Interceptor = (next) => async (req) => {
    req.contextValues.set(principalKey, NO_AUTH_PRINCIPAL);
    return next(req);
  };
  return withFrontDoor(interceptor, { kind: "no-auth" });
}
