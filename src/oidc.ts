/**
 * OIDC bearer tokens for gateways that take them: {@link oidcClientCredentials} for a service
 * that signs in as itself, {@link oidcRefreshToken} for a stored user session (the openshell
 * CLI's `oidc_token.json`). Each returns an {@link OidcTokenProvider}, a function to pass as
 * `createConfigClient({ token })`: it discovers the issuer, caches the access token, renews it
 * before it expires, shares one request among concurrent callers and retries the issuer's
 * transient failures without ever turning into a request storm.
 *
 * Browser-safe: it uses `fetch` only (no Node built-ins, no node:crypto), through
 * [oauth4webapi](https://github.com/panva/oauth4webapi). Failures reject with `TokenProviderError`
 * from `openshell-config`; no secret ever appears in one.
 *
 * @example
 * ```ts
 * import { createConfigClient } from "openshell-config";
 * import { oidcClientCredentials } from "openshell-config/oidc";
 *
 * const token = oidcClientCredentials({ issuer: "https://login.example.com", clientId: "bot", clientSecret: "…" });
 * const client = createConfigClient({ baseUrl: "https://gateway.example.com", token });
 * ```
 *
 * @module openshell-config/oidc
 */

export { oidcClientCredentials } from "./oidc/client-credentials.js";
export type { OidcClientCredentialsOptions } from "./oidc/client-credentials.js";
export { oidcRefreshToken } from "./oidc/refresh-token.js";
export type { OidcRefreshTokenOptions, OidcRefreshTokenProvider, OidcRotatedTokens } from "./oidc/refresh-token.js";
export type { OidcCommonOptions, OidcFetch, OidcRetryOptions, OidcTokenProvider } from "./oidc/options.js";
