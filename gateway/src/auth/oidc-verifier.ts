// Validates OIDC bearer tokens (JWTs) for `--oidc-issuer` and `--oidc-audience`: discovers the
// issuer in the background (retrying with backoff while it is unreachable), then verifies each
// token's signature against the issuer's JWKS (fetched and cached by jose, with its cooldown),
// its issuer, audience and expiry, and maps its claims to a principal.
//
// Errors carry a short reason and never the token; nothing here logs a token or its claims.

import { Code, ConnectError } from "@connectrpc/connect";
import { createRemoteJWKSet, customFetch, jwtVerify, type JWSHeaderParameters, type JWTVerifyGetKey } from "jose";
import type { Logger } from "../observability/logger.js";
import { boundedFetch, discoverIssuer } from "./oidc-discovery.js";
import { DEFAULT_OIDC_ROLE_MAPPING, principalFromClaims, type OidcRoleMapping } from "./oidc-roles.js";
import type { Principal } from "./principal.js";

export interface OidcVerifierOptions {
  /** The issuer, exactly as its tokens' `iss` and its discovery document name it. */
  readonly issuer: string;
  /** The `aud` every token must carry. */
  readonly audience: string;
  readonly roles?: OidcRoleMapping;
  readonly logger: Logger;
  /** Bound on each discovery and JWKS fetch. Default 5 s. */
  readonly fetchTimeoutMs?: number;
  /**
   * After a JWKS fetch, a token with an unknown key id fetches the keys again only this much
   * later (a stream of forged key ids costs the issuer one request per period). Default 30 s.
   */
  readonly jwksCooldownMs?: number;
  /** Discovery retry delays: the first, doubling up to the last. Default 1 s to 60 s. */
  readonly retryDelayMs?: { readonly first: number; readonly max: number };
}

export interface OidcVerifier {
  /**
   * The principal of a valid token. Throws ConnectError: UNAUTHENTICATED for an invalid token,
   * PERMISSION_DENIED for a valid one that grants no role, UNAVAILABLE while the issuer cannot be
   * reached.
   */
  verify(token: string): Promise<Principal>;
  /** Resolves once discovery has succeeded. */
  readonly ready: Promise<void>;
  /** Resolves once the first discovery attempt is over, whether it succeeded or not. */
  readonly firstAttempt: Promise<void>;
  /** Stops background discovery. */
  close(): void;
}

/** Message of UNAVAILABLE while the issuer's discovery document or keys cannot be fetched. */
export const OIDC_UNREACHABLE = "OIDC issuer not reachable";

/** Asymmetric signatures only: never `none`, never HS* (a shared secret the issuer's JWKS cannot hold). */
export const OIDC_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];
/** Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds. */
const CLOCK_TOLERANCE_S = 30;
/** Longer tokens are refused before parsing. Real access tokens are 1-4 KiB. */
const MAX_TOKEN_LENGTH = 16 * 1024;
/** Keys are re-fetched after this long even when every `kid` is known. */
const JWKS_MAX_AGE_MS = 10 * 60_000;

