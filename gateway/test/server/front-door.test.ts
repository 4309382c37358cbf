// The gateway's front door (issue 29, findings 3 and 7): a request without valid credentials is
// refused from its headers before its body is read, an open method's body is read under a small
// cap, failed authentications are logged without the credential, and /metrics needs a platform
// admin.

import * as http from "node:http";
import * as http2 from "node:http2";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { UNAUTHENTICATED_READ_MAX_BYTES } from "../../src/server.js";
import { envelope } from "../reliability/raw-wire.js";
import { largeUpdateConfig, sendGrpcBody, sendOverHttp1 } from "../reliability/unauthenticated-body.js";
import { startTestGateway, TOKENS, type TestGateway } from "../rpc/harness.js";

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway("sqlite", { limits: { maxMessageBytes: 16 * 1024 * 1024 } });
});
afterAll(async () => {
  await gw.close();
});

const BIG = 14.7 * 1024 * 1024;

describe("requests without valid credentials", () => {
  it("are refused over HTTP/2 before the gateway takes any of their body: ten 14.7 MiB UpdateConfig calls", async () => {
    const body = envelope(largeUpdateConfig(BIG));
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => sendGrpcBody(gw.url, body, i % 2 === 0 ? undefined : "not-a-token-of-this-gateway")));
    for (const a of answers) {
      expect(a.status).toBe(Code.Unauthenticated);
      // An HTTP/2 stream's initial window is 64 KiB: a server that read the body grants more.
      expect(a.bodyBytesTaken).toBeLessThanOrEqual(64 * 1024);
    }
    expect(answers.map((a) => a.message).sort()).toEqual([...Array(5).fill("invalid bearer token"), ...Array(5).fill("missing bearer token")]);
  });

  it("are refused over HTTP/1.1 before their body is through, and the connection is closed", async () => {
    const a = await sendOverHttp1(gw.url, largeUpdateConfig(BIG));
    expect(a.status).toBe(401);
    expect(a.message).toBe("missing bearer token");
    expect(a.bodyBytesTaken).toBeLessThan(a.bodyBytes);
  });

  it("with valid credentials, the same body is read and handled", async () => {
    const body = envelope(largeUpdateConfig(2 * 1024 * 1024));
    const a = await sendGrpcBody(gw.url, body, TOKENS.admin);
    expect(a.bodyBytesTaken).toBe(body.length);
    // Read, decoded and answered by the handler, which looked for the sandbox.
    expect(a).toMatchObject({ status: Code.InvalidArgument, message: "workspace_scope is required" });
  });

  it("an open method (Health) without credentials is read only up to 64 KiB; with a token the cap is the gateway's", async () => {
    const over = envelope(new Uint8Array(UNAUTHENTICATED_READ_MAX_BYTES + 1024).fill(0)); // unknown-field bytes are fine; the size is the point
    const path = "/openshell.v1.OpenShell/Health";
    const call = (token?: string) =>
      new Promise<number>((resolve, reject) => {
        const session = http2.connect(gw.url);
        session.on("error", reject);
        const stream = session.request({ ":method": "POST", ":path": path, "content-type": "application/grpc", te: "trailers", ...(token ? { authorization: `Bearer ${token}` } : {}) });
        // Settled by the status, wherever it comes: a server that stops reading may leave the
        // rest of our body unsent and the stream open.
        const settle = (h: http2.IncomingHttpHeaders) => {
          if (h["grpc-status"] === undefined) return;
          session.destroy();
          resolve(Number(h["grpc-status"]));
        };
        stream.on("response", settle);
        stream.on("trailers", settle);
        stream.on("error", () => undefined);
        stream.resume();
        stream.end(over);
      });
    // A run of zero bytes is no valid protobuf field: decoding fails, which shows it was read.
    expect(await call()).toBe(Code.ResourceExhausted);
    expect(await call(TOKENS.user)).toBe(Code.InvalidArgument);
  });

  it("are logged with the peer's address and the reason, never the credential", async () => {
    const token = "a-token-this-gateway-never-issued-7f3a";
    const a = await sendGrpcBody(gw.url, envelope(largeUpdateConfig(10)), token);
    expect(a.status).toBe(Code.Unauthenticated);
    const lines = gw
      .logs()
      .split("\n")
      .filter((l) => l.includes('"authentication failed"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toContainEqual(expect.objectContaining({ level: "warn", path: "/openshell.v1.OpenShell/UpdateConfig", reason: "invalid bearer token", peer: expect.stringMatching(/^127\.0\.0\.1:\d+$/) }));
    expect(gw.logs()).not.toContain(token);
  });

  it("are counted by method and code in the RPC metric, and in the authentication failures counter", async () => {
    const metrics = await get("/metrics", TOKENS.platform);
    expect(metrics.body).toMatch(/^openshell_gateway_rpc_requests_total\{method="UpdateConfig",code="unauthenticated"\} [1-9]\d*$/m);
    expect(metrics.body).toMatch(/^openshell_gateway_authentication_failures_total [1-9]\d*$/m);
  });

  it("to a method the gateway does not serve get 404 as before, without a label for the metric", async () => {
    const a = await sendGrpcBody(gw.url.replace(/\/$/, ""), envelope(new Uint8Array(0))).catch(() => undefined);
    expect(a).toBeDefined();
    const res = await get("/openshell.v1.OpenShell/NoSuchMethod");
    expect(res.status).toBe(404);
    expect((await get("/metrics", TOKENS.platform)).body).not.toContain("NoSuchMethod");
  });
});

describe("/metrics", () => {
  it("needs a platform admin: none 401, a user or a workspace admin 403, an admin of every workspace 200", async () => {
    expect((await get("/metrics")).status).toBe(401);
    expect((await get("/metrics", TOKENS.user)).status).toBe(403);
    expect((await get("/metrics", TOKENS.admin)).status).toBe(403);
    expect((await get("/metrics", TOKENS.supervisor)).status).toBe(403);
    const ok = await get("/metrics", TOKENS.platform);
    expect(ok.status).toBe(200);
    expect(ok.body).toContain("openshell_config_update_operations_pending");
  });

  it("refuses with a reason that names what it needs, and /healthz stays open", async () => {
    expect((await get("/metrics", TOKENS.user)).body).toBe("/metrics needs the credentials of a platform admin (an admin of every workspace)\n");
    expect(await get("/healthz")).toEqual({ status: 200, body: "ok" });
  });
});

function get(path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${gw.url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? -1, body }));
    });
    req.on("error", reject);
  });
}
