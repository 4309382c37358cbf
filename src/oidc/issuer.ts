// Talking to one OIDC issuer with oauth4webapi: the issuer URL check (https, or http on this
// machine), discovery (validated and cached), and one token request whose outcome becomes either
// the tokens or a TokenProviderError that says whether trying again could help. No secret reaches
// an error: causes go through the provider's redactor.

import {
  allowInsecureRequests,
  customFetch,
  discoveryRequest,
  processDiscoveryResponse,
  ResponseBodyError,
  WWWAuthenticateChallengeError,
  type AuthorizationServer,
  type TokenEndpointResponse,
  JSON_ATTRIBUTE_COMPARISON,
} from "oauth4webapi";
import { InsecureTransportError, InvalidArgumentError, TokenProviderError } from "../errors.js";
import { isLoopbackHost } from "../auth.js";
import { seconds, withRetryAfter } from "./backoff.js";
import { boundedFetch, BodyTooLarge, httpFailureIn, isTransientStatus, retryAfterMs } from "./http.js";
import type { OidcCommonOptions } from "./options.js";
import type { Redactor } from "./redact.js";

/** What a successful token request gave. */
export interface IssuedTokens {
  readonly accessToken: string;
  readonly refreshToken: string | undefined;
  /** When the access token expires (from `expires_in`, counted from when the request was sent). */
  readonly expiresAt: number | undefined;
  readonly lifetimeMs: number | undefined;
}

/** The oauth4webapi request options for one request: the bounded fetch, the signal, http allowed or not. */
export interface RequestOptions {
  readonly signal: AbortSignal;
  readonly [customFetch]: ReturnType<typeof boundedFetch>;
  readonly [allowInsecureRequests]: boolean;
}

export interface IssuerClient {
  readonly issuer: URL;
  /** The discovered metadata (fetched once, then cached). */
  discover(signal: AbortSignal, timeoutMs: number): Promise<AuthorizationServer>;
  /** Sends one token request with `send` and reads its answer with `read`. */
  token(
    as: AuthorizationServer,
    signal: AbortSignal,
    timeoutMs: number,
    send: (options: RequestOptions) => Promise<Response>,
    read: (response: Response) => Promise<TokenEndpointResponse>,
  ): Promise<IssuedTokens>;
}

/** Checks the issuer URL now (InvalidArgumentError, InsecureTransportError) and returns its client. */
export function createIssuerClient(options: OidcCommonOptions, redactor: Redactor): IssuerClient {
  const issuer = parseUrl(options.issuer, "issuer");
  if (issuer.search !== "" || issuer.hash !== "") {
    throw new InvalidArgumentError(`issuer ${options.issuer} must not have a query or fragment`, { field: "issuer" });
  }
  const insecureIssuer = checkScheme(issuer, options.allowInsecureRequests === true);
  if (insecureIssuer === "refused") {
    throw new InsecureTransportError(
      `refusing to send OIDC credentials over plain http to ${issuer.host}; use https, or set allowInsecureRequests: true`,
    );
  }
  const fetch = boundedFetch(options.fetch);
  const discoveryUrl = `${issuer.href.replace(/\/$/, "")}/.well-known/openid-configuration`;
  let discovered: AuthorizationServer | undefined;
  let tokenEndpoint: { url: URL; insecure: boolean } | undefined;

  const unreachable = (what: string, err: unknown, timeoutMs: number) => {
    const failure = httpFailureIn(err);
    if (failure instanceof BodyTooLarge) return new TokenProviderError(`${what} failed: ${failure.message}`, { transient: false });
    const why = failure?.timedOut ? `no answer within ${seconds(timeoutMs)}` : redactor.text(describe(failure?.cause ?? err));
    return new TokenProviderError(`${what} failed: ${why}`, { transient: true, cause: redactor.cause(failure?.cause ?? err) });
  };

  return {
    issuer,
    async discover(signal, timeoutMs) {
      if (discovered !== undefined) return discovered;
      const what = `OIDC discovery at ${discoveryUrl}`;
      let response: Response;
      try {
        response = await discoveryRequest(issuer, { signal, [customFetch]: fetch, [allowInsecureRequests]: insecureIssuer === "allowed" });
      } catch (err) {
        throw httpFailureIn(err) ? unreachable(what, err, timeoutMs) : unusable(what, err, redactor);
      }
      if (isTransientStatus(response.status)) throw await busy(what, response);
      let as: AuthorizationServer;
      try {
        as = await processDiscoveryResponse(issuer, response);
      } catch (err) {
        if (httpFailureIn(err)) throw unreachable(what, err, timeoutMs);
        if ((err as { code?: unknown }).code === JSON_ATTRIBUTE_COMPARISON) {
          const named = (err as { cause?: { body?: { issuer?: unknown } } }).cause?.body?.issuer;
          throw new TokenProviderError(
            `${what} refused: the document names issuer ${redactor.text(oneLine(String(named)))}, not the configured ${issuer.href}`,
            { transient: false },
          );
        }
        if (response.status !== 200) throw new TokenProviderError(`${what} failed: HTTP ${response.status}`, { status: response.status, transient: false });
        throw unusable(what, err, redactor);
      }
      const endpoint = typeof as.token_endpoint === "string" ? URL.canParse(as.token_endpoint) && new URL(as.token_endpoint) : undefined;
      if (!endpoint) throw new TokenProviderError(`${what} refused: the document has no valid token_endpoint`, { transient: false });
      const scheme = checkScheme(endpoint, options.allowInsecureRequests === true);
      if (scheme === "refused") {
        throw new TokenProviderError(
          `${what} refused: its token endpoint ${endpoint.origin} is plain http on another host; use https, or set allowInsecureRequests: true`,
          { transient: false },
        );
      }
      tokenEndpoint = { url: endpoint, insecure: scheme === "allowed" };
      discovered = as;
      return as;
    },
    async token(as, signal, timeoutMs, send, read) {
      const endpoint = tokenEndpoint!;
      const what = `OIDC token request to ${endpoint.url.origin}${endpoint.url.pathname}`;
      const sentAt = Date.now();
      let response: Response;
      try {
        response = await send({ signal, [customFetch]: fetch, [allowInsecureRequests]: endpoint.insecure });
      } catch (err) {
        throw httpFailureIn(err) ? unreachable(what, err, timeoutMs) : unusable(what, err, redactor);
      }
      if (isTransientStatus(response.status)) throw await busy(what, response);
      let answer: TokenEndpointResponse;
      try {
        answer = await read(response);
      } catch (err) {
        if (httpFailureIn(err)) throw unreachable(what, err, timeoutMs);
        throw await refusal(what, response, err, redactor);
      }
      if (answer.token_type !== "bearer") {
        throw new TokenProviderError(`${what}: token_type ${redactor.text(oneLine(answer.token_type))} is not supported (bearer only)`, {
          transient: false,
        });
      }
      redactor.add(answer.access_token);
      redactor.add(answer.refresh_token);
      const lifetimeMs = answer.expires_in === undefined ? undefined : answer.expires_in * 1000;
      return {
        accessToken: answer.access_token,
        refreshToken: answer.refresh_token,
        expiresAt: lifetimeMs === undefined ? undefined : sentAt + lifetimeMs,
        lifetimeMs,
      };
    },
  };
}

