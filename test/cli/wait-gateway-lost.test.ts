// `policy set --timeout 40s` commits, then its gateway goes away during the wait (issue 30, item 1).
// The command must not lose the change: it names the committed version and the operation, prints
// the resume command, and exits 69 (EX_UNAVAILABLE) — not 1 with "missing status" or "cannot
// reach the gateway". Once the gateway is back, the printed command, run as printed, gives the
// outcome, and there is still one revision.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SandboxPhase, workspaceScope } from "openshell-config/raw";
import { policy, startE2EStack, until, type E2EStack } from "../e2e/stack.js";
import { build, policyYaml, runBinary, type Run } from "./harness.js";

const sandbox = "lost-wait";
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

let stack: E2EStack;
let dir: string;

beforeAll(async () => {
  await build();
  dir = mkdtempSync(join(tmpdir(), "openshell-cli-lost-"));
  stack = await startE2EStack({ sandboxes: [sandbox] });
  // No supervisor yet: the update stays pending while the gateway goes away.
  await stack.createSandbox(sandbox, policy({ github: { host: "api.github.com" } }));
}, 180_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const cli = (args: readonly string[]): Promise<Run> =>
  runBinary(args, dir, { PATH: process.env.PATH, HOME: dir, OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: stack.adminToken });

const versions = async () => (await stack.raw.listSandboxPolicies({ sandbox, workspaceScope: workspaceScope() })).revisions.map((r) => r.version).sort();

/** UpdateConfig calls the gateway has answered OK (its metrics count a call once its answer is made). */
async function answeredCommits(): Promise<number> {
  const res = await fetch(`${stack.url}/metrics`, { headers: { authorization: `Bearer ${stack.adminToken}` } });
  const text = await res.text();
  return Number(/^openshell_gateway_rpc_requests_total\{method="UpdateConfig",code="ok"\} (\d+)$/m.exec(text)?.[1] ?? 0);
}

describe("a wait whose gateway goes away after the commit", () => {
  it.each(["SIGTERM", "SIGKILL"] as const)(
    "after a %s of the gateway, names the committed version, the operation and the resume command, exits 69, and the command as printed resumes it",
    async (signal) => {
      const before = (await versions()).at(-1)!;
      // A policy of its own per run (an identical one would be no new revision).
      writeFileSync(join(dir, `${signal}.yaml`), policyYaml({ github: { host: "api.github.com" }, [signal.toLowerCase()]: { host: `${signal.toLowerCase()}.example.com` } }));
      const commitsBefore = await answeredCommits();
      const setting = cli(["policy", "set", "--sandbox", sandbox, "--file", `${signal}.yaml`, "--timeout", "40s"]);
      // Visible in the database is not yet answered: the answer follows the WAL's sync and has to
      // reach the CLI, which then waits by the handle. Killed in between, the CLI could not know
      // the commit (a different test: "commit outcome unknown"). A CI run on a loaded machine hit
      // that window once; so the gateway goes once it has counted the commit answered, and half a
      // second later, for the CLI to read the answer.
      await until(async () => (await answeredCommits()) > commitsBefore, "the commit answered");
      expect((await versions()).at(-1)).toBe(before + 1);
      await new Promise((resolve) => setTimeout(resolve, 500));
      await stack.killGateway(signal);
      const r = await setting;
      const committed = before + 1;
      expect(r.code, r.stderr).toBe(69);
      expect(r.stdout).toBe("");
      const lines = r.stderr.trim().split("\n");
      const id = UUID.exec(r.stderr)?.[0];
      expect(id, r.stderr).toBeDefined();
      expect(lines).toContainEqual(
        expect.stringMatching(new RegExp(`^policy v${committed} of sandbox ${sandbox} committed; still pending when the gateway could not be reached \\(.+\\) \\(operation ${id}\\)$`)),
      );
      const resume = lines.find((l) => l.startsWith("resume with: "));
      expect(resume).toBe(`resume with: openshell-config operation wait ${id} --timeout 40s`);
      expect(r.stderr).not.toMatch(/missing status|^error:/m);

      // Back: the same database, and now a supervisor; the printed command finds the same operation.
      await stack.startGateway();
      const supervisor = stack.startSupervisor({ sandbox });
      try {
        const resumed = await cli(resume!.slice("resume with: openshell-config ".length).split(" "));
        expect(resumed.code, resumed.stderr).toBe(0);
        expect(resumed.stdout).toMatch(new RegExp(`^operation ${id}: applied`));
        await stack.waitPhase(sandbox, SandboxPhase.READY, 30_000);
        expect((await versions()).filter((v) => v === committed)).toHaveLength(1);
        expect((await versions()).at(-1)).toBe(committed);
      } finally {
        await supervisor.kill("SIGKILL");
      }
    },
    90_000,
  );
});
