// Bearer-token authentication in front of the RPCs, over the SDK's real transports.

import { Code, ConnectError } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { createNodeTransport } from "openshell-config/transport/node";
import { createWebTransport } from "openshell-config/transport/web";
import { parseAuthFile, tokenDigest } from "../../src/auth/auth-file.js";
import { createAuthInterceptor, createNoAuthInterceptor } from "../../src/auth/interceptor.js";
import { canAccessWorkspace, NO_AUTH_PRINCIPAL } from "../../src/auth/principal.js";
import { openShell, PRINCIPAL_HEADER, startTestServer, type TestServer } from "./harness.js";

const ALICE = "alice-token-0123456789";
const SUPERVISOR = "supervisor-token-abcdef";
const auth = parseAuthFile({
  tokens: [
    { token: ALICE, principal: "alice", role: "admin", workspaces: "*" },
    { tokenSha256: tokenDigest(SUPERVISOR).toString("hex"), principal: "supervisor:dev", role: "supervisor", workspace: "default", sandbox: "dev" },
  ],
});

let t: TestServer | undefined;
afterEach(async () => {
  await t?.server.close({ graceMs: 500 });
  t = undefined;
});

async function startWithAuth(): Promise<TestServer> {
  return startTestServer({ interceptors: [createAuthInterceptor(auth, { unauthenticatedMethods: ["Health"] })] });
}

function transports(url: string) {
  return {
    grpc: createNodeTransport({ baseUrl: url, protocol: "grpc" }),
    "connect http/1.1": createNodeTransport({ baseUrl: url, protocol: "connect", httpVersion: "1.1" }),
    "grpc-web fetch": createWebTransport({ baseUrl: url, protocol: "grpc-web" }),
  };
}

async function codeOf(p: Promise<unknown>): Promise<{ code: Code; message: string }> {
  try {
    await p;
  } catch (err) {
    const ce = ConnectError.from(err);
    return { code: ce.code, message: ce.rawMessage };
  }
  throw new Error("call succeeded");
}

describe("auth interceptor", () => {
  it("rejects a call without a token as UNAUTHENTICATED: missing bearer token", async () => {
    t = await startWithAuth();
    for (const [name, transport] of Object.entries(transports(t.server.url))) {
      expect(await codeOf(openShell(transport).getGatewayConfig({})), name).toEqual({
        code: Code.Unauthenticated,
        message: "missing bearer token",
      });
    }
  });

  it("rejects a wrong or malformed token as UNAUTHENTICATED", async () => {
    t = await startWithAuth();
    for (const [name, transport] of Object.entries(transports(t.server.url))) {
      const client = openShell(transport);
      expect(await codeOf(client.getGatewayConfig({}, { headers: { authorization: "Bearer not-a-token" } })), name).toEqual({
        code: Code.Unauthenticated,
        message: "invalid bearer token",
      });
      expect((await codeOf(client.getGatewayConfig({}, { headers: { authorization: `Basic ${ALICE}` } }))).code, name).toBe(
        Code.Unauthenticated,
      );
    }
  });

  it("lets Health through without a token, and ignores a bad token there", async () => {
    t = await startWithAuth();
    for (const [name, transport] of Object.entries(transports(t.server.url))) {
      const client = openShell(transport);
      expect((await client.health({})).version, name).toBe("");
      expect((await client.health({}, { headers: { authorization: "Bearer wrong" } })).version, name).toBe("");
    }
  });

  it("hands the token's principal to the handler, for plain and digest-only tokens", async () => {
    t = await startWithAuth();
    for (const [name, transport] of Object.entries(transports(t.server.url))) {
      const client = openShell(transport);
      let principal: string | null = null;
      await client.getGatewayConfig({}, { headers: { authorization: `Bearer ${ALICE}` }, onHeader: (h) => (principal = h.get(PRINCIPAL_HEADER)) });
      expect(principal, name).toBe("alice");
      await client.getGatewayConfig(
        {},
        { headers: { authorization: `bearer ${SUPERVISOR}` }, onHeader: (h) => (principal = h.get(PRINCIPAL_HEADER)) },
      );
      expect(principal, name).toBe("supervisor:dev");
      expect((await client.health({}, { headers: { authorization: `Bearer ${ALICE}` } })).version, name).toBe("alice");
    }
  });

  it("in --no-auth mode runs every call as an admin of every workspace", async () => {
    t = await startTestServer({ interceptors: [createNoAuthInterceptor()] });
    let principal: string | null = null;
    await openShell(createNodeTransport({ baseUrl: t.server.url })).getGatewayConfig({}, { onHeader: (h) => (principal = h.get(PRINCIPAL_HEADER)) });
    expect(principal).toBe(NO_AUTH_PRINCIPAL.name);
    expect(NO_AUTH_PRINCIPAL.role).toBe("admin");
    expect(canAccessWorkspace(NO_AUTH_PRINCIPAL, "anything")).toBe(true);
  });
});

describe("principals", () => {
  it("grants a workspace only when it is listed or the principal has every workspace", () => {
    const user = { name: "bob", role: "user" as const, workspaces: ["team-a"] };
    expect(canAccessWorkspace(user, "team-a")).toBe(true);
    expect(canAccessWorkspace(user, "default")).toBe(false);
    expect(canAccessWorkspace({ ...user, workspaces: "*" }, "default")).toBe(true);
  });
});
