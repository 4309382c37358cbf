// Checks of the options both OIDC providers take, and the client authentication they imply.

import { ClientSecretBasic, ClientSecretPost, type AuthorizationServer, type ClientAuth } from "oauth4webapi";
import { InvalidArgumentError } from "../errors.js";
import type { OidcCommonOptions } from "./options.js";

/** InvalidArgumentError naming `field` unless `value` is a non-empty string. */
export function requireString(value: unknown, field: string): asserts value is string {
  if (typeof value !== "string" || value === "") {
    throw new InvalidArgumentError(`${field} must be a non-empty string`, { field });
  }
}

/**
 * Checks the options both providers take (the issuer URL is checked where it is parsed) and
 * returns `renewBeforeMs` with its default, 60 s.
 */
export function checkCommonOptions(options: OidcCommonOptions): { renewBeforeMs: number } {
  requireString(options?.clientId, "clientId");
  const renewBeforeMs = options.renewBeforeMs ?? 60_000;
  if (typeof renewBeforeMs !== "number" || !Number.isFinite(renewBeforeMs) || renewBeforeMs < 0) {
    throw new InvalidArgumentError(`renewBeforeMs must be a finite number >= 0, got ${String(renewBeforeMs)}`, { field: "renewBeforeMs" });
  }
  const method = options.clientAuthMethod;
  if (method !== undefined && method !== "client_secret_basic" && method !== "client_secret_post") {
    throw new InvalidArgumentError(`clientAuthMethod must be "client_secret_basic" or "client_secret_post", got ${String(method)}`, {
      field: "clientAuthMethod",
    });
  }
  if (options.scopes !== undefined && (!Array.isArray(options.scopes) || options.scopes.some((s) => typeof s !== "string" || !/^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s)))) {
    throw new InvalidArgumentError("scopes must be an array of scope tokens (printable, no spaces, quotes or backslashes)", { field: "scopes" });
  }
  return { renewBeforeMs };
}

/**
 * The credentials of HTTP Basic client authentication as oauth4webapi sends them (RFC 6749
 * §2.3.1: both parts form-encoded, and `-_.!~*'()` escaped as well), so that the redactor knows
 * them in that form too.
 */
export function basicCredentials(clientId: string, secret: string): string {
  const form = (s: string) =>
    encodeURIComponent(s).replace(/(?:[-_.!~*'()]|%20)/g, (c) => (c === "%20" ? "+" : `%${c.charCodeAt(0).toString(16).toUpperCase()}`));
  return btoa(`${form(clientId)}:${form(secret)}`);
}

/** Basic unless asked otherwise or the issuer lists only post (Basic is the spec's default). */
export function clientAuth(as: AuthorizationServer, options: { clientSecret: string; clientAuthMethod?: string | undefined }): ClientAuth {
  const supported = as.token_endpoint_auth_methods_supported;
  const method =
    options.clientAuthMethod ??
    (supported === undefined || supported.includes("client_secret_basic") || !supported.includes("client_secret_post")
      ? "client_secret_basic"
      : "client_secret_post");
  return method === "client_secret_post" ? ClientSecretPost(options.clientSecret) : ClientSecretBasic(options.clientSecret);
}
