// The `openshell-gateway` process with TLS: HTTPS with client certificates, OIDC and a sandbox
// listener from the command line alone, and startup errors that are one plain line naming the
// file (or port) and exit 1.

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { workspaceScope } from "openshell-config/raw";
import { startOidcIssuer, type OidcIssuer } from "../../../test/support/oidc-issuer.js";
import { run } from "./gateway-process.js";
import { openShell } from "./harness.js";
import { credentials, h1Request, testPki, tlsTransports, type TestPki } from "./tls-support.js";

let dir: string;
let pki: TestPki;
const files = { ca: "", cert: "", key: "", clientKey: "" };
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gateway-tls-cli-"));
  pki = await testPki();
  const write = async (name: string, text: string) => {
    const path = join(dir, name);
    await writeFile(path, text, { mode: 0o600 });
    return path;
  };
  files.ca = await write("ca.crt", pki.ca.cert);
  files.cert = await write("tls.crt", pki.server.cert);
  files.key = await write("tls.key", pki.server.key);
  files.clientKey = await write("client.key", pki.client.key);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const serve = ["serve", "--db", "sqlite::memory:", "--port", "0"];

function portClosed(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(false);
    });
    socket.once("error", () => resolve(true));
  });
}

describe("openshell-gateway with TLS", () => {
  let issuer: OidcIssuer;
  beforeAll(async () => {
    issuer = await startOidcIssuer({ audience: "gw" });
  });
  afterAll(() => issuer?.close());

  it("serves HTTPS with client certificates, OIDC and a sandbox listener from flags alone, and stops both listeners on SIGTERM", async () => {
    const gw = run([
      ...serve,
      "--tls-cert", files.cert, "--tls-key", files.key, "--tls-client-ca", files.ca,
      "--oidc-issuer", issuer.issuer, "--oidc-audience", "gw",
      "--sandbox-port", "0",
    ]);
    try {
      const listening = await gw.waitFor(/listening on/);
      const url = listening.url as string;
      const sandboxUrl = listening.sandboxUrl as string;
      expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(sandboxUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(listening.msg).toBe(`openshell-gateway listening on ${url}; supervisors on ${sandboxUrl}`);
      expect(gw.lines.join("\n")).toContain("OIDC issuer discovered");

      const withCert = openShell(tlsTransports(url, credentials(pki, pki.client))["gRPC over HTTP/2"]!);
      expect((await withCert.listSandboxes({ workspaceScope: workspaceScope() })).sandboxes).toEqual([]);
      const noCert = openShell(tlsTransports(url, credentials(pki))["Connect over HTTP/1.1"]!);
      const refused = await noCert.listSandboxes({ workspaceScope: workspaceScope() }).catch((e: unknown) => ConnectError.from(e));
      expect(refused).toMatchObject({ code: Code.Unauthenticated, rawMessage: "client certificate required: this gateway accepts only clients with a certificate from its client CA" });
      expect(await h1Request(url, credentials(pki), { path: "/healthz" })).toMatchObject({ status: 200, body: "ok" });

      // An OIDC user on the mutual-TLS connection: the token decides the principal.
      const token = await issuer.mintToken({ sub: "bob", roles: ["openshell-user"] });
      const oidcUser = openShell(
        createGrpcTransport({ baseUrl: url, nodeOptions: { ...credentials(pki, pki.client) }, interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))] }),
      );
      const denied = await oidcUser.updateConfig({ sandbox: "dev", workspaceScope: workspaceScope() }).catch((e: unknown) => ConnectError.from(e));
      expect(denied).toMatchObject({ code: Code.PermissionDenied });

      const ports = [Number(new URL(url).port), Number(new URL(sandboxUrl).port)];
      gw.child.kill("SIGTERM");
      expect(await gw.exit).toBe(0);
      for (const port of ports) expect(await portClosed(port)).toBe(true);
      expect(gw.lines.join("\n")).not.toContain(token);
    } finally {
      gw.child.kill("SIGKILL");
    }
  });
});

describe("openshell-gateway startup errors", () => {
  // Each message is tested in-process (tls-files.test.ts, auth-file tests); here, that the
  // process prints one plain line rather than a JSON log line with a stack.
  it("are one plain line on stderr naming the file or port, with exit code 1", { timeout: 60_000 }, async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, "127.0.0.1", resolve));
    const taken = (blocker.address() as net.AddressInfo).port;
    const cases: [string[], string][] = [
      [[...serve, "--no-auth", "--tls-cert", files.cert, "--tls-key", files.clientKey], `--tls-key ${files.clientKey}: does not match the certificate in --tls-cert ${files.cert}`],
      [["serve", "--db", "sqlite::memory:", "--port", String(taken), "--no-auth"], `cannot listen on 127.0.0.1:${taken}: address already in use: another process listens there (another gateway?); stop it or choose another --port (EADDRINUSE)`],
    ];
    try {
      const runs = cases.map(([args]) => run(args));
      for (const [i, r] of runs.entries()) {
        expect(await r.exit, cases[i]![1]).toBe(1);
        const errors = r.lines.filter((l) => l.startsWith("openshell-gateway: "));
        expect(errors, r.lines.join("\n")).toEqual([`openshell-gateway: ${cases[i]![1]}`]);
        expect(r.lines.join("\n")).not.toMatch(/"level":"fatal"|\n\s+at /);
      }
    } finally {
      blocker.close();
    }
  });
});
