// The lean path for unary gRPC calls (src/http/grpc-unary.ts) over HTTPS with client certificates,
// as users run a gateway (contract §8): a verified certificate's call is answered there as its
// principal, with a bearer token deciding instead when one is sent; a call without a certificate,
// with one from another CA or with an invalid token is refused, and none of them reaches the path.

import { Code } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { ServiceStatus } from "openshell-config/raw";
import { parseAuthFile } from "../../src/auth/auth-file.js";
import { createAuthInterceptor } from "../../src/auth/interceptor.js";
import { CLIENT_CERTIFICATE_REQUIRED } from "../../src/server.js";
import { fastPathCounts } from "../../src/http/grpc-unary.js";
import { openShell, PRINCIPAL_HEADER, rpcFailure as failure, startTestServer, type TestServer } from "./harness.js";
import { credentials, serverTls, testPki, tlsTransports } from "./tls-support.js";

const TOKEN = "alice-token-0123456789";
let t: TestServer | undefined;
afterEach(async () => {
  await t?.server.close({ graceMs: 200 });
  t = undefined;
});

describe("the lean unary path over HTTPS with client certificates", () => {
  it("answers a verified client's gRPC calls as its principal, and never sees a refused one", async () => {
    const pki = await testPki();
    const auth = parseAuthFile({ tokens: [{ token: TOKEN, principal: "alice", role: "user", workspaces: ["default"] }] });
    t = await startTestServer({ tls: serverTls(pki, { clientCa: true }), interceptors: [createAuthInterceptor(auth)] });
    const grpc = (client?: Parameters<typeof credentials>[1]) => openShell(tlsTransports(t!.server.url, credentials(pki, client))["gRPC over HTTP/2"]!);

    let before = fastPathCounts.answered;
    const verified = grpc(pki.client);
    let principal: string | null = null;
    await verified.getGatewayConfig({}, { onHeader: (h) => (principal = h.get(PRINCIPAL_HEADER)) });
    expect(principal).toBe("cert:openshell-client");
    await verified.getGatewayConfig({}, { headers: { authorization: `Bearer ${TOKEN}` }, onHeader: (h) => (principal = h.get(PRINCIPAL_HEADER)) });
    expect(principal).toBe("alice");
    expect((await verified.health({})).status).toBe(ServiceStatus.HEALTHY);
    expect(fastPathCounts.answered - before).toBe(3);

    // Refused at the door from their headers, before any body is read: the lean path never runs,
    // nor any handler.
    before = fastPathCounts.answered;
    const handedOver = fastPathCounts.handedOver;
    expect(await failure(verified.getGatewayConfig({}, { headers: { authorization: "Bearer not-a-token" } }))).toEqual({ code: Code.Unauthenticated, message: "invalid bearer token" });
    expect(await failure(grpc().getGatewayConfig({}))).toEqual({ code: Code.Unauthenticated, message: CLIENT_CERTIFICATE_REQUIRED });
    expect(await failure(grpc(pki.otherClient).health({}))).toEqual({ code: Code.Unauthenticated, message: "client certificate rejected: UNABLE_TO_VERIFY_LEAF_SIGNATURE" });
    expect(fastPathCounts.answered - before).toBe(0);
    expect(fastPathCounts.handedOver).toBe(handedOver);
    expect(t.probe.maxInFlight).toBe(1);
  });
});
