// The test OIDC issuer's signing keys and JWTs (see oidc-issuer.ts for the server): one current
// key pair published in the JWKS, access tokens signed with it, and tokens minted on purpose for
// gateway tests (expired, forged with an unpublished key, another issuer, another audience).

import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload, type CryptoKey } from "jose";
import { randomUUID } from "node:crypto";

/** The JWS algorithms the test issuer signs with. */
export type IssuerAlg = "ES256" | "RS256";

/** How `mintToken` should spoil (or not) the token it makes. */
export interface MintOptions {
  /** `exp` in the past (by the issuer's clock). */
  readonly expired?: boolean;
  /** Signed with a fresh key that the JWKS does not publish, under the same `kid`: a forged signature. */
  readonly wrongKey?: boolean;
  /** `iss` to put in the token instead of the issuer's own. */
  readonly issuer?: string;
  /** `aud` to put in the token; default `options.audience` of the issuer, else "openshell". */
  readonly audience?: string | string[];
  /** Lifetime; default the issuer's `expiresInS` (or 300 s when that is null). */
  readonly expiresInS?: number;
}

interface SigningKey {
  readonly kid: string;
  readonly privateKey: CryptoKey;
  readonly publicJwk: JWK;
}

/** The issuer's key ring: the current signing key, and the JWKS document that publishes it. */
export interface IssuerKeys {
  readonly alg: IssuerAlg;
  /** The JWKS document served at /jwks (public keys only). */
  jwks(): { keys: JWK[] };
  /** Signs `claims` with the current key (or, `wrongKey`, with an unpublished one). */
  sign(claims: JWTPayload, options?: { wrongKey?: boolean }): Promise<string>;
  /** Replaces the signing key; tokens signed before no longer verify against the JWKS. */
  rotate(): Promise<void>;
}

async function newKey(alg: IssuerAlg, kid: string = randomUUID()): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return { kid, privateKey, publicJwk };
}

/** Creates the key ring with one key of `alg`. */
export async function createIssuerKeys(alg: IssuerAlg): Promise<IssuerKeys> {
  let current = await newKey(alg);
  return {
    alg,
    jwks: () => ({ keys: [current.publicJwk] }),
    async sign(claims, options = {}) {
      // The forger knows the published kid but not the private key.
      const key = options.wrongKey ? (await newKey(alg, current.kid)).privateKey : current.privateKey;
      return new SignJWT(claims).setProtectedHeader({ alg, kid: current.kid, typ: "at+jwt" }).sign(key);
    },
    async rotate() {
      current = await newKey(alg);
    },
  };
}
