// The auth file's client-certificate and OIDC sections: validation errors that name the field,
// which certificate stands for which principal, and how OIDC claims map to roles and workspaces.

import { describe, expect, it } from "vitest";
import { AuthFileError, parseAuthFile } from "../../src/auth/auth-file.js";
import { certificatePrincipal } from "../../src/auth/certificate-principals.js";
import { DEFAULT_OIDC_ROLE_MAPPING, principalFromClaims } from "../../src/auth/oidc-roles.js";
import type { PeerCertificate } from "../../src/auth/peer-certificate.js";

type Verified = Extract<PeerCertificate, { status: "verified" }>;
const FP = Array.from({ length: 32 }, (_, i) => i.toString(16).padStart(2, "0").toUpperCase()).join(":");

function cert(subject: [string, string][], fingerprint256 = FP): Verified {
  return { status: "verified", subject, commonName: subject.find(([k]) => k === "CN")?.[1], fingerprint256 };
}

function errorOf(json: unknown): string {
  try {
    parseAuthFile(json, "auth.json");
  } catch (err) {
    expect(err).toBeInstanceOf(AuthFileError);
    return (err as Error).message;
  }
  throw new Error("accepted");
}

const user = { principal: "bob", role: "user", workspaces: ["default"] };

describe("auth file: top level", () => {
  it("refuses an unknown field, so a misspelt section cannot pass silently", () => {
    expect(errorOf({ tokens: [], clientCertificate: [] })).toBe(
      'auth.json: unknown field "clientCertificate" (expected tokens, clientCertificates, defaultClientCertificate, oidc)',
    );
  });

  it("needs no tokens when it has another section, and still needs them when it has none", () => {
    expect(parseAuthFile({ clientCertificates: [] }).entries).toEqual([]);
    expect(parseAuthFile({ oidc: {} }).entries).toEqual([]);
    expect(errorOf({})).toBe('auth.json: "tokens" must be an array');
  });
});

describe("auth file: client certificates", () => {
  it("names the entry and field of every validation error", () => {
    expect(errorOf({ clientCertificates: {} })).toBe('auth.json: "clientCertificates" must be an array');
    expect(errorOf({ clientCertificates: ["x"] })).toBe("auth.json: clientCertificates[0]: expected an object");
    expect(errorOf({ clientCertificates: [user] })).toBe('auth.json: clientCertificates[0].subject: exactly one of "subject" and "fingerprint256" is required');
    expect(errorOf({ clientCertificates: [{ ...user, subject: "CN=a", fingerprint256: FP }] })).toMatch(/clientCertificates\[0\]\.subject: exactly one of/);
    expect(errorOf({ clientCertificates: [{ ...user, subject: "openshell-user" }] })).toBe(
      'auth.json: clientCertificates[0].subject: "openshell-user" is not KEY=value (expected a subject such as "CN=openshell-user")',
    );
    expect(errorOf({ clientCertificates: [{ ...user, fingerprint256: "AB:CD" }] })).toBe(
      'auth.json: clientCertificates[0].fingerprint256: must be a SHA-256 fingerprint, 32 hexadecimal bytes such as "AB:CD:…"',
    );
    expect(errorOf({ clientCertificates: [{ ...user, subject: "CN=a", role: "root" }] })).toBe(
      'auth.json: clientCertificates[0].role: must be "admin", "user" or "supervisor"',
    );
    expect(errorOf({ clientCertificates: [{ ...user, subject: "CN=a", workspaces: [] }] })).toMatch(/clientCertificates\[0\]\.workspaces: must be "\*"/);
    expect(errorOf({ clientCertificates: [{ ...user, subject: "CN=a, O=x" }, { ...user, subject: "o=x,cn=a" }] })).toBe(
      "auth.json: clientCertificates[1].subject: same certificate as clientCertificates[0]",
    );
    expect(errorOf({ clientCertificates: [{ ...user, fingerprint256: FP }, { ...user, fingerprint256: FP.replaceAll(":", "").toLowerCase() }] })).toBe(
      "auth.json: clientCertificates[1].fingerprint256: same certificate as clientCertificates[0]",
    );
    expect(errorOf({ defaultClientCertificate: "user" })).toBe('auth.json: "defaultClientCertificate": must be "admin" or "none"');
  });

  it("maps a certificate by its exact subject, in any attribute order, and nothing with more or fewer attributes", () => {
    const rules = parseAuthFile({ clientCertificates: [{ ...user, subject: "CN=openshell-user, O=Example\\, Inc" }] }).clientCertificates!;
    expect(certificatePrincipal(rules, cert([["O", "Example, Inc"], ["CN", "openshell-user"]]))?.name).toBe("bob");
    expect(certificatePrincipal(rules, cert([["CN", "openshell-user"]]))?.name).toBe("cert:openshell-user");
    expect(certificatePrincipal(rules, cert([["CN", "openshell-user"], ["O", "Example, Inc"], ["OU", "x"]]))?.name).toBe("cert:openshell-user");
  });

  it("maps a certificate by fingerprint before its subject", () => {
    const rules = parseAuthFile({
      clientCertificates: [
        { ...user, subject: "CN=shared" },
        { principal: "ci", role: "admin", workspaces: ["default"], fingerprint256: FP.toLowerCase() },
      ],
    }).clientCertificates!;
    expect(certificatePrincipal(rules, cert([["CN", "shared"]]))).toEqual({ name: "ci", role: "admin", workspaces: ["default"] });
    expect(certificatePrincipal(rules, cert([["CN", "shared"]], FP.replace("00", "FF")))?.name).toBe("bob");
  });

  it("makes an unmapped certificate the platform admin cert:<CN> by default, or nobody with defaultClientCertificate none", () => {
    const admin = parseAuthFile({ clientCertificates: [] }).clientCertificates!;
    expect(certificatePrincipal(admin, cert([["CN", "laptop"]]))).toEqual({ name: "cert:laptop", role: "admin", workspaces: "*" });
    expect(certificatePrincipal(admin, cert([["O", "no-cn"]]))?.name).toBe(`cert:${FP}`);
    const none = parseAuthFile({ defaultClientCertificate: "none" }).clientCertificates!;
    expect(certificatePrincipal(none, cert([["CN", "laptop"]]))).toBeUndefined();
  });

  it("allows a certificate to stand for a supervisor of one sandbox", () => {
    const rules = parseAuthFile({
      clientCertificates: [{ subject: "CN=sandbox-dev", principal: "supervisor:dev", role: "supervisor", workspace: "default", sandbox: "dev" }],
    }).clientCertificates!;
    expect(certificatePrincipal(rules, cert([["CN", "sandbox-dev"]]))).toMatchObject({ role: "supervisor", sandbox: { workspace: "default", name: "dev" } });
  });
});

