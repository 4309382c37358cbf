// The local stack on mutual TLS, as a stock OpenShell install runs its gateway, through real
// processes: a verified client certificate is the platform admin (no token), a client without one
// is refused, supervisors of a fleet bootstrap over the sandbox listener (which asks them for no
// certificate) with `--ca`, and the stack writes the upstream registry entry a client finds it by.
// Also the certificates' reuse across starts. One stack for the whole file.

import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient, TlsError } from "openshell-config";
import { createNodeTransport, readMtlsBundle } from "openshell-config/transport/node";
import { OpenShell, SandboxPhase, workspaceScope } from "openshell-config/raw";
import { LOCAL_GATEWAY_NAME } from "../../examples/local-stack.js";
import { ensureStackCertificates } from "../../examples/tls-stack.js";
import { createTestPki } from "../../examples/tls/pki.js";
import { fleetNames, policy, startE2EStack, type E2EStack } from "./stack.js";
import { desiredVersion, WIRES } from "./tls-support.js";

const [first, second] = fleetNames("mtls-", 2) as [string, string];
const base = { github: { host: "api.github.com" } };
const DAY_MS = 86_400_000;
const scratch: string[] = [];

let stack: E2EStack;

const mode = (path: string) => statSync(path).mode & 0o777;

beforeAll(async () => {
  stack = await startE2EStack({ sandboxes: [first, second], tls: "mtls" });
  for (const name of [first, second]) await stack.createSandbox(name, policy(base));
  stack.startSupervisor({ fleet: { prefix: "mtls-", count: 2 } });
  await Promise.all([first, second].map((n) => stack.waitPhase(n, SandboxPhase.READY, 30_000)));
}, 60_000);

