// `policy set --dry-run` on a sandbox whose desired policy is the global one (issue 30, item 8):
// the gateway checks a sandbox policy's static fields against the policy the sandbox was created
// with, not against the global policy the dry run diffs with, so the dry run reads the
// create-time policy (GetSandbox) to say whether the gateway would refuse the file. Its own stack
// (a gateway on SQLite, no supervisor): a global policy would change every sandbox of a shared one.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { build, policyYaml, runBinary, type Run } from "./harness.js";

const name = "dry-global";
const base = { github: { host: "api.github.com" } };
// The global policy has a filesystem of its own: diffing against it is not what the gateway checks.
const globalPolicy = {
  version: 1,
  filesystem: { includeWorkdir: false, readOnly: ["/usr", "/etc"], readWrite: ["/tmp"] },
  networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] } },
};
let stack: LocalStack;
let dir: string;

const file = (file: string, text: string) => {
  const path = join(dir, file);
  writeFileSync(path, text);
  return path;
};
const cli = (args: readonly string[]): Promise<Run> =>
  runBinary(args, dir, { PATH: process.env.PATH, HOME: join(dir, "home"), OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: stack.adminToken });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openshell-dry-global-"));
  mkdirSync(join(dir, "home"));
  const [started] = await Promise.all([startLocalStack({ sandboxes: [name] }), build()]);
  stack = started;
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
  // Created with the filesystem policyYaml writes (readWrite /tmp and /workspace).
  await raw.createSandbox({
    name,
    spec: { policy: { version: 1, filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] }, networkPolicies: {} } },
    workspaceScope: workspaceScope(),
  });
  await raw.updateConfig({ global: true, policy: globalPolicy });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("policy set --dry-run on a sandbox under a global policy", () => {
  it("checks static fields against the policy the sandbox was created with, as the gateway does", async () => {
    // Same filesystem as at creation, unlike the global policy: valid, and the gateway takes it.
    const same = file("same-fs.yaml", policyYaml({ ...base, npm: { host: "registry.npmjs.org" } }));
    const ok = await cli(["policy", "set", "-s", name, "-f", same, "--dry-run"]);
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/^dry run: .*same-fs\.yaml is valid .*; nothing was sent$/m);
    expect(ok.stderr).toBe("");

    // The global policy's filesystem, which differs from the create-time one: refused, with the reason.
    const asGlobal = file("global-fs.yaml", policyYaml(base).replace("includeWorkdir: true", "includeWorkdir: false").replace("readOnly: [/usr]", "readOnly: [/usr, /etc]").replace("readWrite: [/tmp, /workspace]", "readWrite: [/tmp]"));
    const refused = await cli(["policy", "set", "-s", name, "-f", asGlobal, "--dry-run"]);
    expect(refused.code, refused.stderr).toBe(1);
    expect(refused.stdout).not.toMatch(/is valid/);
    expect(refused.stderr).toMatch(/^error: dry run: the gateway would refuse .*global-fs\.yaml: it changes filesystem, fixed when sandbox dry-global was created \(only networkPolicies may change\); nothing was sent$/m);
    const asJson = await cli(["policy", "set", "-s", name, "-f", asGlobal, "--dry-run", "-o", "json"]);
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stdout)).toMatchObject({ desiredSource: "global", wouldBeRefused: true, staticFieldsChecked: true, staticFieldsChanged: ["filesystem"] });

    // Sent for real, the gateway refuses the one and takes the other, as the dry runs said.
    const real = await cli(["policy", "set", "-s", name, "-f", asGlobal]);
    expect(real.code).toBe(1);
    expect(real.stderr).toMatch(/policy\.filesystem differs from the policy the sandbox was created with/);
    const taken = await cli(["policy", "set", "-s", name, "-f", same]);
    expect(taken.code, taken.stderr).toBe(0);
  }, 60_000);
});
