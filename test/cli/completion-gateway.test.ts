// Shell completion of values from the gateway (issue 30): bash, with the script the binary prints
// and the binary on PATH as `openshell-config`, offers sandbox names after --sandbox, operation
// ids after `operation get`, and this user's rollout ids after `policy rollout status`; the
// connection flags typed on the line are the ones used. Against a gateway that is down or never
// answers it offers nothing and returns (its own budget ends the wait), printing nothing on the
// terminal.

import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { typedFlags } from "../../cli/dynamic-completion.js";
import { BIN, build, policyYaml, runBash, runBinary, type Run } from "./harness.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
let stack: LocalStack;
let dir: string;
let env: Record<string, string>;
let silent: Server;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "openshell-cli-complete-"));
  mkdirSync(join(dir, "bin"));
  const [started] = await Promise.all([startLocalStack({ sandboxes: [] }), build()]);
  stack = started;
  // `openshell-config` on PATH, as an installed command is.
  writeFileSync(join(dir, "bin", "openshell-config"), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`);
  chmodSync(join(dir, "bin", "openshell-config"), 0o755);
  env = { PATH: `${join(dir, "bin")}:${process.env.PATH}`, HOME: dir, XDG_STATE_HOME: join(dir, "state"), OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: stack.adminToken };
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
  for (const name of ["comp-alpha", "comp-beta", "other"]) await raw.createSandbox({ name, labels: { team: "comp" }, spec: { policy: { version: 1, filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] } } }, workspaceScope: workspaceScope() });
  writeFileSync(join(dir, "p.yaml"), policyYaml({ github: { host: "api.github.com" } }));
  // An operation to complete, and a saved rollout (no supervisor: they stay pending; --timeout 1ms ends the wait).
  const set = await cli(["policy", "set", "-s", "comp-alpha", "-f", "p.yaml"]);
  expect(set.code, set.stderr).toBe(0);
  await cli(["policy", "rollout", "-l", "team=comp", "-f", "p.yaml", "--timeout", "1ms"]);
  // A gateway that accepts connections and never answers.
  silent = createServer(() => undefined);
  await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
}, 180_000);

afterAll(async () => {
  silent?.close();
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function cli(args: readonly string[]): Promise<Run> {
  return runBinary(args, dir, env);
}

/** COMPREPLY for the words typed (the last one being completed), from the real bash script. */
async function complete(words: readonly string[], extra: Record<string, string> = {}): Promise<{ words: string[]; stderr: string }> {
  const script = `source <(openshell-config completion bash); COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")}); COMP_CWORD=${words.length - 1}; _openshell_config; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = await runBash(script, dir, { ...env, ...extra });
  expect(r.code, r.stderr).toBe(0);
  return { words: r.stdout.split("\n").filter((w) => w !== ""), stderr: r.stderr };
}

describe("completion from the gateway", () => {
  it("offers the gateway's sandbox names after --sandbox, filtered by what is typed", async () => {
    expect((await complete(["openshell-config", "policy", "set", "--sandbox", "comp-"])).words.sort()).toEqual(["comp-alpha", "comp-beta"]);
    expect((await complete(["openshell-config", "policy", "get", "-s", ""])).words.sort()).toEqual(["comp-alpha", "comp-beta", "other"]);
  });

  it("uses the connection flags typed on the line: --url of a gateway that is down offers nothing", async () => {
    const down = await complete(["openshell-config", "--url", "http://127.0.0.1:9", "policy", "get", "-s", ""]);
    expect(down).toEqual({ words: [], stderr: "" });
  });

  it("offers operation ids after operation get, and the saved rollouts' ids after policy rollout status", async () => {
    // Beside the command's options (offered too while nothing is typed).
    const ops = (await complete(["openshell-config", "operation", "get", ""])).words.filter((w) => !w.startsWith("-"));
    expect(ops.length).toBeGreaterThan(0);
    for (const id of ops) expect(id).toMatch(UUID);
    const rollouts = (await complete(["openshell-config", "policy", "rollout", "status", ""])).words.filter((w) => !w.startsWith("-"));
    expect(rollouts).toHaveLength(1);
    expect(rollouts[0]).toMatch(UUID);
    // Options are still offered beside them.
    expect((await complete(["openshell-config", "operation", "get", "--wa"])).words).toEqual(["--watch"]);
  });

  it("returns with nothing from a gateway that never answers, bounded by its own budget", async () => {
    const { port } = silent.address() as { port: number };
    const r = await complete(["openshell-config", "policy", "get", "-s", ""], { OPENSHELL_GATEWAY_URL: `http://127.0.0.1:${port}` });
    expect(r).toEqual({ words: [], stderr: "" });
  }, 20_000);

  it("reads the connection flags out of a command line that does not parse yet", () => {
    expect(typedFlags(["--url=http://gw:1", "-g", "lab", "policy", "set", "-s", "web", "--protocol", "connect", "--workspace", "team-a", "-A", "--gateway-insecure"])).toEqual({
      url: "http://gw:1",
      gateway: "lab",
      sandbox: "web",
      protocol: "connect",
      workspace: "team-a",
      allWorkspaces: true,
      gatewayInsecure: true,
    });
    // A flag without its value yet, and a protocol that does not exist, are left out.
    expect(typedFlags(["--protocol", "ftp", "policy", "get", "-s"])).toEqual({});
  });
});
