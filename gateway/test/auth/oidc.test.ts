// OIDC bearer tokens (--oidc-issuer/--oidc-audience) against a real issuer on a loopback port:
// roles decide what a token may do; expired, forged, wrong-issuer and wrong-audience tokens are
// UNAUTHENTICATED with a short reason; no token reaches a log line; an unreachable issuer makes
// its tokens UNAVAILABLE without stopping the gateway; key fetches are bounded.

import { Code } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workspaceScope } from "openshell-config/raw";
import { startOidcIssuer, type OidcIssuer } from "../../../test/support/oidc-issuer.js";
import { parseAuthFile } from "../../src/auth/auth-file.js";
import { createOidcVerifier, OIDC_UNREACHABLE, type OidcVerifier } from "../../src/auth/oidc-verifier.js";
import { policy } from "../rpc/fixtures.js";
import { openShell, rpcFailure as failure } from "../server/harness.js";
import { startTlsTestGateway, type TlsTestGateway } from "../server/tls-gateway.js";

const AUDIENCE = "openshell-gateway";
const OPAQUE = "opaque-admin-token-0123456789";
const auth = parseAuthFile({ tokens: [{ token: OPAQUE, principal: "ops", role: "admin", workspaces: "*" }] });

let issuer: OidcIssuer;
let gw: TlsTestGateway;
/** Every token these tests sent, to check that none reached a log line. */
const sent: string[] = [];

beforeAll(async () => {
  issuer = await startOidcIssuer({ audience: AUDIENCE });
  gw = await startTlsTestGateway({ auth, oidc: (logger) => createOidcVerifier({ issuer: issuer.issuer, audience: AUDIENCE, logger }) });
  await client(OPAQUE).createSandbox({ name: "dev", labels: {}, spec: { policy: policy(), template: { image: "ghcr.io/example/agent:1" } }, workspaceScope: workspaceScope() });
});
afterAll(async () => {
  await gw?.close();
  await issuer?.close();
});

function client(token: string, url = gw.server.url) {
  sent.push(token);
  return openShell(createGrpcTransport({ baseUrl: url, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] }));
}


const update = (token: string, host = "a.example.com") => client(token).updateConfig({ sandbox: "dev", policy: policy({ a: host }), workspaceScope: workspaceScope() });

describe("OIDC bearer tokens", () => {
  it("lets a token with the admin role commit an update", async () => {
    const token = await issuer.mintToken({ sub: "alice", roles: ["openshell-admin"] });
    const res = await update(token);
    expect(res.operation?.operationId).toBeTruthy();
  });

  it("lets a token with the user role read, and refuses it UpdateConfig with PERMISSION_DENIED", async () => {
    const token = await issuer.mintToken({ sub: "bob", scope: "openid openshell:user" });
    expect((await client(token).listSandboxes({ workspaceScope: workspaceScope() })).sandboxes).toHaveLength(1);
    expect(await failure(update(token, "b.example.com"))).toEqual({ code: Code.PermissionDenied, message: "this method requires the admin role" });
  });

  it("refuses a valid token that grants no role with PERMISSION_DENIED", async () => {
    const token = await issuer.mintToken({ sub: "carol", roles: ["viewer"] });
    expect(await failure(client(token).listSandboxes({ workspaceScope: workspaceScope() }))).toEqual({
      code: Code.PermissionDenied,
      message: "the token grants no OpenShell role (admin or user)",
    });
  });

  it("refuses expired, forged, wrong-issuer and wrong-audience tokens with UNAUTHENTICATED and a short reason", async () => {
    const claims = { sub: "mallory", roles: ["openshell-admin"] };
    const cases: [string, Promise<string>][] = [
      ["invalid OIDC token: expired", issuer.mintToken(claims, { expired: true })],
      ["invalid OIDC token: bad signature", issuer.mintToken(claims, { wrongKey: true })],
      ["invalid OIDC token: wrong issuer", issuer.mintToken(claims, { issuer: "https://evil.example.com" })],
      ["invalid OIDC token: wrong audience", issuer.mintToken(claims, { audience: "another-service" })],
    ];
    for (const [message, token] of cases) {
      expect(await failure(update(await token, "evil.example.com")), message).toEqual({ code: Code.Unauthenticated, message });
    }
  });

  it("refuses HS256 tokens (a shared secret) and unsigned ones", async () => {
    const hs = await new SignJWT({ sub: "mallory", roles: ["openshell-admin"] })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer(issuer.issuer)
      .setAudience(AUDIENCE)
      .setExpirationTime("5m")
      .sign(new TextEncoder().encode("a-secret-anyone-could-guess-0123456789"));
    expect(await failure(update(hs))).toEqual({ code: Code.Unauthenticated, message: "invalid OIDC token: signature algorithm not allowed" });
    const payload = Buffer.from(JSON.stringify({ sub: "m", iss: issuer.issuer, aud: AUDIENCE, exp: 4e9, roles: ["openshell-admin"] })).toString("base64url");
    const unsigned = `${Buffer.from('{"alg":"none"}').toString("base64url")}.${payload}.`;
    expect((await failure(update(unsigned))).code).toBe(Code.Unauthenticated);
  });

  it("keeps the auth file's opaque tokens working next to OIDC", async () => {
    expect((await client(OPAQUE).listSandboxes({ workspaceScope: workspaceScope() })).sandboxes).toHaveLength(1);
    expect(await failure(client("not-a-known-token").listSandboxes({ workspaceScope: workspaceScope() }))).toEqual({
      code: Code.Unauthenticated,
      message: "invalid bearer token",
    });
  });

  it("writes no token into any log line, even at debug", () => {
    expect(gw.logs()).toContain("OIDC token refused");
    for (const token of sent) expect(gw.logs()).not.toContain(token);
  });
});

