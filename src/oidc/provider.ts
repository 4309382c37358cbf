// The token cache both OIDC providers share: one access token kept until its renewal time, one
// fetch in flight however many callers ask at once, a still-valid token handed out when its
// renewal fails, and a cooldown after a failure so that callers in a loop cannot turn into a
// request storm. It knows nothing of OAuth: `fetchTokens` does that.

import { retryAfterOf } from "./backoff.js";
import type { OidcTokenProvider } from "./options.js";

/** An access token and when it expires (ms since the epoch; undefined: until invalidated). */
export interface CachedToken {
  readonly accessToken: string;
  readonly expiresAt: number | undefined;
  /** Its lifetime when known, to renew no earlier than half-way through it. */
  readonly lifetimeMs: number | undefined;
}

export interface ProviderCore {
  /** For toString/JSON: the grant, issuer and client id (never a secret). */
  readonly describe: { readonly grant: string; readonly issuer: string; readonly clientId: string };
  /** A token to start with (a stored session's access token). */
  readonly initial?: CachedToken | undefined;
  readonly renewBeforeMs: number;
  readonly cooldownMs: number;
  /** Fetches new tokens, with retries; rejects with a TokenProviderError. */
  fetchTokens(): Promise<CachedToken>;
}

/** The callable provider over `core`. */
export function createTokenProvider<P extends OidcTokenProvider = OidcTokenProvider>(core: ProviderCore, extra: object = {}): P {
  let cached: (CachedToken & { renewAt: number | undefined }) | undefined = core.initial && withRenewAt(core.initial);
  let inflight: Promise<string> | undefined;
  let failure: { error: unknown; until: number } | undefined;
  let lastFetchAt: number | undefined;

  function withRenewAt(token: CachedToken) {
    if (token.expiresAt === undefined) return { ...token, renewAt: undefined };
    const ahead = token.lifetimeMs === undefined ? core.renewBeforeMs : Math.min(core.renewBeforeMs, token.lifetimeMs / 2);
    return { ...token, renewAt: token.expiresAt - ahead };
  }

  const stillValid = (now: number) => (cached !== undefined && (cached.expiresAt === undefined || now < cached.expiresAt) ? cached : undefined);

  async function renew(usable: CachedToken | undefined): Promise<string> {
    // Fetched a moment ago and already dropped (invalidate(), or a lifetime shorter than the
    // cooldown): wait out the cooldown rather than ask the issuer at the caller's pace.
    const wait = usable === undefined && lastFetchAt !== undefined ? lastFetchAt + core.cooldownMs - Date.now() : 0;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    try {
      const token = await core.fetchTokens();
      cached = withRenewAt(token);
      lastFetchAt = Date.now();
      failure = undefined;
      return token.accessToken;
    } catch (error) {
      failure = { error, until: Date.now() + Math.max(core.cooldownMs, retryAfterOf(error) ?? 0) };
      // The renewal failed, but the token it was to replace is still good: use it meanwhile.
      const current = usable && stillValid(Date.now());
      if (current && current.accessToken === usable.accessToken) return current.accessToken;
      throw error;
    }
  }

  const provider = (async () => {
    const now = Date.now();
    if (cached !== undefined && (cached.renewAt === undefined || now < cached.renewAt)) return cached.accessToken;
    if (inflight !== undefined) return inflight;
    const usable = stillValid(now);
    if (failure !== undefined && now < failure.until) {
      if (usable !== undefined) return usable.accessToken;
      throw failure.error;
    }
    const run = renew(usable);
    inflight = run;
    try {
      return await run;
    } finally {
      if (inflight === run) inflight = undefined;
    }
  }) as P;

  const description = () => ({ ...core.describe, expiresAt: provider.expiresAt?.toISOString() });
  Object.defineProperties(provider, {
    invalidate: {
      value: () => {
        cached = undefined;
      },
    },
    expiresAt: {
      get: () => (cached?.expiresAt === undefined ? undefined : new Date(cached.expiresAt)),
      enumerable: true,
    },
    toJSON: { value: description },
    toString: {
      value: () => `OidcTokenProvider(${core.describe.grant}, issuer ${core.describe.issuer}, client ${core.describe.clientId})`,
    },
    ...Object.getOwnPropertyDescriptors(extra),
  });
  return provider;
}
