// The `openshell-supervisor` process end to end: standalone mode, a small fleet against the fake
// gateway, usage errors (exit 2) and a permanent rejection (exit 3).

import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ConfigApplyOutcome } from "openshell-config/raw";
import { afterEach, describe, expect, it } from "vitest";
import { effectiveOf, eventually, readJson } from "./support/eventually.js";
import { FakeGateway } from "./support/fake-gateway.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(ROOT, "supervisor", "src", "cli.ts");

let dir: string;
let gw: FakeGateway | undefined;
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill("SIGKILL");
  await gw?.close();
  gw = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function supervisor(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, ["--import", "tsx", CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stderr = "";
  let stdout = "";
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, exited, stderr: () => stderr, stdout: () => stdout };
}

function tempDir(): string {
  dir = mkdtempSync(join(tmpdir(), "osc-cli-"));
  return dir;
}

describe("openshell-supervisor process", () => {
  it("in standalone mode writes effective.json from the local policy and exits 0 on SIGTERM", async () => {
    const d = tempDir();
    writeFileSync(join(d, "policy.json"), JSON.stringify({ networkPolicies: { pypi: { name: "pypi", endpoints: [{ host: "pypi.org", port: 443, protocol: "rest" }] } } }));
    const p = supervisor(["--sandbox", "solo", "--local-policy", join(d, "policy.json"), "--state-dir", join(d, "state")]);
    const effective = await eventually(() => effectiveOf(join(d, "state"), "solo"), 15_000, 50);
    expect(effective).toMatchObject({ source: "local_override", policy: { networkPolicies: { pypi: {} } } });
    p.child.kill("SIGTERM");
    expect(await p.exited).toBe(0);
    // Stopping folded the log: effective.json says it all, and --print-effective prints it.
    expect(readdirSync(join(d, "state", "solo")).sort()).toEqual(["effective.json"]);
    expect(readJson(join(d, "state", "solo", "effective.json"))).toEqual(effective);
    const printed = supervisor(["--print-effective", "solo", "--state-dir", join(d, "state")]);
    expect(await printed.exited).toBe(0);
    expect(JSON.parse(printed.stdout())).toEqual(effective);
  });

  it("--print-effective prints the newest line of a sandbox's effective log, and exits 1 naming a sandbox with nothing recorded", async () => {
    const d = tempDir();
    mkdirSync(join(d, "state", "dev"), { recursive: true });
    writeFileSync(join(d, "state", "dev", "effective.json"), `${JSON.stringify({ sandbox: "dev", revision: { policyVersion: 1 } })}\n`);
    // A process killed between two folds leaves its log; its last line is what the sandbox enforces.
    writeFileSync(join(d, "state", "dev", "effective.log"), `${JSON.stringify({ sandbox: "dev", revision: { policyVersion: 2 } })}\n${JSON.stringify({ sandbox: "dev", revision: { policyVersion: 3 } })}\n`);
    const p = supervisor(["--print-effective", "dev", "--state-dir", join(d, "state")]);
    expect(await p.exited).toBe(0);
    expect(JSON.parse(p.stdout())).toEqual({ sandbox: "dev", revision: { policyVersion: 3 } });
    const none = supervisor(["--print-effective", "other", "--state-dir", join(d, "state")]);
    expect(await none.exited).toBe(1);
    expect(none.stdout()).toBe("");
    expect(none.stderr()).toBe(`openshell-supervisor: nothing recorded for sandbox other under ${join(d, "state")}\n`);
  });

  it("connects a small fleet with tokens from a token file, bootstraps each sandbox, and never logs a token", async () => {
    const d = tempDir();
    gw = await FakeGateway.start();
    const tokens = { "fleet-0000": "tok-aaaaaaaaaaaa", "fleet-0001": "tok-bbbbbbbbbbbb", "fleet-0002": "tok-cccccccccccc" };
    writeFileSync(join(d, "tokens.json"), JSON.stringify(tokens));
    const p = supervisor(["--sandboxes", "3", "--sandbox-prefix", "fleet-", "--token-file", join(d, "tokens.json"), "--state-dir", join(d, "state")], {
      OPENSHELL_SUPERVISOR_GATEWAY: gw.url,
    });
    for (const [name, token] of Object.entries(tokens)) {
      const s = await gw.waitForSession((x) => x.sandboxId === name, 15_000);
      expect(s.requestHeader.get("authorization")).toBe(`Bearer ${token}`);
      expect((await s.bootstrapResult(10_000)).results[0]?.outcome).toBe(ConfigApplyOutcome.APPLIED);
      expect(effectiveOf(join(d, "state"), name)).toMatchObject({ sandbox: name, source: "gateway" });
    }
    expect(gw.connections).toBe(1);
    p.child.kill("SIGTERM");
    expect(await p.exited).toBe(0);
    for (const t of Object.values(tokens)) expect(p.stderr()).not.toContain(t);
  });

  it("exits 2 with a usage message for a bad command line", async () => {
    const p = supervisor(["--sandbox", "a", "--bogus"]);
    expect(await p.exited).toBe(2);
    expect(p.stderr()).toContain("Unknown option '--bogus'");
  });

  it("exits 3 with a clear message when the gateway rejects the session for missing capabilities", async () => {
    gw = await FakeGateway.start({ reject: () => ({ reason: "supervisor does not support config apply (missing capabilities)" }) });
    const p = supervisor(["--gateway", gw.url, "--sandbox", "dev", "--token", "t", "--state-dir", join(tempDir(), "state")]);
    expect(await p.exited).toBe(3);
    expect(p.stderr()).toContain("rejected sandbox dev: supervisor does not support config apply (missing capabilities)");
  });
});
