// oidcClientCredentials against a real OIDC issuer over real HTTP (test/support/oidc-issuer.ts):
// discovery, caching and renewal, single flight, retries, Retry-After and the cooldown. Refusals,
// secrets and the ConfigClient wiring are in oidc-refusals.test.ts.

import { describe, expect, it } from "vitest";
import { TokenProviderError } from "../../src/index.js";
import { oidcClientCredentials, type OidcClientCredentialsOptions } from "../../src/oidc.js";
import type { OidcIssuer } from "../support/oidc-issuer.js";
import { rejectionOf } from "./helpers.js";
import { FAST_RETRY, issuerForTest, sleep, sleepUntil, verified } from "./oidc-helpers.js";

const SECRET = "svc-secret-0123456789";

function provider(issuer: OidcIssuer, options: Partial<OidcClientCredentialsOptions> = {}) {
  return oidcClientCredentials({ issuer: issuer.issuer, clientId: "svc", clientSecret: SECRET, retry: FAST_RETRY, ...options });
}

const clients = { svc: { secret: SECRET, claims: { roles: ["admin"] } } };

describe("oidcClientCredentials: caching, renewal and single flight", () => {
  it("100 concurrent calls cause one discovery and one token request, and all get the same verified JWT", async () => {
    const issuer = await issuerForTest({ clients });
    const token = provider(issuer, { audience: "openshell-gateway", scopes: ["openshell:admin", "openshell:read"] });
    const tokens = await Promise.all(Array.from({ length: 100 }, () => token()));
    expect(issuer.counts).toEqual({ discovery: 1, jwks: 0, token: 1 });
    expect(new Set(tokens).size).toBe(1);
    const claims = await verified(issuer, tokens[0]!, "openshell-gateway");
    expect(claims).toMatchObject({ sub: "svc", scope: "openshell:admin openshell:read", roles: ["admin"] });
    expect(issuer.tokenRequests).toEqual([
      expect.objectContaining({ grant: "client_credentials", clientId: "svc", auth: "basic", audience: "openshell-gateway", status: 200 }),
    ]);
    expect(token.expiresAt!.getTime()).toBeGreaterThan(Date.now() + 250_000);
  });

  it("a cached token is handed out without any request until its renewal time", async () => {
    const issuer = await issuerForTest({ clients });
    const token = provider(issuer);
    const first = await token();
    for (let i = 0; i < 20; i++) expect(await token()).toBe(first);
    expect(issuer.counts.token).toBe(1);
  });

  it("a token is renewed renewBeforeMs before it expires, without a second discovery", async () => {
    const issuer = await issuerForTest({ clients, expiresInS: 3 });
    const token = provider(issuer, { renewBeforeMs: 1_000 });
    const first = await token();
    const expiresAt = token.expiresAt!;
    expect(await token()).toBe(first);
    await sleepUntil(expiresAt.getTime() - 1_000);
    const second = await token();
    expect(second).not.toBe(first);
    expect(issuer.counts).toEqual({ discovery: 1, jwks: 0, token: 2 });
    expect(token.expiresAt!.getTime()).toBeGreaterThan(expiresAt.getTime());
  });

  it("renews no earlier than half-way through a short lifetime, however large renewBeforeMs is", async () => {
    const issuer = await issuerForTest({ clients, expiresInS: 2 });
    const token = provider(issuer); // default renewBeforeMs 60 s, more than the whole lifetime
    const first = await token();
    expect(await token()).toBe(first);
    expect(issuer.counts.token).toBe(1);
    await sleepUntil(token.expiresAt!.getTime() - 1_000);
    expect(await token()).not.toBe(first);
    expect(issuer.counts.token).toBe(2);
  });

  it("a token answered without expires_in is used until invalidate(), then fetched once for all callers", async () => {
    const issuer = await issuerForTest({ clients, expiresInS: null });
    const token = provider(issuer);
    const first = await token();
    expect(token.expiresAt).toBeUndefined();
    for (let i = 0; i < 10; i++) expect(await token()).toBe(first);
    token.invalidate();
    const again = await Promise.all(Array.from({ length: 100 }, () => token()));
    expect(new Set(again).size).toBe(1);
    expect(again[0]).not.toBe(first);
    expect(issuer.counts).toEqual({ discovery: 1, jwks: 0, token: 2 });
  });

  it("invalidate() in a tight loop asks the issuer at most once per cooldown", async () => {
    const issuer = await issuerForTest({ clients });
    const token = provider(issuer, { retry: { ...FAST_RETRY, cooldownMs: 200 } });
    await token();
    const end = Date.now() + 700;
    let calls = 0;
    while (Date.now() < end) {
      token.invalidate();
      await token();
      calls++;
    }
    const requests = issuer.tokenRequests.map((r) => r.at);
    for (let i = 1; i < requests.length; i++) expect(requests[i]! - requests[i - 1]!).toBeGreaterThanOrEqual(190);
    expect(requests.length).toBeLessThanOrEqual(1 + Math.ceil(700 / 200) + 1);
    expect(calls).toBe(requests.length - 1);
  });
});

