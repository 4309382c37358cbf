// The options and the provider shape shared by both OIDC token providers (types only; no code,
// so that every module of src/oidc can import them without pulling another in).

/** A `fetch` the provider calls instead of the global one (a test double, a proxy-aware fetch). */
export type OidcFetch = (url: string, init: RequestInit) => Promise<Response>;

/**
 * How a provider retries transient failures of the issuer (network errors, timeouts, 5xx, 408,
 * 429). Refusals (4xx) are never retried. Every delay is a full-jitter exponential backoff
 * between `minDelayMs` and `maxDelayMs`, and no attempt starts after `budgetMs`.
 */
export interface OidcRetryOptions {
  /** Retries after the first attempt. Default 3. */
  readonly retries?: number;
  /** First backoff delay. Default 250 ms. */
  readonly minDelayMs?: number;
  /** Backoff cap. Default 4 s. */
  readonly maxDelayMs?: number;
  /**
   * The longest `Retry-After` (429 or 503) the provider waits for within one call. A longer one
   * ends the call with a transient error, and no request is sent before that time. Default 5 s.
   */
  readonly maxRetryAfterMs?: number;
  /** Timeout of one request to the issuer (discovery or token). Default 5 s. */
  readonly attemptTimeoutMs?: number;
  /** Time from the first attempt after which no attempt or wait starts. Default 10 s. */
  readonly budgetMs?: number;
  /**
   * After a call that failed for good, calls fail at once with the same error for this long
   * instead of asking the issuer again; and a token dropped by `invalidate()` is fetched again
   * no sooner than this after the last fetch. Default 1 s.
   */
  readonly cooldownMs?: number;
}

/** Options both providers take. */
export interface OidcCommonOptions {
  /**
   * The issuer identifier, e.g. `https://login.example.com/realms/openshell`. Its discovery
   * document must name exactly this issuer. `http://` is refused unless the host is loopback
   * (127.0.0.0/8, ::1, localhost) or `allowInsecureRequests` is set.
   */
  readonly issuer: string;
  /** The OAuth client id. */
  readonly clientId: string;
  /** Scopes to ask for (sent space-separated as `scope`). */
  readonly scopes?: readonly string[];
  /** The `fetch` to use. Default: the global `fetch`, looked up at each request. */
  readonly fetch?: OidcFetch;
  /**
   * How long before its expiry a token is renewed. Default 60 s, but never more than half the
   * token's lifetime (a 60 s token is renewed after 30 s).
   */
  readonly renewBeforeMs?: number;
  /** Retries of transient issuer failures. */
  readonly retry?: OidcRetryOptions;
  /** Allow a plain-http issuer (or token endpoint) that is not on this machine. Default false. */
  readonly allowInsecureRequests?: boolean;
  /** How the client authenticates with a secret. Default: Basic when the issuer supports it, else post. */
  readonly clientAuthMethod?: "client_secret_basic" | "client_secret_post";
}

/**
 * A bearer token source that fetches, caches and renews OIDC access tokens. Call it for the
 * current access token; pass it as `createConfigClient({ token: provider })`.
 *
 * It rejects with a `TokenProviderError` (from `openshell-config`) when no token can be had: the
 * issuer refused (`transient` false) or stayed unreachable through the retries (`transient` true).
 * No secret (client secret, refresh token, access token) appears in its errors, their causes, or
 * the provider's own `toString()` and JSON.
 */
export interface OidcTokenProvider {
  /** The current access token, fetched or renewed first when needed. */
  (): Promise<string>;
  /**
   * Drops the cached access token, so that the next call fetches a new one (e.g. after the
   * gateway answered UNAUTHENTICATED). Never more often than once per `retry.cooldownMs`.
   */
  invalidate(): void;
  /** When the cached access token expires; undefined with no token, or a token without `expires_in`. */
  readonly expiresAt: Date | undefined;
}
