// The bearer token of a registered gateway with auth_mode oidc: the signed-in user's session that
// the openshell CLI keeps in oidc_token.json. A valid access token is used as it is; one that has
// expired (or is about to) is refreshed with the refresh token through the SDK's
// `oidcRefreshToken`, which also renews it during a long command (a watch, a rollout), and every
// token the issuer answers is written back (oidc-token-file.ts: atomically, 0600) before it is
// used, so that a rotated refresh token is never lost.
//
// Two command lines may refresh the same session at once; with a rotating issuer the second one
// presents a spent refresh token and gets invalid_grant. It then reads the file again: when
// another process stored a new session there, that one is used (once), instead of failing.
//
// `openshell-config/oidc` (and oauth4webapi with it) is loaded only for such a gateway.

import { TokenProviderError } from "openshell-config";
import { ConfigError } from "./config-error.js";
import { isExpired, loginHint, readOidcTokenFile, rotatedFields, tooOpen, writeOidcTokenFile, type OidcTokenFile } from "./oidc-token-file.js";
import type { Registry, RegistryEntry } from "./registry.js";

export interface SessionHooks {
  /** A warning line on stderr. */
  warn(message: string): void;
  /** Every access token handed out, so that the output can redact it. */
  redact(secret: string): void;
}

/** The token source for `createConfigClient({ token })`. Throws ConfigError when there is no usable session. */
export async function oidcSession(entry: RegistryEntry, registry: Registry, hooks: SessionHooks, nowMs: () => number = Date.now): Promise<string | (() => Promise<string>)> {
  const files = registry.oidcTokenFiles(entry);
  const stored = readOidcTokenFile(files.read);
  if (stored === undefined) {
    throw new ConfigError(`no OIDC token for gateway "${entry.name}" at ${files.read}; ${loginHint(entry.name)}`);
  }
  if (tooOpen(stored.mode)) {
    hooks.warn(`${stored.file} can be read by other users (mode ${stored.mode.toString(8).padStart(4, "0")}); run "chmod 600 ${stored.file}" (the openshell CLI writes it 0600)`);
  }
  const expired = isExpired(stored, nowMs() / 1000);
  if (stored.refreshToken === undefined) {
    if (expired) {
      throw new ConfigError(`the OIDC token in ${stored.file} expired at ${new Date(stored.expiresAt! * 1000).toISOString()} and has no refresh token; ${loginHint(entry.name)}`);
    }
    hooks.redact(stored.accessToken);
    return stored.accessToken;
  }
  hooks.redact(stored.accessToken);
  hooks.redact(stored.refreshToken);
  const scopes = entry.metadata.oidcScopes;
  const { oidcRefreshToken } = await import("openshell-config/oidc");

  let current: OidcTokenFile = stored;
  let retriedFromFile = false;
  const providerFor = (session: OidcTokenFile) =>
    oidcRefreshToken({
      issuer: session.issuer,
      clientId: session.clientId,
      refreshToken: session.refreshToken!,
      accessToken: session.accessToken,
      expiresAt: session.expiresAt === undefined ? undefined : new Date(session.expiresAt * 1000),
      ...(scopes !== undefined && scopes.length > 0 ? { scopes } : {}),
      onRotate: async (rotated) => {
        hooks.redact(rotated.accessToken);
        hooks.redact(rotated.refreshToken);
        const expiresAt = rotated.expiresAt === undefined ? undefined : Math.floor(rotated.expiresAt.getTime() / 1000);
        const fields = rotatedFields(current.fields, { accessToken: rotated.accessToken, refreshToken: rotated.refreshToken, expiresAt });
        // In memory first: the issuer has spent the old refresh token whether or not the write works.
        current = { ...current, fields, accessToken: rotated.accessToken, refreshToken: rotated.refreshToken, expiresAt };
        writeOidcTokenFile(files.write, fields);
        current = { ...current, file: files.write, mode: 0o600 };
      },
      onRotateError: (err) => {
        const code = (err as NodeJS.ErrnoException).code;
        hooks.warn(`could not save the refreshed OIDC session to ${files.write} (${code ?? (err as Error).message}); the next command may have to sign in again: ${loginHint(entry.name)}`);
      },
    });
  let provider = providerFor(stored);

  return async () => {
    try {
      return await provider();
    } catch (err) {
      if (retriedFromFile || !(err instanceof TokenProviderError) || err.oauthError !== "invalid_grant") throw err;
      // Another command line may have used (and rotated) the refresh token first.
      retriedFromFile = true;
      const again = readOidcTokenFile(files.write) ?? readOidcTokenFile(files.read);
      if (again === undefined || again.refreshToken === undefined || again.refreshToken === current.refreshToken) throw err;
      hooks.redact(again.accessToken);
      hooks.redact(again.refreshToken);
      current = again;
      provider = providerFor(again);
      return await provider();
    }
  };
}
