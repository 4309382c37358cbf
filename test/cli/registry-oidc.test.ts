// The OIDC session of a registered gateway (cli/oidc-session.ts, cli/oidc-token-file.ts) against
// a real issuer on 127.0.0.1 (test/support/oidc-issuer.ts: discovery, rotating refresh tokens):
// an expired access token is refreshed and the file rewritten atomically with mode 0600 and the
// rotated refresh token; a valid one is used without asking; what cannot work is one line that
// names the file and says to sign in again; a session another command line rotated first is picked
// up from the file instead of failing.

import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../cli/config-error.js";
import { oidcSession, type SessionHooks } from "../../cli/oidc-session.js";
import { readOidcTokenFile } from "../../cli/oidc-token-file.js";
import { createRegistry } from "../../cli/registry.js";
import { startOidcIssuer, type OidcIssuer } from "../support/oidc-issuer.js";
import { createFakeHome, type FakeHome, type Which } from "./registry-fixture.js";

const CLIENT = "openshell-cli";
let issuer: OidcIssuer;
let home: FakeHome;
let warnings: string[];
let redacted: string[];
const hooks: SessionHooks = { warn: (m) => warnings.push(m), redact: (s) => redacted.push(s) };

beforeAll(async () => {
  issuer = await startOidcIssuer();
  issuer.registerClient(CLIENT, {});
});
afterAll(() => issuer?.close());
beforeEach(() => {
  home = createFakeHome();
  warnings = [];
  redacted = [];
});
afterEach(() => home.cleanup());

const nowS = () => Math.floor(Date.now() / 1000);

/** A registered oidc gateway `name` with a stored session; `expiresAt` in Unix seconds. */
async function storedSession(name: string, options: { expiresAt: number; refresh?: boolean; which?: Which; mode?: number }) {
  home.gateway(name, "https://remote.example:8443", { auth_mode: "oidc", oidc_issuer: issuer.issuer, oidc_client_id: CLIENT }, options.which ?? "user");
  const session = await issuer.createSession({ clientId: CLIENT });
  const fields: Record<string, unknown> = { access_token: session.accessToken, expires_at: options.expiresAt, issuer: issuer.issuer, client_id: CLIENT, extra_field: "kept" };
  if (options.refresh !== false) fields.refresh_token = session.refreshToken;
  const file = home.oidcToken(name, fields, options.which ?? "user", options.mode ?? 0o600);
  return { session, file };
}

async function sessionFor(name: string) {
  const registry = createRegistry(home.env, home.dir);
  return oidcSession(registry.entry(name)!, registry, hooks);
}

async function tokenOf(source: string | (() => Promise<string>)): Promise<string> {
  return typeof source === "string" ? source : source();
}

