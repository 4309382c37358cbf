// The local stack on TLS (server certificate only, bearer tokens), through real processes: the
// gateway serving HTTPS with ALPN h2 and http/1.1 and a sandbox listener of its own, reference
// supervisors bootstrapping over that listener with `--ca`, and the SDK committing waited updates
// over gRPC, Connect and gRPC-Web, trusting the stack's CA. Also a gateway restart on the same
// directory and port, and a client that does not trust the CA. One stack for the whole file.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient, TlsError, type ConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, SandboxPhase, workspaceScope } from "openshell-config/raw";
import { createTestPki } from "../../examples/tls/pki.js";
import { policy, startE2EStack, type E2EStack, type StackProcess } from "./stack.js";
import { desiredVersion, WIRES } from "./tls-support.js";

const SANDBOX = "tls-web";
const base = { github: { host: "api.github.com" } };

let stack: E2EStack;
let supervisor: StackProcess;
const clients: ConfigClient[] = [];

/** The command line a stack process was started with (Linux /proc). */
function commandLine(proc: StackProcess): string[] {
  return readFileSync(`/proc/${proc.pid}/cmdline`, "utf8").split("\0");
}

beforeAll(async () => {
  stack = await startE2EStack({ sandboxes: [SANDBOX], tls: "tls" });
  await stack.createSandbox(SANDBOX, policy(base));
  supervisor = stack.startSupervisor({ sandbox: SANDBOX });
  await stack.waitPhase(SANDBOX, SandboxPhase.READY, 30_000);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

describe("the local stack on TLS", () => {
  it("serves https to clients and a separate https sandbox listener, which the supervisor dials with --ca", () => {
    expect(stack.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(stack.sandboxUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(stack.sandboxUrl).not.toBe(stack.url);
    expect(stack.clientTls).toEqual({ ca: readFileSync(join(stack.dir, "tls", "ca.crt"), "utf8") });
    expect(stack.registry).toBeUndefined();
    const args = commandLine(supervisor);
    expect(args[args.indexOf("--gateway") + 1]).toBe(stack.sandboxUrl);
    expect(args[args.indexOf("--ca") + 1]).toBe(join(stack.dir, "tls", "ca.crt"));
    expect(stack.effective(SANDBOX)?.source).toBe("gateway");
  });

  it.each(WIRES)("the SDK commits a waited update over $name with the stack's CA and gets applied", async ({ options }) => {
    const client = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, ...options, tls: { ca: stack.clientTls!.ca } }), token: stack.adminToken });
    clients.push(client);
    const before = stack.effective(SANDBOX)!.revision!.policyVersion!;
    const res = await client.updatePolicy({ sandbox: SANDBOX, policy: policy({ ...base, [`rule${before}`]: { host: `h${before}.example.com` } }), wait: { timeoutMs: 10_000 } });
    expect(res.completion, `see ${stack.logFile}`).toMatchObject({ state: "applied", outcome: "applied" });
    expect(res.policyVersion).toBe(before + 1);
    expect(stack.effective(SANDBOX)?.revision?.policyVersion).toBe(before + 1);
  });

  it("a client that does not trust the stack's CA gets a TlsError naming an unknown CA, and nothing is committed", async () => {
    const other = await createTestPki();
    const client = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url, tls: { ca: other.ca.cert } }), token: stack.adminToken });
    const before = await desiredVersion(stack.raw, SANDBOX);
    const err = await client.updatePolicy({ sandbox: SANDBOX, policy: policy({ ...base, never: { host: "never.example.com" } }) }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TlsError);
    expect((err as TlsError).reason).toBe("unknown-ca");
    expect(await desiredVersion(stack.raw, SANDBOX)).toBe(before);
  });

  it("the sandbox listener the supervisors dial refuses an administrative call, even with the admin token", async () => {
    const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.sandboxUrl, tls: { ca: stack.clientTls!.ca } }), token: stack.adminToken }).raw(OpenShell);
    const err = ConnectError.from(await raw.listSandboxes({ workspaceScope: workspaceScope() }).catch((e: unknown) => e));
    expect(err.code).toBe(Code.PermissionDenied);
    expect(err.rawMessage).toMatch(/^ListSandboxes is not served on the sandbox listener/);
  });

  it("a gateway restarted on the same directory and port serves the same certificate, and the supervisor comes back over TLS", async () => {
    const cert = readFileSync(join(stack.dir, "tls", "server.crt"), "utf8");
    await stack.restartGateway();
    expect(readFileSync(join(stack.dir, "tls", "server.crt"), "utf8")).toBe(cert);
    const before = stack.effective(SANDBOX)!.revision!.policyVersion!;
    const res = await stack.client.updatePolicy({ sandbox: SANDBOX, policy: policy({ ...base, after: { host: "after-restart.example.com" } }), wait: { timeoutMs: 15_000 } });
    expect(res.completion, `see ${stack.logFile}`).toMatchObject({ state: "applied", outcome: "applied" });
    expect(stack.effective(SANDBOX)?.revision?.policyVersion).toBe(before + 1);
  }, 40_000);
});
