// Shared by the OIDC token provider tests: an issuer per test (closed afterwards), fast retry
// settings, and everything an error or a provider could show a reader, to search for secrets.

import { inspect } from "node:util";
import { afterEach } from "vitest";
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from "jose";
import { startOidcIssuer, type OidcIssuer, type OidcIssuerOptions } from "../support/oidc-issuer.js";

/** Retries fast enough for tests; the cooldown short but measurable. */
export const FAST_RETRY = { retries: 3, minDelayMs: 10, maxDelayMs: 40, cooldownMs: 200 } as const;

const open: OidcIssuer[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((issuer) => issuer.close()));
});

/** An issuer closed after the current test. */
export async function issuerForTest(options?: OidcIssuerOptions): Promise<OidcIssuer> {
  const issuer = await startOidcIssuer(options);
  open.push(issuer);
  return issuer;
}

/** The claims of `jwt` after checking its signature against the issuer's JWKS, its issuer and audience. */
export async function verified(issuer: OidcIssuer, jwt: string, audience: string): Promise<JWTPayload> {
  const jwks = createRemoteJWKSet(new URL(issuer.jwksUri));
  return (await jwtVerify(jwt, jwks, { issuer: issuer.issuer, audience })).payload;
}

/**
 * Every text a reader of `value` could see: String(), JSON, util.inspect with hidden properties,
 * and the same for each error in its cause chain (message and stack included).
 */
export function everythingShownBy(value: unknown): string {
  const parts: string[] = [];
  const seen = new Set<unknown>();
  for (let v = value; v !== undefined && v !== null && !seen.has(v); v = (v as { cause?: unknown }).cause) {
    seen.add(v);
    parts.push(String(v), JSON.stringify(v) ?? "", inspect(v, { depth: 20, showHidden: true, getters: true }));
    if (v instanceof Error) parts.push(v.message, v.stack ?? "");
  }
  return parts.join("\n");
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `date` has passed (plus a margin for timer granularity). */
export async function sleepUntil(date: Date | number, marginMs = 20): Promise<void> {
  const wait = (typeof date === "number" ? date : date.getTime()) - Date.now() + marginMs;
  if (wait > 0) await sleep(wait);
}
