// oidcRefreshToken against a real OIDC issuer whose refresh tokens rotate (each one works once):
// a stored session used as it is, refreshed before expiry, every rotation handed to onRotate and
// the spent refresh token never presented again.

import { describe, expect, it } from "vitest";
import { TokenProviderError } from "../../src/index.js";
import { oidcRefreshToken, type OidcRefreshTokenOptions, type OidcRotatedTokens } from "../../src/oidc.js";
import type { OidcIssuer, OidcSession } from "../support/oidc-issuer.js";
import { rejectionOf } from "./helpers.js";
import { FAST_RETRY, issuerForTest, sleep, sleepUntil, verified } from "./oidc-helpers.js";

const clients = { cli: {}, confidential: { secret: "confidential-secret-42" } };

function session(issuer: OidcIssuer, s: OidcSession, options: Partial<OidcRefreshTokenOptions> = {}) {
  return oidcRefreshToken({ issuer: issuer.issuer, clientId: "cli", ...s, retry: FAST_RETRY, ...options });
}

/** A session whose access token has expired, as a CLI finds it the next morning. */
async function expiredSession(issuer: OidcIssuer, clientId = "cli"): Promise<OidcSession> {
  const s = await issuer.createSession({ clientId, audience: "openshell", scope: "openid openshell:read" });
  return { ...s, expiresAt: new Date(Date.now() - 60_000) };
}

