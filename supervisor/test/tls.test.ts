// https gateways: `--ca FILE` on the command line, and the supervisor's transport verifying a
// gateway's certificate against the system roots plus that CA, over a real TLS HTTP/2 server.

import { writeFileSync, mkdtempSync, rmSync } from "node:fs";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HealthResponseSchema, OpenShell, ServiceStatus } from "openshell-config/raw";
import { createTestPki, type TestPki } from "../../examples/tls/pki.js";
import { parseCommandLine, UsageError } from "../src/config.js";
import { createSupervisorTransport } from "../src/fleet.js";

let pki: TestPki;
let dir: string;
let server: http2.Http2SecureServer;
let url: string;
const sessions = new Set<http2.ServerHttp2Session>();

beforeAll(async () => {
  pki = await createTestPki();
  dir = mkdtempSync(join(tmpdir(), "supervisor-tls-"));
  writeFileSync(join(dir, "ca.crt"), pki.ca.cert);
  writeFileSync(join(dir, "not-pem.crt"), "hello");
  const rpc = connectNodeAdapter({
    routes: (router) => router.service(OpenShell, { health: () => create(HealthResponseSchema, { status: ServiceStatus.HEALTHY, version: "tls-test" }) }),
  });
  server = http2.createSecureServer({ cert: pki.server.cert, key: pki.server.key, allowHTTP1: true }, rpc);
  server.on("session", (session) => sessions.add(session.once("close", () => sessions.delete(session))));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  // The clients' HTTP/2 connections stay open for reuse; close() would wait for them.
  for (const session of sessions) session.destroy();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function usage(argv: string[]): string {
  try {
    parseCommandLine(argv, {});
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error("expected a usage error");
}

describe("an https gateway", () => {
  it("is reached through a transport that trusts the CA given with --ca", async () => {
    const c = parseCommandLine(["--gateway", url, "--sandbox", "dev", "--ca", join(dir, "ca.crt")], {});
    if (c.kind !== "run") throw new Error("expected run");
    expect(c.config.ca).toBe(pki.ca.cert);
    const client = createClient(OpenShell, createSupervisorTransport(url, c.config.ca));
    expect((await client.health({})).version).toBe("tls-test");
  });

  it("is refused without the CA: its certificate is verified, not trusted blindly", async () => {
    const client = createClient(OpenShell, createSupervisorTransport(url));
    await expect(client.health({})).rejects.toThrow(/self[- ]signed|unable to verify|certificate/i);
  });

  it("--ca is refused with a line naming the file when it is missing or not PEM, and without an https gateway", () => {
    expect(usage(["--gateway", url, "--sandbox", "dev", "--ca", join(dir, "missing.crt")])).toMatch(/^--ca \S+missing\.crt: no such file/);
    expect(usage(["--gateway", url, "--sandbox", "dev", "--ca", join(dir, "not-pem.crt")])).toMatch(/^--ca \S+not-pem\.crt: not a PEM certificate/);
    expect(usage(["--gateway", "http://127.0.0.1:1", "--sandbox", "dev", "--ca", join(dir, "ca.crt")])).toMatch(/^--ca needs an https:\/\/ --gateway/);
  });

  it("reads --ca from OPENSHELL_SUPERVISOR_CA too", () => {
    const c = parseCommandLine(["--gateway", url, "--sandbox", "dev"], { OPENSHELL_SUPERVISOR_CA: join(dir, "ca.crt") });
    expect(c.kind === "run" && c.config.ca).toBe(pki.ca.cert);
  });
});