describe("oidcClientCredentials: transient failures", () => {
  it("503s are retried with backoff, and the call then succeeds", async () => {
    const issuer = await issuerForTest({ clients });
    issuer.failNext("503", { times: 2 });
    const token = provider(issuer);
    await verified(issuer, await token(), "svc");
    expect(issuer.tokenRequests.map((r) => r.status)).toEqual([503, 503, 200]);
    expect(issuer.counts.discovery).toBe(1);
  });

  it("100 concurrent callers during retries share one sequence of attempts", async () => {
    const issuer = await issuerForTest({ clients });
    issuer.failNext("503", { times: 2 });
    issuer.failNext("503", { endpoint: "discovery" });
    const token = provider(issuer);
    const tokens = await Promise.all(Array.from({ length: 100 }, () => token()));
    expect(new Set(tokens).size).toBe(1);
    expect(issuer.counts).toEqual({ discovery: 2, jwks: 0, token: 3 });
  });

  it("a reset connection and a hanging issuer (after attemptTimeoutMs) are retried", async () => {
    const issuer = await issuerForTest({ clients });
    issuer.failNext("reset");
    issuer.failNext("hang");
    const token = provider(issuer, { retry: { ...FAST_RETRY, attemptTimeoutMs: 800 } });
    await verified(issuer, await token(), "svc");
    expect(issuer.tokenRequests.map((r) => r.injected)).toEqual(["reset", "hang", undefined]);
  });

  it("a 429 is retried no sooner than its Retry-After", async () => {
    const issuer = await issuerForTest({ clients });
    issuer.failNext("429", { retryAfterS: 1 });
    const token = provider(issuer);
    await token();
    const [limited, ok] = issuer.tokenRequests;
    expect([limited!.status, ok!.status]).toEqual([429, 200]);
    expect(ok!.at - limited!.at).toBeGreaterThanOrEqual(990);
  });

  it("a Retry-After beyond maxRetryAfterMs ends the call, and no request is sent before it", async () => {
    const issuer = await issuerForTest({ clients });
    issuer.failNext("429", { retryAfterS: 2 });
    const token = provider(issuer, { retry: { ...FAST_RETRY, maxRetryAfterMs: 500 } });
    const err = (await rejectionOf(token())) as TokenProviderError;
    expect(err).toBeInstanceOf(TokenProviderError);
    expect(err.message).toBe(`OIDC token request to ${issuer.tokenEndpoint} failed: HTTP 429 (1 attempt; the issuer asked to wait 2 s)`);
    expect([err.status, err.transient]).toEqual([429, true]);
    // Calls within the two seconds fail with the same error, without asking.
    await sleep(300);
    expect(await rejectionOf(token())).toBe(err);
    expect(issuer.counts.token).toBe(1);
    // From the first request's arrival plus 2 s on, the provider asks again (its clock started a
    // little later, when the answer came back: calls until then still get the same error).
    await sleepUntil(issuer.tokenRequests[0]!.at + 2_000);
    for (let tries = 0; ; tries++) {
      const outcome = await token().then(() => undefined, (e: unknown) => e);
      if (outcome === undefined) break;
      expect(outcome).toBe(err);
      expect(tries).toBeLessThan(100);
      await sleep(20);
    }
    const [first, second] = issuer.tokenRequests;
    expect(issuer.counts.token).toBe(2);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(2_000);
  });

  it("after the retries run out, one transient error; calls in the cooldown fail at once without a request; then a fresh attempt", async () => {
    const issuer = await issuerForTest({ clients });
    issuer.failNext("503", { times: 4 });
    const token = provider(issuer, { retry: { ...FAST_RETRY, retries: 2, cooldownMs: 300 } });
    const err = (await rejectionOf(token())) as TokenProviderError;
    expect(err.message).toBe(`OIDC token request to ${issuer.tokenEndpoint} failed: HTTP 503 (3 attempts)`);
    expect([err.code, err.status, err.oauthError, err.transient]).toEqual(["token-provider", 503, undefined, true]);
    expect(issuer.counts.token).toBe(3);
    const during = await Promise.all(Array.from({ length: 50 }, () => rejectionOf(token())));
    expect(during.every((e) => e === err)).toBe(true);
    expect(issuer.counts.token).toBe(3);
    await sleep(320);
    // The fourth 503, then success: a fresh sequence of attempts.
    await token();
    expect(issuer.tokenRequests.map((r) => r.status)).toEqual([503, 503, 503, 503, 200]);
  });

  it("an unreachable issuer ends in one transient error naming the discovery URL", async () => {
    const issuer = await issuerForTest({ clients });
    const url = issuer.issuer;
    await issuer.close();
    const token = oidcClientCredentials({ issuer: url, clientId: "svc", clientSecret: SECRET, retry: { ...FAST_RETRY, retries: 1 } });
    const err = (await rejectionOf(token())) as TokenProviderError;
    expect(err.message).toMatch(
      new RegExp(`^OIDC discovery at ${url}/\\.well-known/openid-configuration failed: fetch failed: .*ECONNREFUSED.* \\(2 attempts\\)$`),
    );
    expect(err.transient).toBe(true);
  });
});
