// How the server learns, from the interceptors it is given, what it must check at its front door
// before any request body is read: a gateway with authentication hands over its request
// authenticator (the server refuses a request without valid credentials from its headers); a
// gateway run with --no-auth says so (the server then answers only requests addressed to a
// loopback name, against DNS rebinding). Carried on the auth interceptor itself, so that every
// server given that interceptor guards its door, tests' included.

import { createContextKey, type Interceptor } from "@connectrpc/connect";
import type { Principal } from "./principal.js";
import type { RequestAuthenticator } from "./request-authenticator.js";

/** What the front door of a server with these interceptors checks. */
export type FrontDoor = { readonly kind: "authenticate"; readonly authenticate: RequestAuthenticator } | { readonly kind: "no-auth" };

const FRONT_DOOR = Symbol("openshell.frontDoor");
type Tagged = Interceptor & { [FRONT_DOOR]?: FrontDoor };

/** Returns `interceptor`, marked as the one that decides `door`. */
export function withFrontDoor(interceptor: Interceptor, door: FrontDoor): Interceptor {
  (interceptor as Tagged)[FRONT_DOOR] = door;
  return interceptor;
}

/** The front door the interceptors ask for; undefined when none of them authenticates. */
export function frontDoorOf(interceptors: readonly Interceptor[]): FrontDoor | undefined {
  for (const i of interceptors) {
    const door = (i as Tagged)[FRONT_DOOR];
    if (door) return door;
  }
  return undefined;
}

/**
 * Set by the server for a request it authenticated at its door: the principal (undefined for an
 * open method called without credentials). The auth interceptor then takes it as it is.
 */
export const admittedKey = createContextKey<{ readonly principal: Principal | undefined } | undefined>(undefined, {
  description: "authenticated at the front door",
});
