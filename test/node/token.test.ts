import { describe, expect, it } from "vitest";
import { Code, createRouterTransport } from "@connectrpc/connect";
import { createConfigClient, InsecureTransportError, UnauthenticatedError } from "../../src/index.js";
import { createNodeTransport } from "../../src/transport/node.js";
import { ConfigUpdateOperationState as State, ConfigApplyOutcome as Outcome } from "../../src/gen/openshell/v1/config_pb.js";
import { createFakeGateway } from "../support/fake-gateway.js";
import { FAST, rejectionOf, samplePolicy } from "./helpers.js";

function gateway(token?: string) {
  const gw = createFakeGateway({ ...(token === undefined ? {} : { token }) });
  gw.addSandbox("dev");
  return gw;
}

describe("bearer tokens", () => {
  it("a string token is sent as a bearer authorization header on every request", async () => {
    const gw = gateway("s3cret");
    const client = createConfigClient({ ...FAST, serverWaitSliceMs: 20, transport: createRouterTransport(gw.routes), token: "s3cret" });
    const waiting = client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: { timeoutMs: 2_000 } });
    setTimeout(() => gw.complete(gw.operations()[0]!.operationId, { state: State.APPLIED, outcome: Outcome.APPLIED }), 60);
    const res = await waiting;
    await client.getOperation({ operationId: res.completion.operationId });
    await client.awaitCompletion({ operationId: res.completion.operationId }, { timeoutMs: 500 });
    // The first slice ended, the SDK learnt the operation id and moved on to the watch stream.
    expect(gw.calls.updateConfig).toBeGreaterThanOrEqual(1);
    expect(gw.calls.getConfigUpdateOperation).toBe(1);
    expect(gw.calls.watchConfigUpdateOperations).toBeGreaterThanOrEqual(1);
    const total = Object.values(gw.calls).reduce((a, b) => a + b, 0);
    expect(gw.authorizations).toHaveLength(total);
    expect(new Set(gw.authorizations)).toEqual(new Set(["Bearer s3cret"]));
  });

  it("an async token function is called before every request and its current value is sent", async () => {
    const gw = gateway();
    let n = 0;
    const client = createConfigClient({
      ...FAST,
      transport: createRouterTransport(gw.routes),
      token: async () => {
        await new Promise((r) => setTimeout(r, 1));
        return `tok-${++n}`;
      },
    });
    const res = await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    await client.updateSettings({ sandbox: "dev", key: "k", value: true });
    await client.getOperation(res.handle);
    expect(gw.authorizations).toEqual(["Bearer tok-1", "Bearer tok-2", "Bearer tok-3"]);
  });

  it("a token function is consulted again for each retry", async () => {
    const gw = createFakeGateway({ token: "fresh" });
    gw.addSandbox("dev");
    // The commit, the question whether the gateway tracks operations (asked before resending a
    // commit that may have arrived), and the resend.
    const tokens = ["fresh", "fresh", "fresh"];
    gw.inject({ method: "updateConfig", code: Code.Unavailable });
    const client = createConfigClient({ ...FAST, transport: createRouterTransport(gw.routes), token: () => tokens.shift() ?? "none" });
    await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(gw.authorizations).toEqual(["Bearer fresh", "Bearer fresh", "Bearer fresh"]);
    expect(gw.calls).toMatchObject({ updateConfig: 2, getConfigUpdateOperation: 1 });
    expect(tokens).toEqual([]);
  });

  it("a client without a token sends no authorization header", async () => {
    const gw = gateway();
    const client = createConfigClient({ ...FAST, transport: createRouterTransport(gw.routes) });
    await client.updatePolicy({ sandbox: "dev", policy: samplePolicy() });
    expect(gw.authorizations).toEqual([null]);
  });

  it("a wrong token is rejected with UnauthenticatedError after a single request", async () => {
    const gw = gateway("right");
    const client = createConfigClient({ ...FAST, transport: createRouterTransport(gw.routes), token: "wrong" });
    const err = await rejectionOf(client.updatePolicy({ sandbox: "dev", policy: samplePolicy(), wait: true }));
    expect(err).toBeInstanceOf(UnauthenticatedError);
    expect((err as UnauthenticatedError).code).toBe("unauthenticated");
    expect(gw.calls.updateConfig).toBe(1);
    expect(gw.commits).toHaveLength(0);
    const missing = createConfigClient({ ...FAST, transport: createRouterTransport(gw.routes) });
    await expect(missing.getOperation({ operationId: "x" })).rejects.toBeInstanceOf(UnauthenticatedError);
  });
});

describe("refusing to send a token in clear text", () => {
  it("a token over plain http to a remote host throws InsecureTransportError at construction", () => {
    expect(() => createConfigClient({ baseUrl: "http://gateway.example.com", token: "t" })).toThrow(InsecureTransportError);
    let err: unknown;
    try {
      createConfigClient({ baseUrl: "http://10.0.0.5:8080", token: () => "t" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InsecureTransportError);
    expect((err as InsecureTransportError).code).toBe("insecure-transport");
    expect((err as InsecureTransportError).message).toContain("10.0.0.5:8080");
  });

  it("a Node transport created for a remote http URL is refused when a token is given", () => {
    const transport = createNodeTransport({ baseUrl: "http://gateway.example.com:8080" });
    expect(() => createConfigClient({ transport, token: "t" })).toThrow(InsecureTransportError);
    expect(() => createConfigClient({ transport })).not.toThrow();
    expect(() => createConfigClient({ transport, token: "t", allowInsecureToken: true })).not.toThrow();
  });

  it("an https baseUrl next to a remote http transport does not hide where the token really goes", () => {
    const transport = createNodeTransport({ baseUrl: "http://gateway.example.com:8080" });
    expect(() => createConfigClient({ baseUrl: "https://gateway.example.com", transport, token: "t" })).toThrow(
      InsecureTransportError,
    );
    const secure = createNodeTransport({ baseUrl: "https://gateway.example.com" });
    expect(() => createConfigClient({ baseUrl: "http://ignored.example.com", transport: secure, token: "t" })).not.toThrow();
  });

  it("loopback http and any https URL are accepted with a token", () => {
    for (const baseUrl of [
      "http://127.0.0.1:8080",
      "http://localhost:8080",
      "http://[::1]:8080",
      "https://gateway.example.com",
    ]) {
      expect(() => createConfigClient({ baseUrl, token: "t" }), baseUrl).not.toThrow();
    }
    expect(() => createConfigClient({ transport: createNodeTransport({ baseUrl: "https://gw.example.com" }), token: "t" })).not.toThrow();
  });

  it("allowInsecureToken permits a token over plain http to a remote host", () => {
    expect(() =>
      createConfigClient({ baseUrl: "http://gateway.example.com", token: "t", allowInsecureToken: true }),
    ).not.toThrow();
  });

  it("plain http to a remote host without a token is allowed", () => {
    expect(() => createConfigClient({ baseUrl: "http://gateway.example.com" })).not.toThrow();
  });

  it("a client with neither baseUrl nor transport is an InvalidArgumentError on baseUrl", () => {
    expect(() => createConfigClient({})).toThrow(expect.objectContaining({ code: "invalid-argument", field: "baseUrl" }));
  });
});
