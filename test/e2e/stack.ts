// The end-to-end harness: real processes on loopback. The SDK runs in the test process; the
// gateway and the reference supervisors run as child processes from source (examples/local-stack.ts
// starts them). Adds what tests need on top: an SDK client, a raw client, sandbox helpers, the
// processes' JSON log lines, and the supervisors' on-disk state.

import { mkdtempSync, writeFileSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { afterEach } from "vitest";
import { createConfigClient, type ConfigClient, type SandboxPolicyInput } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, SandboxPhase, SandboxPolicySchema, workspaceScope, type SandboxPolicy } from "openshell-config/raw";
import { startLocalStack, type LocalStack, type LocalStackOptions, type StackProcess } from "../../examples/local-stack.js";
import { readEffective } from "../../supervisor/src/effective-state.js";

export { fleetNames, type StackProcess, type SupervisorSpec } from "../../examples/local-stack.js";

/** One parsed JSON log line of a gateway (pino) or supervisor process. */
export type LogLine = Record<string, unknown> & { readonly msg?: string; readonly level?: string };

/** A rule: host, and optionally a protocol (the supervisor rejects unknown ones, e.g. "ftp"). */
export type RuleSpec = { readonly host: string; readonly protocol?: string };

/**
 * A complete policy with the given network rules. `middlewareEndpoint` adds a policy middleware
 * whose `grpc_endpoint` the supervisor probes (unreachable: the policy applies DEGRADED). The
 * middlewares of a sandbox are fixed at creation, so pass the same endpoint to every update.
 */
export function policy(rules: Record<string, RuleSpec>, middlewareEndpoint?: string): SandboxPolicy {
  return create(SandboxPolicySchema, {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] },
    networkPolicies: Object.fromEntries(
      Object.entries(rules).map(([name, r]) => [name, { name, endpoints: [{ host: r.host, ports: [443], protocol: r.protocol ?? "" }], binaries: [{ path: "/usr/bin/git" }] }]),
    ),
    networkMiddlewares: middlewareEndpoint
      ? { audit: { name: "audit", middleware: "audit-log", config: { grpc_endpoint: middlewareEndpoint }, order: 1 } }
      : {},
  });
}

/** Polls `probe` until it returns a value other than undefined/false; throws after `timeoutMs`. */
export async function until<T>(probe: () => T | undefined | false | Promise<T | undefined | false>, what: string, timeoutMs = 10_000, intervalMs = 50): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Waits until `count` sandboxes (those `labelSelector` matches, if given) are READY at the gateway. */
export function untilFleetReady(raw: Client<typeof OpenShell>, count: number, labelSelector = ""): Promise<true> {
  return until(async () => {
    const res = await raw.listSandboxes({ pageSize: 1000, labelSelector, workspaceScope: workspaceScope() });
    return res.sandboxes.filter((sb) => sb.status?.phase === SandboxPhase.READY).length === count || undefined;
  }, "every fleet sandbox to be READY", 90_000, 250) as Promise<true>;
}

/** Parses a process's JSON lines (anything else, e.g. a stack trace, is skipped). */
export function jsonLines(proc: StackProcess): LogLine[] {
  const out: LogLine[] = [];
  for (const line of proc.lines()) {
    if (!line.startsWith("{")) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      // a partial or non-JSON line
    }
  }
  return out;
}

/** What a supervisor records for a sandbox: its effective log's newest line, or effective.json. */
export interface EffectiveDoc {
  readonly sandbox: string;
  readonly source: "gateway" | "gateway_desired" | "local_override" | "deny_all";
  readonly revision: { readonly policyVersion?: number; readonly configRevision?: string } | null;
  readonly policy: { readonly networkPolicies?: Record<string, unknown> };
  readonly degradedServices: readonly string[];
  readonly reason?: string;
  readonly writtenAt: string;
}