afterAll(async () => {
  await stack?.stop();
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe("the local stack on mutual TLS", () => {
  it.each(WIRES)("the SDK presenting the client certificate commits a waited update over $name with no token and gets applied", async ({ options }) => {
    const client = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, ...options, tls: stack.clientTls! }) });
    const before = stack.effective(first)!.revision!.policyVersion!;
    const res = await client.updatePolicy({ sandbox: first, policy: policy({ ...base, [`rule${before}`]: { host: `h${before}.example.com` } }), wait: { timeoutMs: 10_000 } });
    expect(res.completion, `see ${stack.logFile}`).toMatchObject({ state: "applied", outcome: "applied" });
    expect(stack.effective(first)?.revision?.policyVersion).toBe(before + 1);
  });

  it("a client without a certificate is told the gateway requires one, and nothing is committed", async () => {
    const client = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, tls: { ca: stack.clientTls!.ca } }), token: stack.adminToken });
    const before = await desiredVersion(stack.raw, second);
    const err = await client.updatePolicy({ sandbox: second, policy: policy({ ...base, never: { host: "never.example.com" } }) }).catch((e: unknown) => e);
    // The gateway answers UNAUTHENTICATED "client certificate required: …"; the SDK says what to do.
    expect(err).toBeInstanceOf(TlsError);
    expect((err as TlsError).reason).toBe("client-certificate-required");
    expect((err as TlsError).message).toMatch(/^the gateway requires a client certificate: pass tls\.cert and tls\.key/);
    expect(ConnectError.from((err as TlsError).cause).rawMessage).toMatch(/^client certificate required/);
    expect(await desiredVersion(stack.raw, second)).toBe(before);
  });

  it("a client certificate from another CA is refused, naming why, and nothing is committed", async () => {
    const other = await createTestPki();
    const client = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, tls: { ca: stack.clientTls!.ca, ...other.otherClient } }) });
    const before = await desiredVersion(stack.raw, second);
    const err = await client.updatePolicy({ sandbox: second, policy: policy({ ...base, never: { host: "never.example.com" } }) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TlsError);
    expect((err as TlsError).reason).toBe("client-certificate-rejected");
    expect(ConnectError.from((err as TlsError).cause).rawMessage).toBe("client certificate rejected: UNABLE_TO_VERIFY_LEAF_SIGNATURE");
    expect(await desiredVersion(stack.raw, second)).toBe(before);
  });

  it("writes the registry entry openshell-local: metadata.json and the client bundle, its key 0600 and its directory 0700", async () => {
    const registry = stack.registry!;
    expect(registry).toMatchObject({ dir: stack.dir, name: LOCAL_GATEWAY_NAME });
    const gatewayDir = join(stack.dir, "gateways", "openshell-local");
    expect(registry.metadataFile).toBe(join(gatewayDir, "metadata.json"));
    expect(JSON.parse(readFileSync(registry.metadataFile, "utf8"))).toEqual({
      name: "openshell-local",
      gateway_endpoint: stack.url,
      is_remote: false,
      gateway_port: Number(new URL(stack.url).port),
      auth_mode: "mtls",
    });
    const bundle = join(gatewayDir, "mtls");
    expect(registry.bundleDir).toBe(bundle);
    expect(readFileSync(join(bundle, "ca.crt"), "utf8")).toBe(stack.clientTls!.ca);
    expect(readFileSync(join(bundle, "tls.crt"), "utf8")).toBe(stack.clientTls!.cert);
    expect(readFileSync(join(bundle, "tls.key"), "utf8")).toBe(stack.clientTls!.key);
    expect(mode(join(bundle, "tls.key"))).toBe(0o600);
    expect(mode(bundle)).toBe(0o700);
    expect(mode(join(stack.dir, "tls", "server.key"))).toBe(0o600);
    expect(mode(join(stack.dir, "tls"))).toBe(0o700);
    // What a client of the registry does with it: the bundle as read by the SDK lists the fleet.
    const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, tls: readMtlsBundle(bundle) }) }).raw(OpenShell);
    const names = (await raw.listSandboxes({ workspaceScope: workspaceScope() })).sandboxes.map((s) => s.metadata?.name);
    expect(names).toEqual(expect.arrayContaining([first, second]));
  });

  it("keeps sound certificates across starts and replaces them when one is about to expire or a key is damaged", async () => {
    const dir = mkdtempSync(join(tmpdir(), "openshell-tls-certs-"));
    scratch.push(dir);
    cpSync(join(stack.dir, "tls"), dir, { recursive: true });
    const kept = await ensureStackCertificates(dir);
    expect(kept.created).toBe(false);
    expect(kept.ca).toBe(stack.clientTls!.ca);
    expect(kept.client.key).toBe(stack.clientTls!.key);
    // 800 days on, the 825-day leaves are within 30 days of expiry.
    const renewed = await ensureStackCertificates(dir, Date.now() + 800 * DAY_MS);
    expect(renewed.created).toBe(true);
    expect(renewed.ca).not.toBe(kept.ca);
    expect(readFileSync(join(dir, "ca.crt"), "utf8")).toBe(renewed.ca);
    expect(mode(join(dir, "server.key"))).toBe(0o600);
    expect((await ensureStackCertificates(dir)).created).toBe(false);
    writeFileSync(join(dir, "client.key"), (await createTestPki()).client.key);
    expect((await ensureStackCertificates(dir)).created).toBe(true);
  });

  it("a gateway restarted on the same directory and port keeps its certificates, and the fleet comes back over the sandbox listener", async () => {
    const ca = readFileSync(join(stack.dir, "tls", "ca.crt"), "utf8");
    await stack.restartGateway();
    expect(readFileSync(join(stack.dir, "tls", "ca.crt"), "utf8")).toBe(ca);
    const before = stack.effective(second)!.revision!.policyVersion!;
    const res = await stack.client.updatePolicy({ sandbox: second, policy: policy({ ...base, after: { host: "after-restart.example.com" } }), wait: { timeoutMs: 15_000 } });
    expect(res.completion, `see ${stack.logFile}`).toMatchObject({ state: "applied", outcome: "applied" });
    expect(stack.effective(second)?.revision?.policyVersion).toBe(before + 1);
  }, 40_000);
});
