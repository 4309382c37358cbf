// --no-auth is for a gateway on this machine only (issue 29, finding 5): the command line refuses
// it on an address that is not loopback, a server refuses to start so, and a running one answers
// only requests addressed to a loopback name (against DNS rebinding from a browser page).

import * as http from "node:http";
import * as http2 from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNoAuthInterceptor } from "../../src/auth/interceptor.js";
import { parseCommandLine, UsageError } from "../../src/config.js";
import { hostOfAuthority, isLoopbackName } from "../../src/http/loopback-host.js";
import { createLogger } from "../../src/observability/logger.js";
import { createMetrics } from "../../src/observability/metrics.js";
import { startServer, type RunningServer } from "../../src/server.js";
import { testRoutes } from "./harness.js";

const REFUSAL = (host: string) =>
  `Host ${JSON.stringify(host)} is not a loopback name: this gateway runs without authentication (--no-auth) and answers only requests addressed to localhost, 127.0.0.1 or [::1]`;

describe("--no-auth on the command line", () => {
  const parse = (host: string) => parseCommandLine(["serve", "--db", "sqlite::memory:", "--port", "1", "--no-auth", "--host", host]);

  it("is refused with a usage error on an address that is not loopback", () => {
    for (const host of ["0.0.0.0", "::", "10.1.2.3", "192.168.1.10", "gateway.example.com", "localhost.example.com"]) {
      let err: unknown;
      try {
        parse(host);
      } catch (e) {
        err = e;
      }
      expect(err, host).toBeInstanceOf(UsageError);
      expect((err as Error).message.split("\n")[0]).toBe(
        `--no-auth needs a loopback --host (127.0.0.1, another 127.x address, ::1 or localhost): on ${JSON.stringify(host)} anyone who reaches the port would be an admin`,
      );
    }
  });

  it("is accepted on 127.0.0.1, any 127.x address, ::1 and localhost", () => {
    for (const host of ["127.0.0.1", "127.0.0.2", "::1", "localhost", "LOCALHOST"]) expect(parse(host)).toMatchObject({ kind: "serve", config: { host, auth: { mode: "none" } } });
  });
});

describe("a server without authentication", () => {
  it("does not start on an address that is not loopback", async () => {
    await expect(
      startServer({ host: "0.0.0.0", port: 0, routes: testRoutes({ inFlight: 0, maxInFlight: 0, aborted: 0 }), interceptors: [createNoAuthInterceptor()], logger: createLogger({ level: "silent" }), metricsRegistry: createMetrics().registry }),
    ).rejects.toThrow('a gateway without authentication listens on loopback only; "0.0.0.0" is not a loopback address');
  });

  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ port: 0, routes: testRoutes({ inFlight: 0, maxInFlight: 0, aborted: 0 }), interceptors: [createNoAuthInterceptor()], logger: createLogger({ level: "silent" }), metricsRegistry: createMetrics().registry });
  });
  afterAll(async () => {
    await server.close({ graceMs: 200 });
  });

  const h1 = (host: string, path = "/healthz") =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.get({ host: "127.0.0.1", port: server.port, path, headers: { host } }, (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? -1, body }));
      });
      req.on("error", reject);
    });

  it("refuses a request whose Host is another name, as a rebinding page would send, on HTTP/1.1", async () => {
    expect(await h1("attacker.example")).toEqual({ status: 403, body: `${REFUSAL("attacker.example")}\n` });
    expect((await h1("attacker.example:8080", "/metrics")).status).toBe(403);
    expect((await h1("192.168.1.10")).status).toBe(403);
  });

  it("refuses an RPC whose :authority is another name, on HTTP/2, with PERMISSION_DENIED", async () => {
    const session = http2.connect(server.url);
    try {
      const status = await new Promise<{ grpc: string | undefined; message: string | undefined }>((resolve, reject) => {
        const s = session.request({ ":method": "POST", ":path": "/openshell.v1.OpenShell/Health", ":authority": "rebound.attacker.example:80", "content-type": "application/grpc", te: "trailers" });
        s.on("response", (h) => resolve({ grpc: h["grpc-status"] as string | undefined, message: h["grpc-message"] as string | undefined }));
        s.on("error", reject);
        s.end();
      });
      expect(status.grpc).toBe("7");
      expect(decodeURIComponent(status.message ?? "")).toBe(REFUSAL("rebound.attacker.example:80"));
    } finally {
      session.close();
    }
  });

  it("answers requests addressed to localhost, 127.x and [::1], with or without a port", async () => {
    for (const host of ["localhost", `localhost:${server.port}`, `127.0.0.1:${server.port}`, "127.9.9.9", `[::1]:${server.port}`, "LocalHost."]) {
      expect(await h1(host), host).toEqual({ status: 200, body: "ok" });
    }
  });
});

describe("loopback names", () => {
  it("are localhost, 127.0.0.0/8 and ::1 (also written out or IPv4-mapped), and nothing else", () => {
    for (const h of ["localhost", "127.0.0.1", "127.255.0.3", "::1", "0:0:0:0:0:0:0:1", "::ffff:127.0.0.1"]) expect(isLoopbackName(h), h).toBe(true);
    for (const h of ["0.0.0.0", "::", "128.0.0.1", "10.0.0.1", "localhost.attacker.example", "attacker.localhost.example", "::ffff:10.0.0.1", ""]) expect(isLoopbackName(h), h).toBe(false);
  });

  it("are read from Host and :authority values, which may carry a port; malformed values have none", () => {
    expect(hostOfAuthority("localhost:8080")).toBe("localhost");
    expect(hostOfAuthority("[::1]:8080")).toBe("::1");
    expect(hostOfAuthority("[::1]")).toBe("::1");
    expect(hostOfAuthority("127.0.0.1")).toBe("127.0.0.1");
    expect(hostOfAuthority("::1")).toBeUndefined();
    expect(hostOfAuthority("localhost:80@attacker.example")).toBeUndefined();
    expect(hostOfAuthority("[::1]x")).toBeUndefined();
    expect(hostOfAuthority("")).toBeUndefined();
  });
});