describe("auth file: oidc", () => {
  it("names the field of every validation error", () => {
    expect(errorOf({ oidc: [] })).toBe('auth.json: "oidc" must be an object');
    expect(errorOf({ oidc: { adminRole: ["x"] } })).toBe(
      "auth.json: oidc.adminRole: unknown field (expected rolesClaim, adminRoles, userRoles, adminScopes, userScopes, workspacesClaim)",
    );
    expect(errorOf({ oidc: { rolesClaim: "" } })).toBe("auth.json: oidc.rolesClaim: must be a non-empty claim name");
    expect(errorOf({ oidc: { adminRoles: "openshell-admin" } })).toBe("auth.json: oidc.adminRoles: must be an array of names without spaces ([] grants nothing)");
    expect(errorOf({ oidc: { userScopes: ["a b"] } })).toMatch(/^auth\.json: oidc\.userScopes: must be an array/);
  });

  it("fills in the defaults for what the section leaves out", () => {
    expect(parseAuthFile({ oidc: { adminRoles: ["ops"] } }).oidc).toEqual({ ...DEFAULT_OIDC_ROLE_MAPPING, adminRoles: ["ops"] });
  });

  it("maps roles (array or space-separated) and scopes (scope or scp) to admin or user, admin first", () => {
    const m = DEFAULT_OIDC_ROLE_MAPPING;
    const role = (claims: Record<string, unknown>) => {
      const r = principalFromClaims({ sub: "alice", ...claims }, m);
      return r.ok ? r.principal.role : r.reason;
    };
    expect(role({ roles: ["openshell-admin"] })).toBe("admin");
    expect(role({ roles: "other openshell-user" })).toBe("user");
    expect(role({ roles: ["openshell-user", "openshell-admin"] })).toBe("admin");
    expect(role({ scope: "openid openshell:admin" })).toBe("admin");
    expect(role({ scp: ["openshell:user"] })).toBe("user");
    expect(role({ roles: ["viewer"], scope: "openid" })).toBe("the token grants no OpenShell role (admin or user)");
  });

  it("reads a dotted claim path when no claim has that exact name, and prefers the exact name", () => {
    const m = { ...DEFAULT_OIDC_ROLE_MAPPING, rolesClaim: "realm_access.roles" };
    const keycloak = principalFromClaims({ sub: "a", realm_access: { roles: ["openshell-user"] } }, m);
    expect(keycloak.ok && keycloak.principal.role).toBe("user");
    const exact = principalFromClaims({ sub: "a", "realm_access.roles": ["openshell-admin"], realm_access: { roles: ["openshell-user"] } }, m);
    expect(exact.ok && exact.principal.role).toBe("admin");
  });

  it("names the principal oidc:<sub> with every workspace, or those of the workspaces claim", () => {
    const all = principalFromClaims({ sub: "alice", roles: ["openshell-user"] }, DEFAULT_OIDC_ROLE_MAPPING);
    expect(all).toEqual({ ok: true, principal: { name: "oidc:alice", role: "user", workspaces: "*" } });
    const m = { ...DEFAULT_OIDC_ROLE_MAPPING, workspacesClaim: "openshell_workspaces" };
    const some = principalFromClaims({ sub: "alice", roles: ["openshell-user"], openshell_workspaces: ["team-a"] }, m);
    expect(some.ok && some.principal.workspaces).toEqual(["team-a"]);
    const star = principalFromClaims({ sub: "alice", roles: ["openshell-admin"], openshell_workspaces: "*" }, m);
    expect(star.ok && star.principal.workspaces).toBe("*");
    expect(principalFromClaims({ sub: "alice", roles: ["openshell-user"] }, m)).toEqual({
      ok: false,
      code: "denied",
      reason: 'the token names no workspace in claim "openshell_workspaces"',
    });
  });

  it("refuses a token without a usable subject", () => {
    expect(principalFromClaims({ roles: ["openshell-admin"] }, DEFAULT_OIDC_ROLE_MAPPING)).toEqual({ ok: false, code: "invalid", reason: "no subject" });
    expect(principalFromClaims({ sub: "x".repeat(300), roles: ["openshell-admin"] }, DEFAULT_OIDC_ROLE_MAPPING)).toMatchObject({ ok: false, code: "invalid" });
  });
});
