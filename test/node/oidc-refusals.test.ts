// The OIDC token providers when the answer is "no" or the set-up is wrong: one-line refusals that
// are never retried, an issuer that is not the configured one, plain http, oversized answers,
// bad options, and no secret in anything a reader could see. Then the provider as the token of a
// ConfigClient.

import { describe, expect, it } from "vitest";
import { createRouterTransport } from "@connectrpc/connect";
import { createConfigClient, InsecureTransportError, InvalidArgumentError, TokenProviderError } from "../../src/index.js";
import { oidcClientCredentials, oidcRefreshToken, type OidcClientCredentialsOptions, type OidcFetch } from "../../src/oidc.js";
import { createFakeGateway } from "../support/fake-gateway.js";
import type { OidcIssuer } from "../support/oidc-issuer.js";
import { rejectionOf, samplePolicy } from "./helpers.js";
import { everythingShownBy, FAST_RETRY, issuerForTest, verified } from "./oidc-helpers.js";

const SECRET = "svc-secret-0123456789";
const clients = { svc: { secret: SECRET, scopes: ["openshell:read"] } };

function provider(issuer: OidcIssuer, options: Partial<OidcClientCredentialsOptions> = {}) {
  return oidcClientCredentials({ issuer: issuer.issuer, clientId: "svc", clientSecret: SECRET, retry: FAST_RETRY, ...options });
}