describe("oidcRefreshToken", () => {
  it("a stored access token that is still valid is used without any request, not even discovery", async () => {
    const issuer = await issuerForTest({ clients });
    const stored = await issuer.createSession({ clientId: "cli", expiresInS: 600 });
    const token = session(issuer, stored, { onRotate: () => expect.fail("nothing to rotate") });
    for (let i = 0; i < 10; i++) expect(await token()).toBe(stored.accessToken);
    expect(token.expiresAt).toEqual(stored.expiresAt);
    expect(issuer.counts).toEqual({ discovery: 0, jwks: 0, token: 0 });
  });

  it("an expired session is refreshed once for 100 concurrent calls, and onRotate gets the new refresh token first", async () => {
    const issuer = await issuerForTest({ clients });
    const stored = await expiredSession(issuer);
    const events: string[] = [];
    const rotations: OidcRotatedTokens[] = [];
    const token = session(issuer, stored, {
      async onRotate(t) {
        events.push("rotate");
        await sleep(50); // a slow disk: nobody gets the token before it is written
        rotations.push(t);
        events.push("stored");
      },
    });
    const tokens = await Promise.all(Array.from({ length: 100 }, () => token().then((t) => (events.push("token"), t))));
    expect(issuer.counts).toEqual({ discovery: 1, jwks: 0, token: 1 });
    expect(new Set(tokens).size).toBe(1);
    expect(events.slice(0, 3)).toEqual(["rotate", "stored", "token"]);
    expect(rotations).toHaveLength(1);
    const [rotated] = rotations;
    expect(rotated!.accessToken).toBe(tokens[0]);
    expect(rotated!.refreshToken).not.toBe(stored.refreshToken);
    expect(rotated!.expiresAt!.getTime()).toBe(token.expiresAt!.getTime());
    expect(await verified(issuer, tokens[0]!, "openshell")).toMatchObject({ sub: "user-1", scope: "openid openshell:read" });
    expect(issuer.tokenRequests).toEqual([expect.objectContaining({ grant: "refresh_token", clientId: "cli", auth: "none", status: 200 })]);
  });

  it("every later refresh presents the newest refresh token; a spent one is never reused", async () => {
    const issuer = await issuerForTest({ clients, expiresInS: 2 });
    const stored = await expiredSession(issuer);
    const rotated: string[] = [];
    const token = session(issuer, stored, { renewBeforeMs: 1_000, onRotate: (t) => void rotated.push(t.refreshToken) });
    const first = await token();
    await sleepUntil(token.expiresAt!.getTime() - 1_000); // renewal time of a 2 s token
    const second = await token();
    token.invalidate(); // the gateway said UNAUTHENTICATED
    const third = await token();
    expect(new Set([first, second, third]).size).toBe(3);
    expect(issuer.tokenRequests.map((r) => [r.grant, r.status])).toEqual([
      ["refresh_token", 200],
      ["refresh_token", 200],
      ["refresh_token", 200],
    ]);
    expect(new Set([stored.refreshToken, ...rotated]).size).toBe(4);
    expect(issuer.reusedRefreshTokens).toBe(0);
    expect(issuer.counts.discovery).toBe(1);
  });

  it("when onRotate throws, the new access token is still returned, the error is reported, and the rotated refresh token is kept", async () => {
    const issuer = await issuerForTest({ clients });
    const stored = await expiredSession(issuer);
    const reported: unknown[] = [];
    let failWrites = true;
    const token = session(issuer, stored, {
      onRotate() {
        if (failWrites) throw new Error("EACCES: permission denied, open 'oidc_token.json.tmp'");
      },
      onRotateError: (err) => reported.push(err),
    });
    const first = await token();
    await verified(issuer, first, "openshell");
    expect(reported).toHaveLength(1);
    expect(token.rotateError).toBe(reported[0]);
    expect(String(token.rotateError)).toContain("EACCES");
    // The next refresh uses the rotated token (kept in memory), and a successful store clears the error.
    failWrites = false;
    await sleep(FAST_RETRY.cooldownMs);
    token.invalidate();
    expect(await token()).not.toBe(first);
    expect(token.rotateError).toBeUndefined();
    expect(issuer.tokenRequests.map((r) => r.status)).toEqual([200, 200]);
    expect(issuer.reusedRefreshTokens).toBe(0);
  });

  it("a spent refresh token is refused as invalid_grant in one line, once, with no retry", async () => {
    const issuer = await issuerForTest({ clients });
    const stored = await expiredSession(issuer);
    await session(issuer, stored)(); // another process used it first
    const token = session(issuer, stored, { onRotate: () => expect.fail("no tokens to rotate") });
    const err = (await rejectionOf(token())) as TokenProviderError;
    expect(err).toBeInstanceOf(TokenProviderError);
    expect(err.message).toBe(`OIDC token request to ${issuer.tokenEndpoint} refused: invalid_grant (refresh token already used)`);
    expect([err.status, err.oauthError, err.transient]).toEqual([400, "invalid_grant", false]);
    expect(issuer.tokenRequests.map((r) => r.status)).toEqual([200, 400]);
    expect(err.message).not.toContain(stored.refreshToken);
  });

  it("transient failures of a refresh are retried, and onRotate runs once", async () => {
    const issuer = await issuerForTest({ clients });
    const stored = await expiredSession(issuer);
    issuer.failNext("503");
    issuer.failNext("reset");
    let rotations = 0;
    const token = session(issuer, stored, { onRotate: () => void rotations++ });
    await verified(issuer, await token(), "openshell");
    expect(issuer.tokenRequests.map((r) => r.status)).toEqual([503, 0, 200]);
    expect(rotations).toBe(1);
  });

  it("when a renewal fails while the stored token is still valid, that token is used meanwhile", async () => {
    const issuer = await issuerForTest({ clients });
    const stored = await issuer.createSession({ clientId: "cli", expiresInS: 30 }); // inside the 60 s renewal window
    issuer.failNext("503", { times: 10 });
    const token = session(issuer, stored, { retry: { ...FAST_RETRY, retries: 1, cooldownMs: 10_000 } });
    expect(await token()).toBe(stored.accessToken);
    expect(issuer.counts.token).toBe(2);
    expect(await token()).toBe(stored.accessToken); // in the cooldown: no request
    expect(issuer.counts.token).toBe(2);
  });

  it("a confidential client authenticates its refresh with its secret; a stored token without expiresAt is used until invalidate()", async () => {
    const issuer = await issuerForTest({ clients });
    const stored = await issuer.createSession({ clientId: "confidential" });
    const token = oidcRefreshToken({
      issuer: issuer.issuer,
      clientId: "confidential",
      clientSecret: "confidential-secret-42",
      refreshToken: stored.refreshToken,
      accessToken: stored.accessToken,
    });
    expect(await token()).toBe(stored.accessToken);
    expect(token.expiresAt).toBeUndefined();
    token.invalidate();
    expect(await token()).not.toBe(stored.accessToken);
    expect(issuer.tokenRequests).toEqual([expect.objectContaining({ clientId: "confidential", auth: "basic", status: 200 })]);
  });

  it("a discovery document naming another issuer is refused before the refresh token is sent", async () => {
    const issuer = await issuerForTest({ clients });
    const stored = await expiredSession(issuer);
    issuer.advertisedIssuer = `${issuer.issuer}/other`;
    const err = (await rejectionOf(session(issuer, stored)())) as TokenProviderError;
    expect(err.message).toContain(`refused: the document names issuer ${issuer.issuer}/other, not the configured ${issuer.issuer}/`);
    expect(issuer.counts.token).toBe(0);
  });
});
