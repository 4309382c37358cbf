// The whole gateway over TLS with client certificates and a sandbox listener: certificate
// principals meet the real role checks (UpdateConfig, ListSandboxes), supervisors use their
// tokens on the sandbox listener without a certificate, which serves nothing else, and shutdown
// closes both listeners.

import * as net from "node:net";
import { create } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SupervisorMessageSchema, workspaceScope, type SupervisorMessage } from "openshell-config/raw";
import { parseAuthFile } from "../../src/auth/auth-file.js";
import { policy } from "../rpc/fixtures.js";
import { openShell, rpcFailure as failure } from "./harness.js";
import { startTlsTestGateway, type TlsTestGateway } from "./tls-gateway.js";
import { credentials, h1Request, h2Request, serverTls, testPki, tlsTransports, type TestPki } from "./tls-support.js";

const SUPERVISOR = "supervisor-dev-token-0123456789";
const ADMIN = "admin-token-0123456789";
const auth = parseAuthFile({
  tokens: [
    { token: ADMIN, principal: "root", role: "admin", workspaces: "*" },
    { token: SUPERVISOR, principal: "supervisor:dev", role: "supervisor", workspace: "default", sandbox: "dev" },
  ],
  clientCertificates: [{ subject: "CN=openshell-user", principal: "bob", role: "user", workspaces: ["default"] }],
});

let pki: TestPki;
let gw: TlsTestGateway;
beforeAll(async () => {
  pki = await testPki();
  gw = await startTlsTestGateway({ auth, tls: serverTls(pki, { clientCa: true }), sandboxListener: true });
});
afterAll(() => gw?.close());

const main = (client = pki.client) => openShell(tlsTransports(gw.server.url, credentials(pki, client))["gRPC over HTTP/2"]!);
const sandboxTransports = () => tlsTransports(gw.server.sandboxUrl!, credentials(pki));


/** Opens a supervisor session and returns the case of the gateway's first message. */
async function firstSupervisorMessage(client: ReturnType<typeof openShell>, token: string): Promise<string | undefined> {
  const abort = new AbortController();
  async function* hello(): AsyncGenerator<SupervisorMessage> {
    yield create(SupervisorMessageSchema, {
      payload: { case: "hello", value: { sandboxId: "dev", instanceId: "i-1", connectionEpoch: 1n, supportsConfigSnapshots: true, supportsConfigApply: true } },
    });
    await new Promise((resolve) => abort.signal.addEventListener("abort", resolve));
  }
  try {
    for await (const msg of client.connectSupervisor(hello(), { headers: { authorization: `Bearer ${token}` }, signal: abort.signal })) {
      return msg.payload.case;
    }
    return undefined;
  } finally {
    abort.abort();
  }
}