export interface E2EStack extends LocalStack {
  /** An SDK client with the admin token, or with mutual TLS the admin's client certificate (gRPC over HTTP/2). */
  readonly client: ConfigClient;
  /** A raw OpenShell client with the admin token. */
  readonly raw: Client<typeof OpenShell>;
  /** Creates a sandbox (PROVISIONING until a supervisor applies its bootstrap). */
  createSandbox(name: string, initial: SandboxPolicyInput): Promise<void>;
  phase(name: string): Promise<SandboxPhase | undefined>;
  /** Waits until the sandbox is in `phase`. */
  waitPhase(name: string, phase: SandboxPhase, timeoutMs?: number): Promise<void>;
  /** What the supervisor says `sandbox` enforces (undefined before it wrote anything). */
  effective(sandbox: string, stateDir?: string): EffectiveDoc | undefined;
  /** The supervisor's gateway-desired.json (written while a local override is in force). */
  gatewayDesired(sandbox: string, stateDir?: string): EffectiveDoc | undefined;
  /** Log lines of every gateway process so far (across restarts). */
  gatewayLog(): LogLine[];
  /** Lines of `proc` logged for `sandbox` with message `msg`. */
  supervisorLines(proc: StackProcess, sandbox: string, msg: string): LogLine[];
  /**
   * Stops every process. The working directory (stack.log, gateway.db, supervisor state) is
   * removed, unless a test of the file failed or OPENSHELL_E2E_KEEP=1: then its path is printed.
   */
  stop(): Promise<void>;
}

function readJson<T>(path: string): T | undefined {
  try {
    return JSON.parse(readFileSync(path, "utf8")) as T;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}

// Imported at collection time, this registers on every test file that uses the harness (each
// file gets its own module instance): a failed test keeps the stack's directory for inspection.
let failed = false;
afterEach((ctx) => {
  if (ctx.task.result?.state === "fail") failed = true;
});

/** A principal besides the stack's admin, written into its auth file before the gateway starts. */
export interface ExtraPrincipal {
  readonly token: string;
  readonly principal: string;
  readonly role: "admin" | "user";
  readonly workspaces: "*" | readonly string[];
}

export async function startE2EStack(options: Omit<LocalStackOptions, "dir"> & { readonly principals?: readonly ExtraPrincipal[] }): Promise<E2EStack> {
  const dir = mkdtempSync(join(tmpdir(), "openshell-e2e-"));
  // The stack keeps entries of its auth file that are not its own (stack-tokens.ts).
  if (options.principals?.length) writeFileSync(join(dir, "auth.json"), JSON.stringify({ tokens: options.principals }), { mode: 0o600 });
  let stack: LocalStack;
  try {
    stack = await startLocalStack({ ...options, dir });
  } catch (err) {
    process.stderr.write(`e2e stack did not start; kept ${dir}\n`);
    throw err;
  }
  const stopProcesses = stack.stop;
  // On TLS the client trusts the stack's CA; with mutual TLS its certificate is the admin.
  const transport = createNodeTransport({ baseUrl: stack.url, protocol: "grpc", ...(stack.clientTls ? { tls: stack.clientTls } : {}) });
  const client = createConfigClient({ transport, ...(stack.clientTls?.cert ? {} : { token: stack.adminToken }) });
  const raw = client.raw(OpenShell);
  const phase = async (name: string) => (await raw.getSandbox({ name, workspaceScope: workspaceScope() })).sandbox?.status?.phase;
  // The stack's own getters (gateway) must stay live: extend the object rather than copy it.
  return Object.assign(stack, {
    client,
    raw,
    async createSandbox(name: string, initial: SandboxPolicyInput) {
      await raw.createSandbox({ name, spec: { policy: initial }, workspaceScope: workspaceScope() });
    },
    phase,
    async waitPhase(name: string, want: SandboxPhase, timeoutMs = 15_000) {
      await until(async () => (await phase(name)) === want, `sandbox ${name} to be ${SandboxPhase[want]}`, timeoutMs);
    },
    effective: (sandbox: string, stateDir = stack.stateDir) => readEffective(stateDir, sandbox) as EffectiveDoc | undefined,
    gatewayDesired: (sandbox: string, stateDir = stack.stateDir) => readJson<EffectiveDoc>(join(stateDir, sandbox, "gateway-desired.json")),
    gatewayLog: () => stack.processes.filter((p) => p.name.startsWith("gateway")).flatMap(jsonLines),
    supervisorLines: (proc: StackProcess, sandbox: string, msg: string) => jsonLines(proc).filter((l) => l.sandbox === sandbox && l.msg === msg),
    async stop() {
      await stopProcesses();
      if (failed || process.env.OPENSHELL_E2E_KEEP === "1") process.stderr.write(`e2e stack kept for inspection: ${dir} (stack.log, gateway.db, supervisors/)\n`);
      else rmSync(dir, { recursive: true, force: true });
    },
  });
}
