// Real processes for the sandbox-instance tests: the `openshell-gateway` executable on a SQLite
// file with an auth file of our own (a platform admin, a user who is not an admin, and supervisor
// tokens), and reference supervisor processes whose state directory says what they enforce.

import { spawn, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { createClient, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { OpenShell, SandboxPolicySchema, type SandboxPolicy } from "openshell-config/raw";
import { readEffective } from "../../../supervisor/src/effective-state.js";
import { run, type Run } from "../server/gateway-process.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));

/** A policy a sandbox's owner would set. */
export function benignPolicy(): SandboxPolicy {
  return create(SandboxPolicySchema, {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp"] },
    process: { runAsUser: "sandbox", runAsGroup: "sandbox" },
    networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] } },
  });
}

/** The review's policy: the whole filesystem writable, root, and egress to the attacker's host. */
export function attackerPolicy(): SandboxPolicy {
  return create(SandboxPolicySchema, {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: [], readWrite: ["/"] },
    process: { runAsUser: "root", runAsGroup: "root" },
    networkPolicies: { exfil: { name: "exfil", endpoints: [{ host: "attacker.example", ports: [443] }], binaries: [{ path: "/usr/bin/curl" }] } },
  });
}

/** What a supervisor says it enforces (undefined before it wrote anything). */
export interface Enforced {
  readonly source: string;
  readonly policy: { readonly filesystem?: { readonly readWrite?: string[] }; readonly process?: { readonly runAsUser?: string } };
}

export function enforced(stateDir: string, sandbox: string): Enforced | undefined {
  return readEffective(stateDir, sandbox) as Enforced | undefined;
}

export const runsAsRoot = (e: Enforced | undefined) => e?.policy.process?.runAsUser === "root";

export interface GatewayProcess {
  readonly url: string;
  readonly proc: Run;
  raw(token: string): Client<typeof OpenShell>;
  stop(): Promise<void>;
}

/** A loopback port nothing listens on now (a restarted gateway keeps its supervisors' URL). */
export { freePort } from "../../../examples/free-port.js";

/** Writes the auth file (0600) and starts a gateway on `db` at `port`. */
export async function startGatewayProcess(dir: string, db: string, port: number, tokens: readonly Record<string, unknown>[]): Promise<GatewayProcess> {
  const authFile = join(dir, "auth.json");
  writeFileSync(authFile, JSON.stringify({ tokens }), { mode: 0o600 });
  const proc = run(["serve", "--db", `sqlite:${db}`, "--port", String(port), "--auth-file", authFile]);
  const url = (await proc.waitFor(/listening on/)).url as string;
  return {
    url,
    proc,
    raw: (token) =>
      createClient(
        OpenShell,
        createGrpcTransport({
          baseUrl: url,
          interceptors: [(next) => (req) => (req.header.set("authorization", `Bearer ${token}`), next(req))],
        }),
      ),
    async stop() {
      if (proc.child.exitCode === null && proc.child.signalCode === null) proc.child.kill("SIGTERM");
      await proc.exit;
    },
  };
}

export interface SupervisorProcess {
  readonly child: ChildProcess;
  readonly stateDir: string;
  /** stdout and stderr lines so far. */
  lines(): readonly string[];
  stop(): Promise<void>;
}

/** Starts a reference supervisor for `sandbox` with `token`. */
export function startSupervisorProcess(url: string, sandbox: string, token: string, stateDir: string): SupervisorProcess {
  const child = spawn(process.execPath, ["--import", "tsx", join(root, "supervisor/src/cli.ts"), "--sandbox", sandbox, "--token", token, "--gateway", url, "--state-dir", stateDir], {
    cwd: root,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  for (const stream of [child.stdout!, child.stderr!]) {
    let carry = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      const parts = (carry + chunk).split("\n");
      carry = parts.pop()!;
      lines.push(...parts);
    });
  }
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  return {
    child,
    stateDir,
    lines: () => lines,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}

/** Polls `probe` every `intervalMs` until it returns a value other than undefined/false. */
export async function until<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, what: string, timeoutMs = 15_000, intervalMs = 20): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
