// The test OIDC issuer itself (test/support/oidc-issuer.ts), which the SDK, CLI and gateway tests
// rely on: its spoiled tokens fail verification for the reason they are named after, its refresh
// tokens work once, and it keeps its own bounds.

import { describe, expect, it } from "vitest";
import { createRemoteJWKSet, jwtVerify } from "jose";
import { issuerForTest } from "./oidc-helpers.js";

const form = { "content-type": "application/x-www-form-urlencoded" };

describe("the test OIDC issuer", () => {
  it("mints tokens that verify, and spoiled ones that fail for the named reason", async () => {
    const issuer = await issuerForTest({ alg: "RS256", audience: "openshell" });
    const check = async (jwt: string) => {
      // A fresh key set each time: jose caches what it fetched, and rotateKeys() is checked below.
      const jwks = createRemoteJWKSet(new URL(issuer.jwksUri));
      try {
        return (await jwtVerify(jwt, jwks, { issuer: issuer.issuer, audience: "openshell" })).payload;
      } catch (err) {
        return (err as { code: string }).code;
      }
    };
    expect(await check(await issuer.mintToken({ roles: ["user"] }))).toMatchObject({ sub: "user-1", roles: ["user"] });
    expect(await check(await issuer.mintToken({}, { expired: true }))).toBe("ERR_JWT_EXPIRED");
    expect(await check(await issuer.mintToken({}, { wrongKey: true }))).toBe("ERR_JWS_SIGNATURE_VERIFICATION_FAILED");
    expect(await check(await issuer.mintToken({}, { issuer: "https://elsewhere.example" }))).toBe("ERR_JWT_CLAIM_VALIDATION_FAILED");
    expect(await check(await issuer.mintToken({}, { audience: "another-api" }))).toBe("ERR_JWT_CLAIM_VALIDATION_FAILED");
    const before = await issuer.mintToken();
    await issuer.rotateKeys();
    expect(await check(before)).toBe("ERR_JWKS_NO_MATCHING_KEY");
  });

  it("accepts a refresh token once, refuses public clients the client credentials grant, and bounds request bodies", async () => {
    const issuer = await issuerForTest({ clients: { cli: {} } });
    const { refreshToken } = await issuer.createSession({ clientId: "cli" });
    const refresh = () =>
      fetch(issuer.tokenEndpoint, { method: "POST", headers: form, body: new URLSearchParams({ grant_type: "refresh_token", client_id: "cli", refresh_token: refreshToken }) });
    expect((await refresh()).status).toBe(200);
    const reused = await refresh();
    expect([reused.status, await reused.json()]).toEqual([400, { error: "invalid_grant", error_description: "refresh token already used" }]);
    expect(issuer.reusedRefreshTokens).toBe(1);
    const cc = await fetch(issuer.tokenEndpoint, { method: "POST", headers: form, body: "grant_type=client_credentials&client_id=cli" });
    expect([cc.status, ((await cc.json()) as { error: string }).error]).toEqual([400, "unauthorized_client"]);
    const big = await fetch(issuer.tokenEndpoint, { method: "POST", headers: form, body: `grant_type=x&pad=${"a".repeat(17 * 1024)}` });
    expect(big.status).toBe(413);
    expect(issuer.tokenRequests.map((r) => r.status)).toEqual([200, 400, 400, 413]);
    expect(JSON.stringify(issuer.tokenRequests)).not.toContain(refreshToken);
  });
});