describe("OIDC refusals", () => {
  it.each(["client_secret_basic", "client_secret_post"] as const)(
    "a wrong client secret (%s) is refused in one line naming the token endpoint and the OAuth error, and not retried",
    async (clientAuthMethod) => {
      const issuer = await issuerForTest({ clients });
      const token = provider(issuer, { clientSecret: "wrong-secret-xyz", clientAuthMethod });
      const err = (await rejectionOf(token())) as TokenProviderError;
      expect(err).toBeInstanceOf(TokenProviderError);
      expect(err.message).toBe(`OIDC token request to ${issuer.tokenEndpoint} refused: invalid_client (client authentication failed)`);
      expect([err.code, err.status, err.oauthError, err.transient]).toEqual(["token-provider", 401, "invalid_client", false]);
      expect(issuer.tokenRequests).toEqual([
        expect.objectContaining({ auth: clientAuthMethod === "client_secret_basic" ? "basic" : "post", status: 401 }),
      ]);
    },
  );

  it("a 400 invalid_client and an unknown scope are refusals too, each after a single request", async () => {
    const issuer = await issuerForTest({ clients });
    issuer.failNext("invalid_client");
    const err = (await rejectionOf(provider(issuer)())) as TokenProviderError;
    expect([err.status, err.oauthError, err.transient]).toEqual([400, "invalid_client", false]);
    const scoped = (await rejectionOf(provider(issuer, { scopes: ["openshell:admin"] })())) as TokenProviderError;
    expect(scoped.message).toBe(`OIDC token request to ${issuer.tokenEndpoint} refused: invalid_scope (scope not allowed: openshell:admin)`);
    expect(issuer.counts.token).toBe(2);
  });

  it("a discovery document naming another issuer is refused, and no token is asked for", async () => {
    const issuer = await issuerForTest({ clients });
    issuer.advertisedIssuer = "https://login.example.com";
    const err = (await rejectionOf(provider(issuer)())) as TokenProviderError;
    expect(err.message).toBe(
      `OIDC discovery at ${issuer.issuer}/.well-known/openid-configuration refused: the document names issuer https://login.example.com, not the configured ${issuer.issuer}/`,
    );
    expect(err.transient).toBe(false);
    expect(issuer.counts).toEqual({ discovery: 1, jwks: 0, token: 0 });
  });

  it("an issuer that is not an OIDC issuer (404 on discovery) is refused without retries", async () => {
    const issuer = await issuerForTest({ clients, path: "/realms/a" });
    const token = oidcClientCredentials({ issuer: issuer.issuer.replace("/realms/a", "/realms/b"), clientId: "svc", clientSecret: SECRET });
    const err = (await rejectionOf(token())) as TokenProviderError;
    expect(err.message).toMatch(/^OIDC discovery at http:\/\/127\.0\.0\.1:\d+\/realms\/b\/\.well-known\/openid-configuration failed: HTTP 404$/);
    expect([err.status, err.transient]).toEqual([404, false]);
  });

  it("an answer larger than 256 KiB is refused, streamed or declared", async () => {
    const issuer = await issuerForTest({ clients });
    const huge = JSON.stringify({ access_token: "x".repeat(300 * 1024), token_type: "Bearer" });
    for (const declared of [false, true]) {
      const fetch: OidcFetch = async (url, init) => {
        if (!url.endsWith("/token")) return globalThis.fetch(url, init);
        const headers: Record<string, string> = { "content-type": "application/json" };
        if (declared) headers["content-length"] = String(huge.length);
        return new Response(huge, { headers });
      };
      const err = (await rejectionOf(provider(issuer, { fetch })())) as TokenProviderError;
      expect(err.message).toMatch(/^OIDC token (request to|answer from) \S+ failed: .*the answer is larger than 256 KiB$/);
      expect(err.transient).toBe(false);
    }
  });

  it("a plain-http issuer on another host is refused at once; loopback and allowInsecureRequests are accepted", () => {
    const make = (issuer: string, allowInsecureRequests?: boolean) => () =>
      oidcClientCredentials({ issuer, clientId: "svc", clientSecret: SECRET, ...(allowInsecureRequests ? { allowInsecureRequests } : {}) });
    expect(make("http://login.example.com")).toThrow(InsecureTransportError);
    expect(make("http://login.example.com")).toThrow(
      "refusing to send OIDC credentials over plain http to login.example.com; use https, or set allowInsecureRequests: true",
    );
    for (const ok of ["http://127.0.0.1:9", "http://127.1.2.3", "http://[::1]:9", "http://localhost:9", "https://login.example.com"]) {
      expect(make(ok)).not.toThrow();
    }
    expect(make("http://login.example.com", true)).not.toThrow();
  });

  it("a discovered token endpoint on plain http on another host is refused before any credential is sent", async () => {
    const issuer = await issuerForTest({ clients });
    const asked: string[] = [];
    const fetch: OidcFetch = async (url, init) => {
      asked.push(url);
      const res = await globalThis.fetch(url, init);
      const doc = (await res.json()) as Record<string, unknown>;
      return Response.json({ ...doc, token_endpoint: "http://login.example.com/token" });
    };
    const err = (await rejectionOf(provider(issuer, { fetch })())) as TokenProviderError;
    expect(err.message).toContain("its token endpoint http://login.example.com is plain http on another host");
    expect(asked).toEqual([`${issuer.issuer}/.well-known/openid-configuration`]);
  });

  it("bad options are InvalidArgumentError naming the field, at once", () => {
    const base = { issuer: "https://login.example.com", clientId: "svc", clientSecret: SECRET };
    const cases: [Partial<OidcClientCredentialsOptions>, string][] = [
      [{ issuer: "login.example.com" }, "issuer"],
      [{ issuer: "ftp://login.example.com" }, "issuer"],
      [{ issuer: "https://login.example.com/?x=1" }, "issuer"],
      [{ clientId: "" }, "clientId"],
      [{ clientSecret: "" }, "clientSecret"],
      [{ scopes: ["a b"] }, "scopes"],
      [{ renewBeforeMs: -1 }, "renewBeforeMs"],
      [{ retry: { retries: Number.NaN } }, "retry.retries"],
      [{ clientAuthMethod: "private_key_jwt" as never }, "clientAuthMethod"],
    ];
    for (const [patch, field] of cases) {
      let thrown: unknown;
      try {
        oidcClientCredentials({ ...base, ...patch });
      } catch (err) {
        thrown = err;
      }
      expect(thrown, field).toBeInstanceOf(InvalidArgumentError);
      expect((thrown as InvalidArgumentError).field).toBe(field);
    }
  });
});

