// A provider credential bound by the policy, through real processes (gateway on SQLite, one
// reference supervisor): it reaches the supervisor as a static credential with its binding
// (UPSTREAM.md §7), follows a rotation, and its secret value appears in no process's log and in
// no supervisor file but the installed provider-env.json.

import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { create } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxPhase, SandboxPolicySchema, type SandboxPolicy } from "openshell-config/raw";
import { startE2EStack, until, type E2EStack, type StackProcess } from "./stack.js";

const SANDBOX = "keys";
const workspaceScope = { selection: { case: "workspace" as const, value: "default" } };
const first = `sk-e2e-first-${Math.random().toString(36).slice(2)}`;
const rotated = `sk-e2e-rotated-${Math.random().toString(36).slice(2)}`;

function boundPolicy(): SandboxPolicy {
  return create(SandboxPolicySchema, {
    version: 1,
    filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] },
    networkPolicies: {
      openai: {
        name: "openai",
        endpoints: [{ host: "api.openai.com", ports: [443], path: "/v1/**", credentialBinding: { provider: "llm" } }],
        binaries: [{ path: "/usr/bin/curl" }],
      },
    },
  });
}

interface ProviderEnvDoc {
  readonly providerEnvRevision: string | null;
  readonly values: Record<string, string>;
  readonly staticCredentialBindings: Record<string, unknown>;
  readonly dynamicCredentials: Record<string, unknown>;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(join(dir, e.name)) : e.isFile() ? [join(dir, e.name)] : []));
}

let stack: E2EStack;
let supervisor: StackProcess;

function providerEnv(): ProviderEnvDoc | undefined {
  try {
    return JSON.parse(readFileSync(join(stack.stateDir, SANDBOX, "provider-env.json"), "utf8")) as ProviderEnvDoc;
  } catch {
    return undefined;
  }
}

beforeAll(async () => {
  stack = await startE2EStack({ sandboxes: [SANDBOX] });
  await stack.raw.createProvider({ provider: { metadata: { name: "llm" }, type: "openai", credentials: { API_KEY: first }, config: { REGION: "eu" } }, workspaceScope });
  await stack.raw.createSandbox({ name: SANDBOX, spec: { policy: boundPolicy(), providers: ["llm"] }, workspaceScope });
  supervisor = stack.startSupervisor({ sandbox: SANDBOX });
  await until(async () => (await stack.raw.getSandbox({ name: SANDBOX, workspaceScope })).sandbox?.status?.phase === SandboxPhase.READY, `sandbox ${SANDBOX} to be READY`, 30_000);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

describe("provider environment through real processes", () => {
  it("the bound credential is installed with its binding, follows a rotation, and its value is logged nowhere and stored only in provider-env.json", async () => {
    const binding = { endpoints: [{ host: "api.openai.com", port: 443, path: "/v1/**" }], credentialIdentity: "llm:API_KEY" };
    const installed = await until(() => providerEnv()?.values.API_KEY === first && providerEnv(), "the first credential to be installed");
    expect(installed).toMatchObject({ providerEnvRevision: "1", values: { API_KEY: first, REGION: "eu" }, staticCredentialBindings: { API_KEY: binding }, dynamicCredentials: {} });
    expect(Object.keys(installed.staticCredentialBindings)).toEqual(["API_KEY"]);

    await stack.raw.updateProvider({ provider: { metadata: { name: "llm" }, credentials: { API_KEY: rotated }, config: { REGION: "eu" } }, workspaceScope });
    const after = await until(() => providerEnv()?.values.API_KEY === rotated && providerEnv(), "the rotated credential to be installed");
    expect(after).toMatchObject({ providerEnvRevision: "2", staticCredentialBindings: { API_KEY: binding } });

    // The supervisor logs after it writes the file, and its output reaches us through a pipe.
    const processed = await until(() => {
      const lines = stack.supervisorLines(supervisor, SANDBOX, "provider environment processed");
      return lines.at(-1)?.providerEnvRevision === "2" && lines;
    }, "the supervisor's line for the rotated credential");
    expect(processed.at(-1)).toMatchObject({ outcome: "APPLIED", providerEnvRevision: "2", staticCredentialNames: ["API_KEY"], readinessReason: "UNSPECIFIED" });
    const everyLog = stack.processes.flatMap((p) => p.lines()).join("\n");
    expect(everyLog).toContain("API_KEY");
    for (const secret of [first, rotated]) expect(everyLog.includes(secret), "a provider secret in a process's output").toBe(false);
    const envFile = join(stack.stateDir, SANDBOX, "provider-env.json");
    for (const f of filesUnder(stack.stateDir)) {
      const text = readFileSync(f, "utf8");
      expect(text.includes(first), `the replaced secret in ${f}`).toBe(false);
      expect(text.includes(rotated), `the secret in ${f}`).toBe(f === envFile);
    }
  });
});