async function configError(f: () => Promise<unknown>): Promise<string> {
  try {
    await f();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error("expected a ConfigError");
}

describe("an OIDC session from oidc_token.json", () => {
  it("an expired access token is refreshed; the file is replaced atomically, mode 0600, with the rotated refresh token and its other fields", async () => {
    const { session, file } = await storedSession("remote", { expiresAt: nowS() - 60 });
    const before = statSync(file);
    const requests = issuer.counts.token;
    const token = await tokenOf(await sessionFor("remote"));

    expect(token).not.toBe(session.accessToken);
    expect(issuer.counts.token - requests).toBe(1);
    const stored = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    expect(stored).toMatchObject({ access_token: token, issuer: issuer.issuer, client_id: CLIENT, extra_field: "kept" });
    expect(stored.refresh_token).toEqual(expect.any(String));
    expect(stored.refresh_token).not.toBe(session.refreshToken);
    expect(stored.expires_at).toBeGreaterThan(nowS());
    const after = statSync(file);
    expect(after.mode & 0o777).toBe(0o600);
    // A new file renamed over the old one, not the old one rewritten in place; no temporary file left.
    expect(after.ino).not.toBe(before.ino);
    expect(readdirSync(join(home.user, "gateways", "remote")).sort()).toEqual(["metadata.json", "oidc_token.json"]);
    // The next command line uses the stored rotation without asking the issuer.
    expect(await tokenOf(await sessionFor("remote"))).toBe(token);
    expect(issuer.counts.token - requests).toBe(1);
    expect(issuer.reusedRefreshTokens).toBe(0);
    expect(redacted).toEqual(expect.arrayContaining([session.accessToken, session.refreshToken, token, stored.refresh_token]));
    expect(warnings).toEqual([]);
  });

  it("a token about to expire (within 30 s) is refreshed too", async () => {
    const { session } = await storedSession("soon", { expiresAt: nowS() + 10 });
    expect(await tokenOf(await sessionFor("soon"))).not.toBe(session.accessToken);
  });

  it("a valid access token is used as it is, without a request to the issuer", async () => {
    const { session, file } = await storedSession("fresh", { expiresAt: nowS() + 3600 });
    const text = readFileSync(file, "utf8");
    const requests = issuer.counts.token + issuer.counts.discovery;
    expect(await tokenOf(await sessionFor("fresh"))).toBe(session.accessToken);
    expect(issuer.counts.token + issuer.counts.discovery).toBe(requests);
    expect(readFileSync(file, "utf8")).toBe(text);
  });

  it("a system entry's session is refreshed into the user registry (the system one is read-only)", async () => {
    const { file } = await storedSession("shared", { expiresAt: nowS() - 60, which: "system" });
    const systemText = readFileSync(file, "utf8");
    const token = await tokenOf(await sessionFor("shared"));
    const userFile = join(home.user, "gateways", "shared", "oidc_token.json");
    expect(readOidcTokenFile(userFile)).toMatchObject({ accessToken: token, mode: 0o600 });
    expect(readFileSync(file, "utf8")).toBe(systemText);
    // The user registry's copy has no metadata.json: the system entry is still the one in use.
    expect(createRegistry(home.env, home.dir).entry("shared")?.source).toBe("system");
  });

  it("a refreshed session that cannot be saved still works for this command, with a warning that the next one may need a sign-in", async () => {
    await storedSession("unsaved", { expiresAt: nowS() - 60, which: "system" });
    // The user registry's directory for it is a file: nothing can be written there.
    mkdirSync(join(home.user, "gateways"), { recursive: true });
    writeFileSync(join(home.user, "gateways", "unsaved"), "");
    const token = await tokenOf(await sessionFor("unsaved"));
    expect(token).toEqual(expect.any(String));
    expect(warnings).toEqual([
      expect.stringMatching(new RegExp(`^could not save the refreshed OIDC session to ${join(home.user, "gateways", "unsaved", "oidc_token.json")} \\(E[A-Z]+\\); the next command may have to sign in again: run "openshell gateway login unsaved"$`)),
    ]);
  });

  it("picks up a session another command line rotated first instead of failing on the spent refresh token", async () => {
    const { file } = await storedSession("race", { expiresAt: nowS() - 60 });
    const first = await sessionFor("race");
    const second = await sessionFor("race");
    // The second command line refreshes first and stores the rotation.
    const secondToken = await tokenOf(second);
    const reused = issuer.reusedRefreshTokens;
    // The first one presents the spent refresh token (invalid_grant), then reads the file again.
    expect(await tokenOf(first)).toBe(secondToken);
    expect(issuer.reusedRefreshTokens).toBe(reused + 1);
    expect(readOidcTokenFile(file)?.accessToken).toBe(secondToken);
  });

  it("a refresh token the issuer refuses (spent elsewhere, the file unchanged) fails the call with the issuer's refusal", async () => {
    const { session } = await storedSession("revoked", { expiresAt: nowS() - 60 });
    // Spent behind the file's back (say, by a tool that did not store the rotation).
    const spent = await fetch(issuer.tokenEndpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: session.refreshToken, client_id: CLIENT }),
    });
    expect(spent.status).toBe(200);
    await expect(tokenOf(await sessionFor("revoked"))).rejects.toMatchObject({ code: "token-provider", oauthError: "invalid_grant", transient: false });
  });
});

describe("what cannot work is one line naming the file", () => {
  it("no oidc_token.json", async () => {
    home.gateway("nologin", "https://remote.example", { auth_mode: "oidc" });
    expect(await configError(() => sessionFor("nologin"))).toBe(
      `no OIDC token for gateway "nologin" at ${join(home.user, "gateways", "nologin", "oidc_token.json")}; run "openshell gateway login nologin"`,
    );
  });

  it("an expired token without a refresh token", async () => {
    const expiresAt = nowS() - 120;
    const { file } = await storedSession("cc", { expiresAt, refresh: false });
    expect(await configError(() => sessionFor("cc"))).toBe(
      `the OIDC token in ${file} expired at ${new Date(expiresAt * 1000).toISOString()} and has no refresh token; run "openshell gateway login cc"`,
    );
  });

  it.each([
    [{ issuer: "https://i", client_id: "c" }, '"access_token" is required (a non-empty string)'],
    [{ access_token: "s3cret-access", issuer: "https://i", client_id: "c", expires_at: "tomorrow" }, '"expires_at" must be a time in Unix seconds'],
    [{ access_token: "s3cret-access", client_id: "c" }, '"issuer" is required (a non-empty string)'],
    [{ access_token: "s3cret-access", issuer: "https://i", client_id: "c", refresh_token: 42 }, '"refresh_token" must be a non-empty string'],
  ])("a malformed token file %j: the file and the field, never a token", async (fields, message) => {
    home.gateway("bad", "https://remote.example", { auth_mode: "oidc" });
    const file = home.oidcToken("bad", fields);
    const text = await configError(() => sessionFor("bad"));
    expect(text).toBe(`OIDC token file ${file}: ${message}`);
    expect(text).not.toContain("s3cret");
  });

  it("a token file other users can read works, with a warning", async () => {
    const { session, file } = await storedSession("open", { expiresAt: nowS() + 3600, mode: 0o644 });
    expect(await tokenOf(await sessionFor("open"))).toBe(session.accessToken);
    expect(warnings).toEqual([`${file} can be read by other users (mode 0644); run "chmod 600 ${file}" (the openshell CLI writes it 0600)`]);
  });
});

afterAll(() => {
  // Nothing of the fixtures survives a failed test either.
  if (home) rmSync(home.dir, { recursive: true, force: true });
});