describe("OIDC secrets", () => {
  it("no client secret, refresh token or access token appears in any error, its causes, or the providers' text, JSON and inspection", async () => {
    const issuer = await issuerForTest({ clients: { ...clients, cli: {} } });
    const session = await issuer.createSession({ clientId: "cli" });
    const secrets = [SECRET, encodeURIComponent(SECRET), session.refreshToken, session.accessToken];
    const shown: string[] = [];
    // A fetch that fails with the request in its message (a proxy's error, say), and an issuer that echoes what it got.
    const leakyFetch: OidcFetch = async (url, init) => {
      if (url.endsWith("/token")) throw new Error(`proxy refused POST ${url}: ${String(init.body)} ${JSON.stringify(init.headers)}`);
      return globalThis.fetch(url, init);
    };
    const echoingFetch: OidcFetch = async (url, init) => {
      if (!url.endsWith("/token")) return globalThis.fetch(url, init);
      return Response.json({ error: "invalid_request", error_description: `bad ${String(init.body)} ${JSON.stringify(init.headers)}` }, { status: 400 });
    };
    const tokenTypeFetch: OidcFetch = async (url, init) => {
      const res = await globalThis.fetch(url, init);
      if (!url.endsWith("/token")) return res;
      return Response.json({ ...((await res.json()) as object), token_type: "mac" });
    };
    for (const clientAuthMethod of ["client_secret_basic", "client_secret_post"] as const) {
      for (const fetch of [leakyFetch, echoingFetch, tokenTypeFetch]) {
        const cc = provider(issuer, { fetch, clientAuthMethod, retry: { ...FAST_RETRY, retries: 1 } });
        shown.push(everythingShownBy(await rejectionOf(cc())), everythingShownBy(cc));
      }
    }
    for (const fetch of [leakyFetch, echoingFetch]) {
      const expired = { ...session, expiresAt: new Date(Date.now() - 1_000) };
      const rt = oidcRefreshToken({ issuer: issuer.issuer, clientId: "cli", ...expired, fetch, retry: { ...FAST_RETRY, retries: 1 } });
      shown.push(everythingShownBy(rt), everythingShownBy(await rejectionOf(rt())), everythingShownBy(rt));
    }
    const text = shown.join("\n");
    expect(text).toContain("[redacted]");
    expect(text).toContain("proxy refused POST");
    for (const secret of secrets) expect(text.includes(secret), `a secret of ${secret.length} characters shown`).toBe(false);
    expect(text).not.toMatch(/eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+/); // no JWT at all
    expect(text).toContain('"authorization":"Basic [redacted]"');
    expect(text).not.toMatch(/Basic (?!\[redacted\])[A-Za-z0-9+/=]{8,}/);
  });
});

describe("an OIDC provider as a ConfigClient's token", () => {
  it("sends authorization: Bearer <the issuer's JWT>, fetched once for many calls", async () => {
    const issuer = await issuerForTest({ clients, audience: "openshell" });
    const gw = createFakeGateway();
    gw.addSandbox("dev");
    const token = provider(issuer, { audience: "openshell", scopes: ["openshell:read"] });
    const client = createConfigClient({ transport: createRouterTransport(gw.routes), token });
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    await client.getOperation(res.handle);
    await client.updateSettings({ sandbox: "dev", key: "log_level", value: "debug" });
    expect(gw.authorizations).toHaveLength(3);
    expect(new Set(gw.authorizations).size).toBe(1);
    const [scheme, jwt] = gw.authorizations[0]!.split(" ");
    expect(scheme).toBe("Bearer");
    expect(await verified(issuer, jwt!, "openshell")).toMatchObject({ sub: "svc", scope: "openshell:read" });
    expect(issuer.counts).toEqual({ discovery: 1, jwks: 1, token: 1 }); // jwks: the test's own check
  });

  it("an unreachable issuer fails the call with the provider's TokenProviderError, without the client retrying on top", async () => {
    const issuer = await issuerForTest({ clients });
    const url = issuer.issuer;
    await issuer.close(); // nothing listens there now: ECONNREFUSED
    let requests = 0;
    const fetch: OidcFetch = (u, init) => (requests++, globalThis.fetch(u, init));
    const token = oidcClientCredentials({ issuer: url, clientId: "svc", clientSecret: SECRET, fetch, retry: { ...FAST_RETRY, retries: 2 } });
    const gw = createFakeGateway();
    gw.addSandbox("dev");
    // A client retry would come after the provider's cooldown (200 ms) and start a new round of requests.
    const client = createConfigClient({ transport: createRouterTransport(gw.routes), token, retry: { retries: 2, minDelayMs: 300, maxDelayMs: 300 } });
    const err = (await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy() }))) as TokenProviderError;
    expect(err).toBeInstanceOf(TokenProviderError);
    expect(err.message).toMatch(/failed: fetch failed: .*ECONNREFUSED.* \(3 attempts\)$/);
    expect(requests).toBe(3);
    expect(gw.calls.updateConfig ?? 0).toBe(0);
  });
});
