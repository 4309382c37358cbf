// A stopped sandbox whose supervisor is still connected (issue 30, item 17): its updates are
// INACTIVE ("the change applies when it starts"), so the gateway delivers nothing to it while it
// is stopped, and the outcome never says one thing while the sandbox enforces another. Once
// started, the supervisor gets the latest desired policy and enforces it.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxPhase, workspaceScope } from "openshell-config/raw";
import { jsonLines, policy, sleep, startE2EStack, until, type E2EStack, type StackProcess } from "./stack.js";

const name = "stopped-live";
const base = { github: { host: "api.github.com" } };
let stack: E2EStack;
let supervisor: StackProcess;

beforeAll(async () => {
  stack = await startE2EStack({ sandboxes: [name] });
  await stack.createSandbox(name, policy(base));
  supervisor = stack.startSupervisor({ sandbox: name });
  await stack.waitPhase(name, SandboxPhase.READY, 30_000);
}, 60_000);

afterAll(async () => {
  await stack?.stop();
});

/** The policy versions the supervisor processed, with when. */
const processed = () =>
  jsonLines(supervisor)
    .filter((l) => l.msg === "sandbox config processed")
    .map((l) => ({ version: Number(l.policyVersion), at: Date.parse(String(l.time)) }));

describe("a stopped sandbox with its supervisor still connected", () => {
  it("is delivered nothing while stopped (its updates are inactive), and the latest policy once started", async () => {
    await stack.raw.stopSandbox({ name, workspaceScope: workspaceScope() });
    const res = await stack.client.updatePolicy({ sandbox: name, policy: policy({ ...base, npm: { host: "registry.npmjs.org" } }), wait: { timeoutMs: 10_000 } });
    expect(res.completion).toMatchObject({ state: "inactive" });
    // Time for a delivery, had there been one (the gateway sends within milliseconds of a commit).
    await sleep(1_500);
    expect(processed().filter((p) => p.version >= res.policyVersion)).toEqual([]);
    expect(stack.effective(name)?.revision?.policyVersion).toBe(1);

    const startedAt = Date.now();
    await stack.raw.startSandbox({ name, workspaceScope: workspaceScope() });
    await until(() => stack.effective(name)?.revision?.policyVersion === res.policyVersion, "the supervisor to enforce the policy committed while stopped", 20_000);
    for (const p of processed().filter((x) => x.version >= res.policyVersion)) expect(p.at).toBeGreaterThanOrEqual(startedAt - 50);
    await stack.waitPhase(name, SandboxPhase.READY, 20_000);
  }, 60_000);
});
