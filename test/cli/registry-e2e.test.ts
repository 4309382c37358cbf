// A newcomer with a stock OpenShell install: the built `openshell-config` with no flags, no URL and
// no token, only what the openshell CLI wrote under $XDG_CONFIG_HOME/openshell (active_gateway,
// gateways/openshell/metadata.json, the mTLS client bundle), against the reference gateway on
// HTTPS requiring client certificates (--tls-cert --tls-key --tls-client-ca, started by
// examples/local-stack.ts with tls: "mtls") and a reference supervisor. sandbox list, policy set
// --wait and operation get work; without the client key it is one line naming the file; the
// local stack's own system-registry entry (OPENSHELL_SYSTEM_GATEWAY_DIR + OPENSHELL_GATEWAY) works
// too; a CA that is not the gateway's fails, and --gateway-insecure gets past it with a warning.

import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { createTestPki, writeMtlsBundle } from "../../examples/tls/pki.js";
import { startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { build, policyYaml, runBinary, waitReady, type Run } from "./harness.js";

const web = "stock-web";
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

let stack: LocalStack;
let dir: string;
/** A stock install's layout: XDG_CONFIG_HOME with the user registry. */
let xdg: string;
let emptySystem: string;

function cli(args: readonly string[], env: Record<string, string | undefined> = {}): Promise<Run> {
  return runBinary(args, dir, { PATH: process.env.PATH, HOME: dir, XDG_CONFIG_HOME: xdg, OPENSHELL_SYSTEM_GATEWAY_DIR: emptySystem, XDG_STATE_HOME: join(dir, "state"), ...env });
}

/** Writes the stock install's user registry under `root` (an XDG_CONFIG_HOME): active `openshell`, its metadata and bundle. */
function writeStockRegistry(root: string, bundle: { ca: string; cert: string; key: string }): string {
  const gw = join(root, "openshell", "gateways", "openshell");
  mkdirSync(gw, { recursive: true, mode: 0o700 });
  writeFileSync(join(root, "openshell", "active_gateway"), "openshell");
  const port = Number(new URL(stack.url).port);
  writeFileSync(join(gw, "metadata.json"), JSON.stringify({ name: "openshell", gateway_endpoint: stack.url, is_remote: false, gateway_port: port }, null, 2));
  return writeMtlsBundle(join(gw, "mtls"), { cert: bundle.ca, key: "" }, { cert: bundle.cert, key: bundle.key });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openshell-cli-stock-"));
  xdg = join(dir, "xdg");
  emptySystem = join(dir, "no-system-registry");
  const [started] = await Promise.all([startLocalStack({ sandboxes: [web], tls: "mtls" }), build()]);
  stack = started;
  const client = stack.clientTls!;
  writeStockRegistry(xdg, { ca: client.ca, cert: client.cert!, key: client.key! });
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, tls: client }) }).raw(OpenShell);
  const policy = { version: 1, filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] } };
  await raw.createSandbox({ name: web, spec: { policy }, workspaceScope: workspaceScope() });
  stack.startSupervisor({ sandbox: web });
  await waitReady(async (name) => (await raw.getSandbox({ name, workspaceScope: workspaceScope() })).sandbox?.status?.phase, [web], stack.logFile);
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a stock install's registry, no flags", () => {
  it("sandbox list reaches the mutual-TLS gateway with the active gateway's bundle", async () => {
    const r = await cli(["sandbox", "list"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^${web}\\s+ready\\s`, "m"));
  });

  it("sandbox list works over Connect and gRPC-Web too (--protocol), with the same bundle", async () => {
    for (const protocol of ["connect", "grpc-web"]) {
      const r = await cli(["sandbox", "list", "--protocol", protocol]);
      expect(r.stderr, protocol).toBe("");
      expect(r.code, protocol).toBe(0);
      expect(r.stdout, protocol).toMatch(new RegExp(`^${web}\\s+ready\\s`, "m"));
    }
  });

  it("policy set --wait commits and waits, and operation get shows the operation", async () => {
    const file = join(dir, "policy.yaml");
    writeFileSync(file, policyYaml({ github: { host: "api.github.com" } }));
    const set = await cli(["policy", "set", "-s", web, "-f", file, "--wait", "-o", "json"]);
    expect(set.stderr).toBe("");
    expect(set.code).toBe(0);
    const doc = JSON.parse(set.stdout) as { operationId: string; completion: { state: string } };
    expect(doc.operationId).toMatch(UUID);
    expect(doc.completion.state).toBe("applied");
    const get = await cli(["operation", "get", doc.operationId]);
    expect(get.code).toBe(0);
    expect(get.stdout).toContain(web);
    expect(get.stdout).toMatch(/applied/);
  });

  it("gateway current names the active gateway, its bundle files as present, and no secret", async () => {
    const r = await cli(["gateway", "current", "-o", "json"]);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout) as { gateway: { name: string; from: string }; endpoint: string; files: { role: string; exists: boolean }[] };
    expect(doc.gateway).toEqual({ name: "openshell", from: "active", registry: "user" });
    expect(doc.endpoint).toBe(stack.url);
    expect(doc.files.filter((f) => ["ca", "cert", "key"].includes(f.role)).every((f) => f.exists)).toBe(true);
    expect(r.stdout).not.toContain("PRIVATE KEY");
  });
});

describe("what goes wrong", () => {
  it("without the client key: exit 2 and one line naming the file", async () => {
    const home = join(dir, "no-key");
    cpSync(xdg, home, { recursive: true });
    const key = join(home, "openshell", "gateways", "openshell", "mtls", "tls.key");
    rmSync(key);
    const r = await cli(["sandbox", "list"], { XDG_CONFIG_HOME: home });
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`error: no mTLS client key at ${key}\n`);
    expect(r.code).toBe(2);
  });

  it("a bundle whose CA is not the gateway's fails in one line; --gateway-insecure gets through with a warning", async () => {
    const pki = await createTestPki();
    const home = join(dir, "other-ca");
    cpSync(xdg, home, { recursive: true });
    writeFileSync(join(home, "openshell", "gateways", "openshell", "mtls", "ca.crt"), pki.otherCa.cert);
    const caFile = join(home, "openshell", "gateways", "openshell", "mtls", "ca.crt");
    const refused = await cli(["sandbox", "list"], { XDG_CONFIG_HOME: home });
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toBe(
      `error: the gateway's certificate (${new URL(stack.url).host}) is not signed by a trusted CA (self-signed certificate in certificate chain): ${caFile} must hold the CA that signed it (--gateway-insecure skips this check)\n`,
    );
    const insecure = await cli(["sandbox", "list", "--gateway-insecure"], { XDG_CONFIG_HOME: home });
    expect(insecure.code).toBe(0);
    expect(insecure.stdout).toContain(web);
    // One line: the SDK's own process warning is not printed beside it.
    expect(insecure.stderr).toBe(`warning: --gateway-insecure: the certificate of ${stack.url} is not verified; anyone on the way can pose as the gateway\n`);
  });

  it("a client certificate from another CA is refused by the gateway: one line naming the certificate file, for raw and SDK calls alike", async () => {
    const pki = await createTestPki();
    const home = join(dir, "other-client");
    cpSync(xdg, home, { recursive: true });
    const mtls = join(home, "openshell", "gateways", "openshell", "mtls");
    writeMtlsBundle(mtls, { cert: stack.clientTls!.ca, key: "" }, pki.otherClient);
    for (const args of [["sandbox", "list"], ["policy", "get", "-s", web]]) {
      const r = await cli(args, { XDG_CONFIG_HOME: home });
      expect(r.stderr).toBe(`error: the gateway rejected the client certificate (UNABLE_TO_VERIFY_LEAF_SIGNATURE): ${join(mtls, "tls.crt")} must be issued by a CA the gateway trusts\n`);
      expect(r.code).toBe(1);
    }
  });

  it("a key that is not the certificate's: exit 2, one line naming both files", async () => {
    const pki = await createTestPki();
    const home = join(dir, "wrong-key");
    cpSync(xdg, home, { recursive: true });
    const mtls = join(home, "openshell", "gateways", "openshell", "mtls");
    writeFileSync(join(mtls, "tls.key"), pki.client.key, { mode: 0o600 });
    const r = await cli(["sandbox", "list"], { XDG_CONFIG_HOME: home });
    expect(r.stderr).toBe(
      `error: the client key does not match the client certificate (${join(mtls, "tls.key")} is not the key of ${join(mtls, "tls.crt")}): pass the key issued with that certificate\n`,
    );
    expect(r.code).toBe(2);
  });

  it("the local stack's system-registry entry works through OPENSHELL_SYSTEM_GATEWAY_DIR and OPENSHELL_GATEWAY", async () => {
    const r = await cli(["sandbox", "list"], { XDG_CONFIG_HOME: join(dir, "empty-xdg"), OPENSHELL_SYSTEM_GATEWAY_DIR: stack.registry!.dir, OPENSHELL_GATEWAY: stack.registry!.name });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(web);
  });
});