export function createOidcVerifier(options: OidcVerifierOptions): OidcVerifier {
  const { issuer, audience, logger } = options;
  const roles = options.roles ?? DEFAULT_OIDC_ROLE_MAPPING;
  const timeoutMs = options.fetchTimeoutMs ?? 5_000;
  const retry = options.retryDelayMs ?? { first: 1_000, max: 60_000 };
  let keys: JWTVerifyGetKey | undefined;
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  const discover = async (attempt: number, delayMs: number): Promise<void> => {
    try {
      const found = await discoverIssuer(issuer, timeoutMs);
      if (closed) return;
      const remote = createRemoteJWKSet(found.jwksUri, {
        timeoutDuration: timeoutMs,
        cooldownDuration: options.jwksCooldownMs ?? 30_000,
        cacheMaxAge: JWKS_MAX_AGE_MS,
        [customFetch]: (url, init) => boundedFetch(url, init),
      });
      keys = (header: JWSHeaderParameters) => remote(header);
      logger.info({ issuer, jwksUri: found.jwksUri.href, audience }, "OIDC issuer discovered");
      markReady();
    } catch (err) {
      if (closed) return;
      const reason = err instanceof Error ? err.message : String(err);
      logger.warn({ issuer, attempt, retryInMs: delayMs, reason }, `OIDC discovery failed; tokens of this issuer get UNAVAILABLE until it succeeds`);
      // Jitter keeps replicas restarted together from retrying in step.
      const wait = Math.round(delayMs * (0.8 + Math.random() * 0.4));
      timer = setTimeout(() => void discover(attempt + 1, Math.min(delayMs * 2, retry.max)), wait);
      timer.unref();
    }
  };
  const firstAttempt = discover(1, retry.first);

  return {
    ready,
    firstAttempt,
    close() {
      closed = true;
      clearTimeout(timer);
    },
    async verify(token) {
      if (token.length > MAX_TOKEN_LENGTH) throw invalid("malformed");
      if (keys === undefined) throw new ConnectError(OIDC_UNREACHABLE, Code.Unavailable);
      let claims: Record<string, unknown>;
      try {
        ({ payload: claims } = await jwtVerify(token, keys, {
          issuer,
          audience,
          algorithms: OIDC_ALGORITHMS,
          clockTolerance: CLOCK_TOLERANCE_S,
          requiredClaims: ["exp", "sub"],
        }));
      } catch (err) {
        const mapped = fromJoseError(err);
        // The reason only: jose's claim errors carry the token's payload, which stays out of logs.
        logger.debug({ reason: mapped.rawMessage, code: Code[mapped.code] }, "OIDC token refused");
        throw mapped;
      }
      const outcome = principalFromClaims(claims, roles);
      if (outcome.ok) return outcome.principal;
      if (outcome.code === "invalid") throw invalid(outcome.reason);
      throw new ConnectError(outcome.reason, Code.PermissionDenied);
    },
  };
}

function invalid(reason: string): ConnectError {
  return new ConnectError(`invalid OIDC token: ${reason}`, Code.Unauthenticated);
}

/** A jose failure as the caller sees it: what is wrong with the token, or that the issuer is away. */
function fromJoseError(err: unknown): ConnectError {
  const e = err as { code?: unknown; claim?: unknown; reason?: unknown };
  switch (e.code) {
    case "ERR_JWT_EXPIRED":
      return invalid("expired");
    case "ERR_JWS_SIGNATURE_VERIFICATION_FAILED":
      return invalid("bad signature");
    case "ERR_JWKS_NO_MATCHING_KEY":
    case "ERR_JWKS_MULTIPLE_MATCHING_KEYS":
      return invalid("signed by a key the issuer does not publish");
    case "ERR_JOSE_ALG_NOT_ALLOWED":
      return invalid("signature algorithm not allowed");
    case "ERR_JWT_CLAIM_VALIDATION_FAILED": {
      const claim = typeof e.claim === "string" ? e.claim : "";
      if (e.reason === "missing") return invalid(`missing claim "${claim}"`);
      if (claim === "iss") return invalid("wrong issuer");
      if (claim === "aud") return invalid("wrong audience");
      if (claim === "nbf") return invalid("not yet valid");
      return invalid(`claim "${claim}" invalid`);
    }
    case "ERR_JWS_INVALID":
    case "ERR_JWT_INVALID":
    case "ERR_JOSE_NOT_SUPPORTED":
    case "ERR_JWK_INVALID":
      return invalid("malformed");
    default:
      // ERR_JWKS_TIMEOUT, ERR_JWKS_INVALID, a failed fetch: the keys could not be had.
      return new ConnectError(OIDC_UNREACHABLE, Code.Unavailable);
  }
}
