// The types of the test OIDC issuer (oidc-issuer.ts says what it does): its options, its
// handle with knobs and counters, and the records it keeps of token requests.

import type { JWTPayload } from "jose";
import type { IssuerAlg, MintOptions } from "./oidc-issuer-keys.js";

/** A registered OAuth client. */
export interface IssuerClient {
  /** Its secret; none makes it a public client (refresh_token grant only, no authentication). */
  readonly secret?: string;
  /** Claims added to every access token issued to it (e.g. `{ roles: ["admin"] }`). */
  readonly claims?: Record<string, unknown>;
  /** The scopes it may ask for; any when absent. */
  readonly scopes?: readonly string[];
}

export interface OidcIssuerOptions {
  /** Registered clients by id. Default: `{ svc: { secret: "svc-secret" } }`. */
  readonly clients?: Record<string, IssuerClient>;
  /** Signing algorithm. Default ES256. */
  readonly alg?: IssuerAlg;
  /** Access token lifetime in seconds (null: no `expires_in` in answers). Default 300. */
  readonly expiresInS?: number | null;
  /** Claims added to every access token. */
  readonly claims?: Record<string, unknown>;
  /** A path under which the issuer lives, e.g. "/realms/test". Default none. */
  readonly path?: string;
  /** Default audience of `mintToken`. Default "openshell". */
  readonly audience?: string;
}

export type FailureKind = "503" | "429" | "invalid_client" | "hang" | "reset";
export type IssuerEndpoint = "discovery" | "jwks" | "token";

/** One request to /token, as the issuer saw it (secrets never recorded). */
export interface TokenRequestRecord {
  readonly grant: string | undefined;
  clientId: string | undefined;
  auth: "basic" | "post" | "none";
  readonly scope: string | undefined;
  readonly audience: string | undefined;
  /** The HTTP status answered (0 for a hang or reset). */
  status: number;
  /** The injected failure that answered it, if any. */
  readonly injected: FailureKind | undefined;
  /** When it arrived (Date.now()). */
  readonly at: number;
}

export interface OidcSession {
  readonly accessToken: string;
  readonly refreshToken: string;
  readonly expiresAt: Date;
}

export interface OidcIssuer {
  readonly issuer: string;
  readonly tokenEndpoint: string;
  readonly jwksUri: string;
  readonly alg: IssuerAlg;
  expiresInS: number | null;
  clockOffsetS: number;
  advertisedIssuer: string | undefined;
  readonly counts: Record<IssuerEndpoint, number>;
  readonly tokenRequests: TokenRequestRecord[];
  readonly reusedRefreshTokens: number;
  failNext(kind: FailureKind, options?: { times?: number; endpoint?: IssuerEndpoint; retryAfterS?: number }): void;
  registerClient(id: string, client: IssuerClient): void;
  createSession(options: {
    clientId: string;
    sub?: string;
    scope?: string;
    audience?: string;
    claims?: Record<string, unknown>;
    expiresInS?: number;
  }): Promise<OidcSession>;
  mintToken(claims?: JWTPayload, options?: MintOptions): Promise<string>;
  jwks(): { keys: object[] };
  rotateKeys(): Promise<void>;
  close(): Promise<void>;
}
