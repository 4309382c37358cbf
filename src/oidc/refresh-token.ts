// oidcRefreshToken: a signed-in user's stored session (an access token and a refresh token, as
// the openshell CLI keeps them), kept fresh with the refresh token grant; each rotation is handed
// to the caller to store.

import { None, processRefreshTokenResponse, refreshTokenGrantRequest } from "oauth4webapi";
import { InvalidArgumentError } from "../errors.js";
import { backoffOptions, withBackoff } from "./backoff.js";
import { basicCredentials, checkCommonOptions, clientAuth, requireString } from "./client-options.js";
import { createIssuerClient } from "./issuer.js";
import type { OidcCommonOptions, OidcTokenProvider } from "./options.js";
import { createTokenProvider } from "./provider.js";
import { createRedactor } from "./redact.js";

/** The tokens an issuer returned, as {@link OidcRefreshTokenOptions.onRotate} receives them to store. */
export interface OidcRotatedTokens {
  /** The new access token. */
  readonly accessToken: string;
  /** The refresh token to use next time: the new one, or the same one when the issuer did not rotate it. */
  readonly refreshToken: string;
  /** When the access token expires; undefined when the issuer did not say. */
  readonly expiresAt: Date | undefined;
}

/** Options of {@link oidcRefreshToken}. */
export interface OidcRefreshTokenOptions extends OidcCommonOptions {
  /** The client secret of a confidential client; omit it for a public client (a CLI). */
  readonly clientSecret?: string;
  /** The stored refresh token. */
  readonly refreshToken: string;
  /** The stored access token, used without any request while it is valid. */
  readonly accessToken?: string;
  /** When `accessToken` expires. Without it, a given `accessToken` is used until `invalidate()`. */
  readonly expiresAt?: Date;
  /**
   * Called, and awaited, each time the issuer returns tokens, before the access token is handed
   * out: store them (the old refresh token may no longer work). If it throws, the provider still
   * returns the new access token and keeps the new refresh token in memory; the error goes to
   * `onRotateError` and to the provider's `rotateError`.
   */
  readonly onRotate?: (tokens: OidcRotatedTokens) => void | Promise<void>;
  /** Receives what `onRotate` threw (e.g. to warn that the session could not be saved). */
  readonly onRotateError?: (error: unknown) => void;
}

/** The provider {@link oidcRefreshToken} returns. */
export interface OidcRefreshTokenProvider extends OidcTokenProvider {
  /** What the last `onRotate` threw; undefined once a later `onRotate` succeeded, or before any. */
  readonly rotateError: unknown;
}

/**
 * A token provider for a stored user session: uses `accessToken` while it is valid, then renews
 * it with the refresh token grant before it expires, and hands every answer to `onRotate` so that
 * the caller can store the new tokens (issuers that rotate refresh tokens accept each one once).
 *
 * It caches, renews, single-flights, retries and reports errors exactly as
 * {@link oidcClientCredentials} does; `invalid_grant` (a refresh token expired, revoked or used
 * already) is a refusal: the user has to sign in again. A refresh whose answer is lost in transit
 * may have spent the refresh token at the issuer; its retry then gets `invalid_grant` too.
 *
 * @example
 * ```ts
 * import { readFile, rename, writeFile } from "node:fs/promises";
 * import { createConfigClient } from "openshell-config";
 * import { oidcRefreshToken } from "openshell-config/oidc";
 *
 * // A CLI with a stored session: refresh it when needed and write the rotation back atomically.
 * const file = `${process.env.HOME}/.config/openshell/gateways/remote/oidc_token.json`;
 * const stored = JSON.parse(await readFile(file, "utf8"));
 * const token = oidcRefreshToken({
 *   issuer: stored.issuer,
 *   clientId: stored.client_id,
 *   refreshToken: stored.refresh_token,
 *   accessToken: stored.access_token,
 *   expiresAt: stored.expires_at === undefined ? undefined : new Date(stored.expires_at * 1000),
 *   async onRotate({ accessToken, refreshToken, expiresAt }) {
 *     const next = { ...stored, access_token: accessToken, refresh_token: refreshToken };
 *     if (expiresAt !== undefined) next.expires_at = Math.floor(expiresAt.getTime() / 1000);
 *     await writeFile(`${file}.tmp`, JSON.stringify(next, null, 2), { mode: 0o600 });
 *     await rename(`${file}.tmp`, file);
 *   },
 *   onRotateError: (err) => console.warn(`could not save the refreshed session to ${file}: ${err}`),
 * });
 * const client = createConfigClient({ baseUrl: "https://gateway.example.com", token });
 * ```
 */
export function oidcRefreshToken(options: OidcRefreshTokenOptions): OidcRefreshTokenProvider {
  const { renewBeforeMs } = checkCommonOptions(options);
  requireString(options.refreshToken, "refreshToken");
  if (options.clientSecret !== undefined) requireString(options.clientSecret, "clientSecret");
  if (options.accessToken !== undefined) requireString(options.accessToken, "accessToken");
  if (options.expiresAt !== undefined && !(options.expiresAt instanceof Date && Number.isFinite(options.expiresAt.getTime()))) {
    throw new InvalidArgumentError("expiresAt must be a valid Date", { field: "expiresAt" });
  }
  const redactor = createRedactor();
  redactor.add(options.clientSecret, true);
  if (options.clientSecret !== undefined) redactor.add(basicCredentials(options.clientId, options.clientSecret), true);
  redactor.add(options.refreshToken);
  redactor.add(options.accessToken);
  const issuer = createIssuerClient(options, redactor);
  const backoff = backoffOptions(options.retry);
  const client = { client_id: options.clientId };
  const secret = options.clientSecret;
  const additionalParameters = new URLSearchParams();
  if (options.scopes !== undefined && options.scopes.length > 0) additionalParameters.set("scope", options.scopes.join(" "));
  let refreshToken = options.refreshToken;
  let rotateError: unknown;

  async function fetchTokens() {
    const issued = await withBackoff(async (signal, timeoutMs) => {
      const as = await issuer.discover(signal, timeoutMs);
      const auth = secret === undefined ? None() : clientAuth(as, { clientSecret: secret, clientAuthMethod: options.clientAuthMethod });
      return issuer.token(
        as,
        signal,
        timeoutMs,
        (request) => refreshTokenGrantRequest(as, client, auth, refreshToken, { ...request, additionalParameters }),
        (response) => processRefreshTokenResponse(as, client, response),
      );
    }, backoff);
    refreshToken = issued.refreshToken ?? refreshToken;
    if (options.onRotate !== undefined) {
      const expiresAt = issued.expiresAt === undefined ? undefined : new Date(issued.expiresAt);
      try {
        await options.onRotate({ accessToken: issued.accessToken, refreshToken, expiresAt });
        rotateError = undefined;
      } catch (err) {
        rotateError = err;
        try {
          options.onRotateError?.(err);
        } catch {
          // The caller's reporter failed too; rotateError still holds the error.
        }
      }
    }
    return issued;
  }

  return createTokenProvider<OidcRefreshTokenProvider>(
    {
      describe: { grant: "refresh_token", issuer: issuer.issuer.href, clientId: options.clientId },
      initial:
        options.accessToken === undefined
          ? undefined
          : { accessToken: options.accessToken, expiresAt: options.expiresAt?.getTime(), lifetimeMs: undefined },
      renewBeforeMs,
      cooldownMs: backoff.cooldownMs,
      fetchTokens,
    },
    {
      get rotateError() {
        return rotateError;
      },
    },
  );
}
