// oidcClientCredentials: a service's own access tokens, from the OAuth client credentials grant.

import { clientCredentialsGrantRequest, processClientCredentialsResponse } from "oauth4webapi";
import { backoffOptions, withBackoff } from "./backoff.js";
import { basicCredentials, checkCommonOptions, clientAuth, requireString } from "./client-options.js";
import { createIssuerClient } from "./issuer.js";
import type { OidcCommonOptions, OidcTokenProvider } from "./options.js";
import { createTokenProvider } from "./provider.js";
import { createRedactor } from "./redact.js";

/** Options of {@link oidcClientCredentials}. */
export interface OidcClientCredentialsOptions extends OidcCommonOptions {
  /** The client secret. Kept in memory only; never in an error, a log line or the provider's JSON. */
  readonly clientSecret: string;
  /** The audience to ask for (sent as `audience`), e.g. the gateway's; the issuer's default when absent. */
  readonly audience?: string;
}

/**
 * A token provider for a service that signs in as itself: the OAuth client credentials grant
 * against an OIDC issuer, with the issuer discovered and validated first.
 *
 * - The issuer is discovered once (its document must name exactly `issuer`) and cached.
 * - The access token is cached and renewed `renewBeforeMs` before it expires (default 60 s, at
 *   most half its lifetime). A token answered without `expires_in` is kept until `invalidate()`
 *   (call it when the gateway answers UNAUTHENTICATED).
 * - Concurrent calls share one request: 100 callers at once cause one discovery and one token request.
 * - Network errors, timeouts, 5xx, 408 and 429 (after its Retry-After) are retried with backoff
 *   (`retry`); a 4xx refusal is not, and rejects with a one-line `TokenProviderError`, e.g.
 *   `OIDC token request to https://issuer/token refused: invalid_client (client authentication failed)`.
 *   After a call failed for good, calls fail with the same error for `retry.cooldownMs` (1 s).
 * - When a renewal fails while the current token is still valid, that token is returned.
 * - Browsers: fetch only (pass `fetch` to use another). `http://` issuers are refused unless on
 *   loopback (127.0.0.0/8, ::1, localhost) or `allowInsecureRequests` is set.
 *
 * Throws `InvalidArgumentError` for a missing or malformed option and `InsecureTransportError` for
 * a plain-http issuer on another host, at once rather than at the first call.
 *
 * @example
 * ```ts
 * import { createConfigClient } from "openshell-config";
 * import { oidcClientCredentials } from "openshell-config/oidc";
 * import { createNodeTransport } from "openshell-config/transport/node";
 *
 * // A service with its own OAuth client: tokens are fetched on first use and renewed before expiry.
 * const token = oidcClientCredentials({
 *   issuer: "https://login.example.com/realms/openshell",
 *   clientId: "rollout-bot",
 *   clientSecret: process.env.OIDC_CLIENT_SECRET!,
 *   audience: "openshell-gateway",
 *   scopes: ["openshell:admin"],
 * });
 * const client = createConfigClient({
 *   transport: createNodeTransport({ baseUrl: "https://gateway.example.com" }),
 *   token,
 * });
 * ```
 */
export function oidcClientCredentials(options: OidcClientCredentialsOptions): OidcTokenProvider {
  const { renewBeforeMs } = checkCommonOptions(options);
  requireString(options.clientSecret, "clientSecret");
  if (options.audience !== undefined) requireString(options.audience, "audience");
  const redactor = createRedactor();
  redactor.add(options.clientSecret, true);
  redactor.add(basicCredentials(options.clientId, options.clientSecret), true);
  const issuer = createIssuerClient(options, redactor);
  const backoff = backoffOptions(options.retry);
  const client = { client_id: options.clientId };
  const parameters = new URLSearchParams();
  if (options.scopes !== undefined && options.scopes.length > 0) parameters.set("scope", options.scopes.join(" "));
  if (options.audience !== undefined) parameters.set("audience", options.audience);

  return createTokenProvider({
    describe: { grant: "client_credentials", issuer: issuer.issuer.href, clientId: options.clientId },
    renewBeforeMs,
    cooldownMs: backoff.cooldownMs,
    fetchTokens: () =>
      withBackoff(async (signal, timeoutMs) => {
        const as = await issuer.discover(signal, timeoutMs);
        return issuer.token(
          as,
          signal,
          timeoutMs,
          (request) => clientCredentialsGrantRequest(as, client, clientAuth(as, options), new URLSearchParams(parameters), request),
          (response) => processClientCredentialsResponse(as, client, response),
        );
      }, backoff),
  });
}