function parseUrl(value: unknown, field: string): URL {
  if (typeof value !== "string" || !URL.canParse(value)) {
    throw new InvalidArgumentError(`${field} must be an absolute URL, got ${typeof value === "string" ? JSON.stringify(value) : typeof value}`, { field });
  }
  const url = new URL(value);
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new InvalidArgumentError(`${field} must be an https URL, got ${url.protocol}`, { field });
  }
  return url;
}

/** "https", "allowed" (http that may be used) or "refused" (http to another host). */
function checkScheme(url: URL, allowInsecure: boolean): "https" | "allowed" | "refused" {
  if (url.protocol === "https:") return "https";
  return allowInsecure || isLoopbackHost(url.hostname) ? "allowed" : "refused";
}

// A 5xx, 408 or 429: worth another try, after Retry-After when it names one.
async function busy(what: string, response: Response): Promise<TokenProviderError> {
  await response.body?.cancel().catch(() => {});
  const err = new TokenProviderError(`${what} failed: HTTP ${response.status}`, { status: response.status, transient: true });
  return withRetryAfter(err, retryAfterMs(response));
}

// A 4xx (or an answer that is not a token answer): the same request would get the same answer.
async function refusal(what: string, response: Response, err: unknown, redactor: Redactor): Promise<TokenProviderError> {
  let oauthError: string | undefined;
  let description: string | undefined;
  if (err instanceof ResponseBodyError) {
    oauthError = err.error;
    description = err.error_description;
  } else if (err instanceof WWWAuthenticateChallengeError) {
    // A 401 with a challenge: oauth4webapi stops at the header; the OAuth error is in the body.
    const body = (await err.response.json().catch(() => undefined)) as { error?: unknown; error_description?: unknown } | undefined;
    oauthError = typeof body?.error === "string" ? body.error : (err.cause[0]?.parameters.error ?? undefined);
    description = typeof body?.error_description === "string" ? body.error_description : undefined;
  } else if (response.status === 200) {
    return unusable(what.replace("request to", "answer from"), err, redactor);
  }
  const code = oauthError === undefined ? `HTTP ${response.status}` : redactor.text(oneLine(oauthError, 64));
  const detail = description === undefined ? "" : ` (${redactor.text(oneLine(description))})`;
  return new TokenProviderError(`${what} refused: ${code}${detail}`, {
    status: response.status,
    ...(oauthError === undefined ? {} : { oauthError: redactor.text(oneLine(oauthError, 64)) }),
    transient: false,
  });
}

function unusable(what: string, err: unknown, redactor: Redactor): TokenProviderError {
  return new TokenProviderError(`${what} failed: ${redactor.text(describe(err))}`, { transient: false, cause: redactor.cause(err) });
}

function describe(err: unknown): string {
  const e = err as { message?: unknown; cause?: { message?: unknown; code?: unknown } } | undefined;
  const message = typeof e?.message === "string" ? e.message : String(err);
  // fetch's TypeError says only "fetch failed"; the reason (ECONNREFUSED, a DNS failure) is its cause.
  const inner = typeof e?.cause?.message === "string" && message === "fetch failed" ? `: ${e.cause.message}` : "";
  return oneLine(`${message}${inner}`);
}

/** Issuer-controlled text as one bounded line. */
function oneLine(text: string, max = 200): string {
  const flat = text.replace(/[\u0000-\u001f\u007f\s]+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
