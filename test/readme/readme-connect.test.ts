// README.md's "Connect to your OpenShell gateway": its two ```sh blocks, run as printed.
//   connect        the command line with no flags against a stock-install layout: an `openshell`
//                  entry in the user registry ($XDG_CONFIG_HOME/openshell, `active_gateway`,
//                  metadata.json, the mTLS bundle), pointing at the reference gateway on mutual
//                  TLS (made from the bundle `npm run gateway -- --mtls` wrote)
//   connect-local  `npm run gateway -- --mtls`, the `export` line it printed, `sandbox list`
// Real processes throughout, with a fresh npm cache as on a machine where npx never ran.

import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../examples/local-stack.js";
import { build, ROOT } from "../cli/harness.js";
import { Background, bash, userEnvIn } from "./background.js";
import { missingLines, readmeBlocks, shellCommands, type ShellCommand } from "./readme-blocks.js";

const README = readFileSync(join(ROOT, "README.md"), "utf8");
const commandsOf = (marker: string): ShellCommand[] =>
  readmeBlocks(README)
    .filter((b) => b.lang === "sh" && b.marker === marker)
    .flatMap((b) => shellCommands(b.body));

let scratch: string;
let localDir: string;
let gateway: Background;
let exportLine: string;

beforeAll(async () => {
  mkdirSync(join(ROOT, "test-results"), { recursive: true });
  scratch = mkdtempSync(join(ROOT, "test-results", "readme-connect-"));
  localDir = join(scratch, "local");
  const [start] = commandsOf("connect-local");
  expect(start?.bare).toBe("npm run gateway -- --mtls");
  await build();
  gateway = new Background(start!.bare, userEnvIn(scratch, { OPENSHELL_LOCAL_DIR: localDir, OPENSHELL_GATEWAY_PORT: String(await freePort()) }));
  [exportLine] = await gateway.waitFor(/^export OPENSHELL_SYSTEM_GATEWAY_DIR=\S+ OPENSHELL_GATEWAY=\S+$/m);
  await gateway.waitFor(/^Ctrl-C to stop\.$/m);
}, 240_000);

afterAll(async () => {
  await gateway?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("README.md: Connect to your OpenShell gateway", () => {
  it("connect-local: the export line npm run gateway -- --mtls printed is the README's, and sandbox list runs with it alone", async () => {
    const [, pasted, ...rest] = commandsOf("connect-local");
    // The README's line names the default directory, ./.openshell-local of the clone ($PWD there).
    expect(missingLines([pasted!.bare.replace("$PWD/.openshell-local", localDir)], exportLine), `README: ${pasted!.bare}\nprinted: ${exportLine}`).toEqual([]);
    expect(rest.map((c) => c.bare)).toEqual(["npx openshell-config sandbox list"]);
    const work = join(scratch, "work-local");
    mkdirSync(work);
    const run = await bash([exportLine, ...rest.map((c) => c.text)].join("\n"), work, userEnvIn(scratch, { npm_config_cache: join(scratch, "npm-cache") }), 90_000);
    expect(run.code, `${run.stdout}\n${run.stderr}\n(gateway: ${gateway.output})`).toBe(0);
    for (const name of ["dev", "staging", "prod"]) expect(run.stdout).toMatch(new RegExp(`^${name}\\b`, "m"));
  }, 120_000);

  it("connect: with a stock install's registry and nothing else, gateway list, gateway current and sandbox list work over mutual TLS", async () => {
    // A stock install's layout: the entry `openshell`, active, in the user registry.
    const written = join(localDir, "gateways", "openshell-local");
    const home = join(scratch, "stock-config");
    const entry = join(home, "openshell", "gateways", "openshell");
    mkdirSync(join(entry, "mtls"), { recursive: true, mode: 0o700 });
    writeFileSync(join(home, "openshell", "active_gateway"), "openshell\n");
    const metadata = JSON.parse(readFileSync(join(written, "metadata.json"), "utf8")) as { gateway_endpoint: string };
    writeFileSync(join(entry, "metadata.json"), JSON.stringify({ ...metadata, name: "openshell" }));
    for (const f of ["ca.crt", "tls.crt", "tls.key"]) copyFileSync(join(written, "mtls", f), join(entry, "mtls", f));
    chmodSync(join(entry, "mtls", "tls.key"), 0o600);

    const commands = commandsOf("connect");
    expect(commands.map((c) => c.bare)).toEqual(["npx openshell-config gateway list", "npx openshell-config gateway current", "npx openshell-config sandbox list"]);
    const env = userEnvIn(scratch, { XDG_CONFIG_HOME: home, npm_config_cache: join(scratch, "npm-cache") });
    const work = join(scratch, "work-stock");
    mkdirSync(work);
    const runs = [];
    for (const c of commands) {
      const r = await bash(c.text, work, env, 90_000);
      expect(r.code, `${c.bare}\n${r.stdout}\n${r.stderr}`).toBe(c.exitCode);
      runs.push(r);
    }
    const [list, current, sandboxes] = runs;
    const endpoint = metadata.gateway_endpoint.replace(/[.]/g, "\\.");
    expect(list!.stdout).toMatch(new RegExp(`^\\*\\s+openshell\\s+${endpoint}\\s+mtls\\s+user\\s*$`, "m"));
    expect(current!.stdout).toMatch(/^gateway\s+openshell\b/m);
    expect(current!.stdout).toContain(join(entry, "mtls", "tls.key"));
    // Files are named, never shown.
    expect(`${current!.stdout}${current!.stderr}`).not.toMatch(/BEGIN|PRIVATE KEY/);
    for (const name of ["dev", "staging", "prod"]) expect(sandboxes!.stdout).toMatch(new RegExp(`^${name}\\b`, "m"));
  }, 180_000);
});
