// A gateway started with --no-auth accepts supervisors that have no token, as the supervisor's
// warning says: each session is bound to the sandbox the supervisor names in its hello. Real
// processes: a gateway with --no-auth (no auth file) and reference supervisors without --token.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PolicyStatus, SandboxPhase, workspaceScope } from "openshell-config/raw";
import { fleetNames, jsonLines, policy, startE2EStack, until, type E2EStack, type StackProcess } from "./stack.js";

const base = { github: { host: "api.github.com" } };
const fleet = fleetNames("open-", 2);

let stack: E2EStack;
let dev: StackProcess;

beforeAll(async () => {
  stack = await startE2EStack({ sandboxes: [], noAuth: true });
  for (const name of ["dev", "polled", ...fleet]) await stack.createSandbox(name, policy(base));
  dev = stack.startSupervisor({ sandbox: "dev" });
  stack.startSupervisor({ fleet: { prefix: "open-", count: 2 } });
  // The upstream polling baseline: GetSandboxConfig and ReportPolicyStatus, no stream.
  stack.startSupervisor({ sandbox: "polled", args: ["--poll-interval", "200ms"] });
  await Promise.all(["dev", ...fleet].map((n) => stack.waitPhase(n, SandboxPhase.READY, 30_000)));
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

describe("--no-auth and supervisors without a token", () => {
  it("the supervisor warns that only a --no-auth gateway accepts it, and this one does: every sandbox is ready", () => {
    const warning = jsonLines(dev).find((l) => typeof l.msg === "string" && l.msg.startsWith("no token for some sandboxes"));
    expect(warning?.msg, `see ${stack.logFile}`).toContain("--no-auth");
    for (const p of stack.processes) expect(p.lines().join("\n"), p.name).not.toMatch(/PERMISSION_DENIED|permission_denied|requires a sandbox supervisor token/);
    expect(stack.gatewayLog().filter((l) => l.msg === "supervisor connected").map((l) => l.sandbox).sort()).toEqual(["dev", ...fleet].sort());
  });

  it("an update is delivered to the session of the sandbox the supervisor named, and applied", async () => {
    const { completion, policyVersion } = await stack.client.updatePolicy({
      sandbox: "dev",
      policy: policy({ ...base, npm: { host: "registry.npmjs.org" } }),
      wait: { timeoutMs: 15_000 },
    });
    expect(completion, `see ${stack.logFile}`).toMatchObject({ state: "applied", outcome: "applied" });
    expect(policyVersion).toBe(2);
    expect(stack.effective("dev")?.revision?.policyVersion).toBe(2);
    expect(Object.keys(stack.effective("dev")?.policy.networkPolicies ?? {}).sort()).toEqual(["github", "npm"]);
    // The other sandboxes' sessions got nothing: each is bound to its own sandbox.
    for (const name of fleet) expect(stack.effective(name)?.revision?.policyVersion).toBe(1);
  });

  it("a polling supervisor without a token reads its sandbox's configuration and reports the version it loaded", async () => {
    const { policyVersion } = await stack.client.updatePolicy({ sandbox: "polled", policy: policy({ ...base, npm: { host: "registry.npmjs.org" } }) });
    expect(policyVersion).toBe(2);
    await until(
      async () => (await stack.raw.getSandboxPolicyStatus({ sandbox: "polled", version: 2, workspaceScope: workspaceScope() })).revision?.status === PolicyStatus.LOADED,
      `polled to report policy v2 loaded (see ${stack.logFile})`,
      15_000,
    );
    expect(stack.effective("polled")?.revision?.policyVersion).toBe(2);
  });

  it("a settings change reaches a fleet member's session too", async () => {
    const { completion } = await stack.client.updateSettings({ sandbox: fleet[1]!, key: "log_level", value: "debug", wait: { timeoutMs: 15_000 } });
    expect(completion, `see ${stack.logFile}`).toMatchObject({ state: "applied" });
  });
});
