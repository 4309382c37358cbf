// A registered gateway with auth_mode oidc, end to end: the built `openshell-config` with only
// `-g remote`, a real OIDC issuer on 127.0.0.1 (test/support/oidc-issuer.ts, rotating refresh
// tokens) and the reference gateway on HTTPS validating its JWTs (--oidc-issuer, --oidc-audience).
// The stored access token has expired: the command refreshes it, the gateway accepts the new one,
// oidc_token.json is replaced (mode 0600) with the rotated refresh token, and the next command
// uses the stored token without asking the issuer. No token is printed.

import { readFileSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { startOidcIssuer, type OidcIssuer } from "../support/oidc-issuer.js";
import { build, runBinary, type Run } from "./harness.js";
import { createFakeHome, type FakeHome } from "./registry-fixture.js";

const CLIENT = "openshell-cli";
const AUDIENCE = "openshell";
let issuer: OidcIssuer;
let stack: LocalStack;
let home: FakeHome;

function cli(args: readonly string[]): Promise<Run> {
  return runBinary(args, home.dir, { PATH: process.env.PATH, ...home.env });
}

beforeAll(async () => {
  issuer = await startOidcIssuer();
  issuer.registerClient(CLIENT, { claims: { roles: ["openshell-admin"] } });
  const [started] = await Promise.all([
    startLocalStack({ sandboxes: [], tls: "tls", gatewayArgs: ["--oidc-issuer", issuer.issuer, "--oidc-audience", AUDIENCE] }),
    build(),
  ]);
  stack = started;
  home = createFakeHome();
  home.gateway("remote", stack.url, { auth_mode: "oidc", oidc_issuer: issuer.issuer, oidc_client_id: CLIENT });
  // Server authentication only: the bundle holds the gateway's CA, no client certificate.
  const ca = join(home.user, "gateways", "remote", "mtls");
  home.bundle("remote", { cert: stack.clientTls!.ca, key: "" }, { cert: "", key: "" });
  rmSync(join(ca, "tls.crt"));
  rmSync(join(ca, "tls.key"));
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  await issuer?.close();
  home?.cleanup();
});

describe("an oidc gateway from the registry", () => {
  it("refreshes an expired session, is let in with the new token, and stores the rotation atomically with mode 0600", async () => {
    const session = await issuer.createSession({ clientId: CLIENT, audience: AUDIENCE });
    const file = home.oidcToken("remote", {
      access_token: session.accessToken,
      refresh_token: session.refreshToken,
      expires_at: Math.floor(Date.now() / 1000) - 60,
      issuer: issuer.issuer,
      client_id: CLIENT,
    });
    const before = statSync(file).ino;
    const requests = issuer.counts.token;

    const r = await cli(["sandbox", "list", "-g", "remote"]);
    expect(r.stderr).toBe("no sandboxes\n");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("");
    expect(issuer.counts.token - requests).toBe(1);

    const stored = JSON.parse(readFileSync(file, "utf8")) as { access_token: string; refresh_token: string; expires_at: number };
    expect(stored.access_token).not.toBe(session.accessToken);
    expect(stored.refresh_token).not.toBe(session.refreshToken);
    expect(stored.expires_at).toBeGreaterThan(Date.now() / 1000);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(file).ino).not.toBe(before);

    const again = await cli(["sandbox", "list", "-g", "remote", "-o", "json"]);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ sandboxes: [] });
    expect(issuer.counts.token - requests).toBe(1);
    for (const out of [r.stdout, again.stdout]) {
      expect(out).not.toContain(stored.access_token);
      expect(out).not.toContain(stored.refresh_token);
    }
  });

  it("a refresh token the issuer no longer honours: one line that says to sign in again", async () => {
    const session = await issuer.createSession({ clientId: CLIENT, audience: AUDIENCE });
    home.oidcToken("remote", {
      access_token: session.accessToken,
      refresh_token: `${session.refreshToken}-revoked`,
      expires_at: Math.floor(Date.now() / 1000) - 60,
      issuer: issuer.issuer,
      client_id: CLIENT,
    });
    const r = await cli(["sandbox", "list", "-g", "remote"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/^error: .*invalid_grant.*; run "openshell gateway login remote"\n$/);
    expect(r.stderr).not.toContain(session.refreshToken);
  });
});