describe("a gateway with client certificates and a sandbox listener", () => {
  it("serves https:// URLs on two different ports", () => {
    expect(gw.server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(gw.server.sandboxUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(gw.server.sandboxPort).not.toBe(gw.server.port);
  });

  it("lets the default certificate (the platform admin) commit, and a certificate mapped to a user only read", async () => {
    const admin = main(pki.client);
    await admin.createSandbox({ name: "dev", labels: {}, spec: { policy: policy(), template: { image: "ghcr.io/example/agent:1" } }, workspaceScope: workspaceScope() });
    const committed = await admin.updateConfig({ sandbox: "dev", policy: policy({ a: "a.example.com" }), workspaceScope: workspaceScope() });
    expect(committed.operation?.operationId).toBeTruthy();

    const user = main(pki.client2);
    const listed = await user.listSandboxes({ workspaceScope: workspaceScope() });
    expect(listed.sandboxes.map((s) => s.metadata?.name)).toEqual(["dev"]);
    expect(await failure(user.updateConfig({ sandbox: "dev", policy: policy({ b: "b.example.com" }), workspaceScope: workspaceScope() }))).toEqual({
      code: Code.PermissionDenied,
      message: "this method requires the admin role",
    });
  });

  it("serves a supervisor's token on the sandbox listener without a client certificate, on every protocol", async () => {
    for (const [name, transport] of Object.entries(sandboxTransports())) {
      const sup = openShell(transport);
      const config = await sup.getSandboxConfig({ name: "dev" }, { headers: { authorization: `Bearer ${SUPERVISOR}` } });
      expect(config.version, name).toBeGreaterThanOrEqual(1);
    }
    expect(await firstSupervisorMessage(openShell(sandboxTransports()["gRPC over HTTP/2"]!), SUPERVISOR)).toBe("sessionAccepted");
  });

  it("keeps serving supervisors on the main listener (with a client certificate and their token)", async () => {
    expect(await firstSupervisorMessage(main(pki.client), SUPERVISOR)).toBe("sessionAccepted");
  });

  it("refuses every other method on the sandbox listener with PERMISSION_DENIED naming it, even to an admin", async () => {
    for (const [name, transport] of Object.entries(sandboxTransports())) {
      const client = openShell(transport);
      const headers = { authorization: `Bearer ${ADMIN}` };
      const refused = await failure(client.updateConfig({ sandbox: "dev", policy: policy({ c: "c.example.com" }), workspaceScope: workspaceScope() }, { headers }));
      expect(refused.code, name).toBe(Code.PermissionDenied);
      expect(refused.message, name).toBe(
        "UpdateConfig is not served on the sandbox listener, which serves supervisors only (ConnectSupervisor, GetSandboxConfig, ReportPolicyStatus, Health); call the gateway's main port",
      );
      expect((await failure(client.listSandboxes({ workspaceScope: workspaceScope() }, { headers }))).code, name).toBe(Code.PermissionDenied);
    }
    const revisions = await main().listSandboxPolicies({ sandbox: "dev", workspaceScope: workspaceScope() });
    expect(revisions.revisions).toHaveLength(2);
  });

  it("answers /healthz on the sandbox listener and serves no /metrics there", async () => {
    for (const request of [h1Request, h2Request]) {
      expect(await request(gw.server.sandboxUrl!, credentials(pki), { path: "/healthz" })).toMatchObject({ status: 200, body: "ok" });
      expect((await request(gw.server.sandboxUrl!, credentials(pki), { path: "/metrics" })).status).toBe(404);
    }
  });

  it("wrote no bearer token into any log line (logged at debug)", () => {
    expect(gw.logs()).toContain("supervisor session");
    expect(gw.logs()).not.toContain(SUPERVISOR);
    expect(gw.logs()).not.toContain(ADMIN);
  });
});

describe("shutdown with a sandbox listener", () => {
  it("closes both listeners", async () => {
    const p = await testPki();
    const g = await startTlsTestGateway({ auth, tls: serverTls(p), sandboxListener: true });
    const ports = [g.server.port, g.server.sandboxPort!];
    await g.close();
    for (const port of ports) {
      const refused = await new Promise<boolean>((resolve) => {
        const socket = net.connect(port, "127.0.0.1");
        socket.once("connect", () => {
          socket.destroy();
          resolve(false);
        });
        socket.once("error", () => resolve(true));
      });
      expect(refused).toBe(true);
    }
  });

  it("serves a cleartext sandbox listener when the gateway has no TLS", async () => {
    const g = await startTlsTestGateway({ auth, sandboxListener: true });
    try {
      expect(g.server.sandboxUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const res = await fetch(`${g.server.sandboxUrl}/openshell.v1.OpenShell/ListSandboxes`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
        body: "{}",
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { code: string }).code).toBe("permission_denied");
    } finally {
      await g.close();
    }
  });
});

describe("an HTTP/1.1 refusal to a client still sending its body", () => {
  /** Sends a chunked POST in parts, `gapMs` apart; resolves with what came back and whether any write failed. */
  function chunkedPost(port: number, parts: readonly Buffer[], gapMs: number) {
    return new Promise<{ response: string; writeFailed: boolean; answeredAfterBody: boolean }>((resolve) => {
      const socket = net.connect(port, "127.0.0.1");
      let response = "";
      let writeFailed = false;
      let bodyDone = false;
      let answeredAfterBody: boolean | undefined;
      socket.on("data", (d: Buffer) => {
        answeredAfterBody ??= bodyDone;
        response += d.toString("latin1");
      });
      socket.on("error", () => (writeFailed = true));
      socket.on("close", () => resolve({ response, writeFailed, answeredAfterBody: answeredAfterBody ?? false }));
      socket.write(`POST /openshell.v1.OpenShell/ListSandboxes HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nauthorization: Bearer ${ADMIN}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n`);
      void (async () => {
        for (const part of [...parts, Buffer.alloc(0)]) {
          await new Promise((r) => setTimeout(r, gapMs));
          if (socket.destroyed) return;
          const chunk = Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from("\r\n")]);
          socket.write(chunk, (err) => {
            if (err) writeFailed = true;
          });
        }
        bodyDone = true;
      })();
    });
  }

  it("waits for a small chunked body, so the client reads the answer instead of a failed write", async () => {
    const g = await startTlsTestGateway({ auth, sandboxListener: true });
    try {
      const r = await chunkedPost(g.server.sandboxPort!, [Buffer.from("{"), Buffer.from("}")], 100);
      expect(r.writeFailed).toBe(false);
      expect(r.answeredAfterBody).toBe(true);
      expect(r.response).toMatch(/^HTTP\/1\.1 403 /);
      expect(r.response).toContain('"code":"permission_denied"');
    } finally {
      await g.close();
    }
  });

  it("answers at once when more than 64 KiB of a chunked body arrive, without reading the rest", async () => {
    const g = await startTlsTestGateway({ auth, sandboxListener: true });
    try {
      // 70 KiB, then the client holds the rest for 3 s: the answer does not wait for it.
      const started = Date.now();
      const answered = new Promise<number>((resolve) => {
        const socket = net.connect(g.server.sandboxPort!, "127.0.0.1");
        socket.on("data", () => resolve(Date.now() - started));
        socket.on("error", () => {});
        const big = Buffer.alloc(70 * 1024, 0x20);
        socket.write(`POST /openshell.v1.OpenShell/ListSandboxes HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n${big.length.toString(16)}\r\n`);
        socket.write(big);
        setTimeout(() => socket.destroy(), 3_000);
      });
      // Long before the 3 s the client holds the rest for (room for a loaded machine).
      expect(await answered).toBeLessThan(2_000);
    } finally {
      await g.close();
    }
  });
});