describe("the issuer's keys", () => {
  it("are fetched again for a new signing key, but at most once per cooldown whatever the calls", async () => {
    const rotating = await startOidcIssuer({ audience: AUDIENCE });
    // Long enough for the refused calls below to fit inside it on a loaded machine.
    const cooldownMs = 3_000;
    let verifier: OidcVerifier | undefined;
    const g = await startTlsTestGateway({
      auth,
      oidc: (logger) => (verifier = createOidcVerifier({ issuer: rotating.issuer, audience: AUDIENCE, logger, jwksCooldownMs: cooldownMs })),
    });
    const list = (token: string) => client(token, g.server.url).listSandboxes({ workspaceScope: workspaceScope() });
    try {
      await verifier!.ready;
      // The keys are fetched on the first call, and the cooldown runs from when that fetch ends:
      // somewhere between these two moments.
      const before = Date.now();
      await list(await rotating.mintToken({ sub: "alice", roles: ["openshell-admin"] }));
      const after = Date.now();
      expect(rotating.counts.jwks).toBe(1);
      // A new key within the cooldown: refused without a fetch, however many calls carry it.
      await rotating.rotateKeys();
      const token = await rotating.mintToken({ sub: "alice", roles: ["openshell-admin"] });
      const results = await Promise.all(Array.from({ length: 20 }, () => failure(list(token))));
      expect(new Set(results.map((r) => r.message))).toEqual(new Set(["invalid OIDC token: signed by a key the issuer does not publish"]));
      expect(rotating.counts.jwks).toBe(1);
      // After it, the first call with the new key fetches the keys once and succeeds.
      expect(Date.now() - before, "the refused calls took the whole cooldown").toBeLessThan(cooldownMs);
      await new Promise((resolve) => setTimeout(resolve, after + cooldownMs + 100 - Date.now()));
      await Promise.all(Array.from({ length: 5 }, () => list(token)));
      expect(rotating.counts.jwks).toBe(2);
    } finally {
      await g.close();
      await rotating.close();
    }
  });
});

describe("an OIDC issuer that cannot be reached", () => {
  it("answers UNAVAILABLE while discovery fails, keeps other credentials working, and recovers once it succeeds", async () => {
    const down = await startOidcIssuer({ audience: AUDIENCE });
    down.failNext("503", { endpoint: "discovery", times: 2 });
    let verifier: OidcVerifier | undefined;
    const g = await startTlsTestGateway({
      auth,
      oidc: (logger) => (verifier = createOidcVerifier({ issuer: down.issuer, audience: AUDIENCE, logger, retryDelayMs: { first: 50, max: 100 } })),
    });
    try {
      await verifier!.firstAttempt;
      const token = await down.mintToken({ sub: "alice", roles: ["openshell-admin"] });
      expect(await failure(client(token, g.server.url).listSandboxes({ workspaceScope: workspaceScope() }))).toEqual({
        code: Code.Unavailable,
        message: OIDC_UNREACHABLE,
      });
      expect(await client(OPAQUE, g.server.url).listSandboxes({ workspaceScope: workspaceScope() })).toBeDefined();
      await verifier!.ready;
      expect(await client(token, g.server.url).listSandboxes({ workspaceScope: workspaceScope() })).toBeDefined();
      expect(down.counts.discovery).toBe(3);
      expect(g.logs()).toContain("OIDC discovery failed");
    } finally {
      await g.close();
      await down.close();
    }
  });

  it("never trusts a discovery document that names another issuer", async () => {
    const liar = await startOidcIssuer({ audience: AUDIENCE });
    liar.advertisedIssuer = "https://evil.example.com";
    let verifier: OidcVerifier | undefined;
    const g = await startTlsTestGateway({ auth, oidc: (logger) => (verifier = createOidcVerifier({ issuer: liar.issuer, audience: AUDIENCE, logger })) });
    try {
      await verifier!.firstAttempt;
      const token = await liar.mintToken({ sub: "alice", roles: ["openshell-admin"] });
      expect((await failure(client(token, g.server.url).listSandboxes({ workspaceScope: workspaceScope() }))).code).toBe(Code.Unavailable);
      expect(g.logs()).toContain('names issuer \\"https://evil.example.com\\"');
    } finally {
      await g.close();
      await liar.close();
    }
  });

  it("bounds the key fetch: an issuer whose JWKS never answers gives UNAVAILABLE after the timeout", async () => {
    const slow = await startOidcIssuer({ audience: AUDIENCE });
    let verifier: OidcVerifier | undefined;
    const g = await startTlsTestGateway({
      auth,
      oidc: (logger) => (verifier = createOidcVerifier({ issuer: slow.issuer, audience: AUDIENCE, logger, fetchTimeoutMs: 300 })),
    });
    try {
      await verifier!.ready;
      slow.failNext("hang", { endpoint: "jwks" });
      const token = await slow.mintToken({ sub: "alice", roles: ["openshell-admin"] });
      expect(await failure(client(token, g.server.url).listSandboxes({ workspaceScope: workspaceScope() }))).toEqual({
        code: Code.Unavailable,
        message: OIDC_UNREACHABLE,
      });
    } finally {
      await g.close();
      await slow.close();
    }
  });
});
