// README.md's commands, run as printed, so that the README and the behaviour cannot drift apart.
// Every ```sh block of the README has a marker on the line before it (`<!-- readme-test:NAME -->`)
// and this file runs the blocks of each NAME:
//   try-it         `npm start` exits 0 and shows each kind of outcome; `.ci/run` runs `npm test`
//   cli-setup      `npx openshell-config --help` after the build, from the clone
//   cli-session    every such block, in document order, in one bash session in the clone, against
//                  `npm run gateway` and with the `export` line it printed; each command's exit
//                  status is the README's (`# exit N`, else 0), and every `$ command` the README
//                  shows in a ```text block prints the lines shown (their words; `…` = anything)
//   gateway-serve  the reference gateway's two commands, on a free port, its files in a temporary
//                  directory and the README's auth file with real tokens
//   dashboard      `npm run dashboard` serves the dashboard and prints a working `export` line
//   connect, connect-local  (readme-connect.test.ts) the command line against a stock install's
//                  gateway registry, and `npm run gateway -- --mtls` with the line it printed
// Real processes throughout: the commands start the gateway and supervisors themselves. The
// session uses a fresh npm cache, as on a machine where `npx openshell-config` never ran.

import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TOKEN_ENV, URL_ENV } from "../../cli/config.js";
import { freePort } from "../../examples/local-stack.js";
import { build, ROOT } from "../cli/harness.js";
import { Background, bash, userEnvIn } from "./background.js";
import { missingLines, readmeBlocks, shellCommands, shownOutputs, type ShellCommand } from "./readme-blocks.js";

const README = readFileSync(join(ROOT, "README.md"), "utf8");
const BLOCKS = readmeBlocks(README);
const HANDLED = ["try-it", "cli-setup", "cli-session", "gateway-serve", "dashboard", "connect", "connect-local"];
/** The port the README's commands and outputs name; the test runs on free ports instead. */
const README_PORT = "8080";

const shBlocks = (marker: string) => BLOCKS.filter((b) => b.lang === "sh" && b.marker === marker);
const commandsOf = (marker: string): ShellCommand[] => shBlocks(marker).flatMap((b) => shellCommands(b.body));
const SHOWN = BLOCKS.filter((b) => b.lang === "text").flatMap((b) => shownOutputs(b.body));

let scratch: string;

/** The environment of a user's shell: no npm lifecycle variables, no gateway settings of ours. */
const userEnv = (extra: Record<string, string>): NodeJS.ProcessEnv => userEnvIn(scratch, extra);

const background: Background[] = [];

beforeAll(async () => {
  // Inside the checkout (test-results/ is ignored by git), as the README's commands run "in the
  // clone": npx finds the clone's own command from there.
  mkdirSync(join(ROOT, "test-results"), { recursive: true });
  scratch = mkdtempSync(join(ROOT, "test-results", "readme-"));
  // `npm install && npm run build`: the install is this checkout's; the build as the CLI tests do it.
  await build();
}, 180_000);

afterAll(async () => {
  await Promise.all(background.map((b) => b.stop()));
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("README.md", () => {
  it("marks every ```sh block with the test that runs it, and shows output only of commands a test runs", () => {
    const sh = BLOCKS.filter((b) => b.lang === "sh");
    expect(sh.length).toBeGreaterThan(0);
    for (const b of sh) expect(HANDLED, `README.md:${b.line}: a sh block without a known <!-- readme-test:NAME --> marker`).toContain(b.marker);
    const session = commandsOf("cli-session").map((c) => c.bare);
    for (const s of SHOWN) expect([...session, "npm run gateway"], `README.md shows the output of "$ ${s.command}", which no test runs`).toContain(s.command);
  });

  it("keeps its Performance section a short table of ratios to the floor, the measurements in docs/performance.md", () => {
    const section = README.slice(README.indexOf("\n## Performance\n"), README.indexOf("\n## Development\n"));
    expect(section.split("\n").length).toBeLessThan(40);
    expect(section).toContain("| Measure | ours ÷ floor | target |");
    expect(section).toContain("](docs/performance.md)");
    const doc = readFileSync(join(ROOT, "docs", "performance.md"), "utf8");
    // Every relative link of the moved text still points at a file.
    for (const [, target] of doc.matchAll(/\]\((\.\.\/[^)#\s]+)/g)) expect(existsSync(join(ROOT, "docs", target!)), target).toBe(true);
  });

  it("try-it: `npm start` exits 0 after one update of each kind; .ci/run runs `npm test`", async () => {
    const commands = commandsOf("try-it").map((c) => c.bare);
    expect(commands).toEqual(["npm install && npm start", "npm install && npm test"]);
    // `npm install` is this checkout's own; `npm test` cannot run inside itself: .ci/run runs it.
    const ci = readFileSync(join(ROOT, ".ci", "run"), "utf8");
    expect(ci.split("\n").map((l) => l.trim())).toContain("npm test");
    // Its own TMPDIR, to see that the demo removes the folder it worked in.
    const tmp = join(scratch, "demo-tmp");
    mkdirSync(tmp, { recursive: true });
    const demo = await bash("npm start", ROOT, userEnv({ TMPDIR: tmp }), 170_000);
    expect(demo.code, `${demo.stdout}\n${demo.stderr}`).toBe(0);
    for (const kind of ["applied", "degraded", "failed", "superseded", "inactive", "resumed by key"]) expect(demo.stdout).toContain(kind);
    // No enum's "unspecified", and each step names the sandbox it changes.
    expect(demo.stdout).not.toContain("unspecified");
    expect(demo.stdout).toMatch(/3\. failed: web gets/);
    expect(demo.stdout).toMatch(/4\. superseded: two quick updates to web/);
    // The logs' path is printed only when the demo fails; its folder is gone once it succeeds.
    expect(demo.stdout + demo.stderr).not.toMatch(/logs/);
    expect(readdirSync(tmp).filter((f) => f.startsWith("openshell-demo-"))).toEqual([]);
  }, 180_000);

  it("cli-setup: `npx openshell-config --help` runs the clone's command after the build", async () => {
    const commands = commandsOf("cli-setup");
    expect(commands.map((c) => c.bare)[0]).toBe("npm install && npm run build");
    const env = userEnv({ npm_config_cache: join(scratch, "npm-cache-setup") });
    for (const c of commands.slice(1)) {
      const r = await bash(c.text, ROOT, env, 60_000);
      expect(r.code, `${c.bare}\n${r.stdout}\n${r.stderr}`).toBe(c.exitCode);
      expect(r.stdout).toContain("Usage: openshell-config");
    }
  }, 120_000);

  it("cli-session: every command, in order, against `npm run gateway`, with the export line it printed", async () => {
    const port = await freePort();
    const gateway = new Background("npm run gateway", userEnv({ OPENSHELL_LOCAL_DIR: join(scratch, "gateway-state"), OPENSHELL_GATEWAY_PORT: String(port) }));
    background.push(gateway);
    const [exportLine] = await gateway.waitFor(new RegExp(`^export ${URL_ENV}=\\S+ ${TOKEN_ENV}=\\S+$`, "m"));
    // The second operator's line (the README's shared rollout): the same, with demo-reviewer's token.
    const [reviewerLine] = await gateway.waitFor(new RegExp(`^export ${URL_ENV}=\\S+ ${TOKEN_ENV}=reviewer-\\S+$`, "m"));
    await gateway.waitFor(/^Ctrl-C to stop\.$/m);
    const gatewayShown = SHOWN.find((s) => s.command === "npm run gateway");
    expect(gatewayShown, "README.md shows what npm run gateway prints").toBeDefined();
    const onPort = (text: string) => text.replaceAll(`:${README_PORT}`, `:${port}`);
    expect(missingLines(gatewayShown!.lines.map(onPort), gateway.output), gateway.output).toEqual([]);

    const commands = commandsOf("cli-session");
    // The first command is "paste the line npm run gateway printed": the README's line is that
    // line with the token elided.
    const pasted = commands[0]!;
    expect(pasted.bare.startsWith(`export ${URL_ENV}=`)).toBe(true);
    expect(missingLines([onPort(pasted.bare)], exportLine), `README: ${pasted.bare}\nprinted: ${exportLine}`).toEqual([]);
    const second = commands.findIndex((c) => c.bare.startsWith(`export ${URL_ENV}=`) && c.bare.includes("reviewer-"));
    expect(second, "README.md: the second operator pastes the second line npm run gateway printed").toBeGreaterThan(0);
    expect(missingLines([onPort(commands[second]!.bare)], reviewerLine), `README: ${commands[second]!.bare}\nprinted: ${reviewerLine}`).toEqual([]);
    const script = [
      "set -o pipefail",
      ...[{ ...pasted, text: exportLine }, ...commands.slice(1)].map((c, i) => (i === second ? { ...c, text: reviewerLine } : c)).map(
        (c, i) => `{\n${c.text}\n} >"$OUT/${i}.out" 2>"$OUT/${i}.err"; echo $? >"$OUT/${i}.rc"`,
      ),
    ].join("\n");
    const work = join(scratch, "session");
    const out = join(scratch, "session-output");
    mkdirSync(work);
    mkdirSync(out);
    writeFileSync(join(scratch, "session.sh"), script);
    const run = await bash(`bash ${JSON.stringify(join(scratch, "session.sh"))}`, work, userEnv({ OUT: out, npm_config_cache: join(scratch, "npm-cache") }), 240_000);
    expect(run.code, run.stderr).toBe(0);

    const results = commands.map((c, i) => {
      const read = (ext: string) => {
        try {
          return readFileSync(join(out, `${i}.${ext}`), "utf8");
        } catch {
          return "";
        }
      };
      return { command: c, code: read("rc").trim(), stdout: read("out"), stderr: read("err") };
    });
    for (const r of results) {
      expect(r.code, `"${r.command.bare}" exited ${r.code || "(never ran)"}, the README says ${r.command.exitCode}:\n${r.stdout}\n${r.stderr}\n(gateway: ${gateway.output})`).toBe(String(r.command.exitCode));
    }
    for (const s of SHOWN.filter((x) => x.command !== "npm run gateway")) {
      const r = results.find((x) => x.command.bare === s.command)!;
      const printed = `${r.stdout}\n${r.stderr}`;
      expect(missingLines(s.lines, printed), `"$ ${s.command}" printed:\n${printed}`).toEqual([]);
    }
    // Stable facts of the commands whose output the README describes in words.
    const byCommand = (prefix: string) => results.find((r) => r.command.bare.startsWith(prefix))!;
    expect(byCommand("npx openshell-config sandbox list").stdout).toMatch(/^dev\b[^\n]*\bv1\b/m);
    for (const name of ["dev", "staging", "prod"]) expect(byCommand("npx openshell-config sandbox list").stdout).toMatch(new RegExp(`^${name}\\b`, "m"));
    expect(byCommand("npx openshell-config policy get --sandbox dev").stdout).toMatch(/\bv2\b/);
    expect(byCommand("npx openshell-config policy get --sandbox dev").stdout).toContain("registry.npmjs.org");
    expect(byCommand("npx openshell-config operation get").stdout).toMatch(/^operation [0-9a-f-]{36}: /m);
    expect(byCommand("npx openshell-config operation wait").stdout).toMatch(/^operation [0-9a-f-]{36}: applied/m);
    const prodOnly = byCommand("npx openshell-config sandbox list --selector env=prod").stdout;
    expect(prodOnly).toMatch(/^prod\b/m);
    expect(prodOnly).not.toMatch(/^(dev|staging)\b/m);
    expect(byCommand("npx openshell-config policy rollout --resume").stdout).toMatch(/\bapplied\b/);
    // The wave rollout: three waves passed, then undone (each sandbox back to its revision before).
    expect(byCommand("npx openshell-config policy rollout status").stdout).toMatch(/^rollout [0-9a-f-]{36}\nstatus: done$/m);
    expect(byCommand("npx openshell-config policy rollout undo").stdout).toMatch(/^rolled back 3 of 3 changed sandboxes$/m);
    expect(byCommand("npx openshell-config policy rollout undo").code).toBe("0");
  }, 300_000);

  it("gateway-serve: the reference gateway builds, and serves with the auth file the README's commands write", async () => {
    const commands = commandsOf("gateway-serve");
    expect(commands.map((c) => c.bare)).toEqual([
      "npm run build -w gateway",
      "umask 077",
      "cat > auth.json <<EOF",
      "node gateway/dist/cli.js serve --db sqlite:./gateway.db --port 8080 --auth-file ./auth.json",
    ]);
    const built = await bash(commands[0]!.text, ROOT, userEnv({}), 120_000);
    expect(built.code, `${built.stdout}\n${built.stderr}`).toBe(0);

    // The auth file, written as printed (umask and here-document in one shell) in a folder of its own.
    const dir = join(scratch, "serve");
    mkdirSync(dir);
    const written = await bash(`${commands[1]!.text}\n${commands[2]!.text}`, dir, userEnv({}), 30_000);
    expect(written.code, `${written.stdout}\n${written.stderr}`).toBe(0);
    expect(statSync(join(dir, "auth.json")).mode & 0o077, "the auth file is private").toBe(0);
    const tokens = (JSON.parse(readFileSync(join(dir, "auth.json"), "utf8")) as { tokens: { token: string }[] }).tokens.map((t) => t.token);
    expect(tokens).toHaveLength(3);
    for (const t of tokens) expect(t).toMatch(/^[0-9a-f]{64}$/);
    const port = await freePort();
    const serve = commands[3]!.text
      .replace("sqlite:./gateway.db", `sqlite:${join(dir, "gateway.db")}`)
      .replace(`--port ${README_PORT}`, `--port ${port}`)
      .replace("./auth.json", join(dir, "auth.json"));
    const gateway = new Background(serve, userEnv({}));
    background.push(gateway);
    const url = `http://127.0.0.1:${port}`;
    const end = Date.now() + 30_000;
    for (;;) {
      const ok = await fetch(`${url}/healthz`).then((r) => r.ok, () => false);
      if (ok) break;
      if (gateway.child.exitCode !== null || Date.now() > end) throw new Error(`the gateway did not become healthy:\n${gateway.output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    // alice, the first token: an admin of the default workspace.
    const list = await bash("npx openshell-config sandbox list", join(scratch), userEnv({ [URL_ENV]: url, [TOKEN_ENV]: tokens[0]!, npm_config_cache: join(scratch, "npm-cache-serve") }), 60_000);
    expect(list.code, `${list.stdout}\n${list.stderr}`).toBe(0);
    await gateway.stop();
  }, 180_000);

  it("dashboard: `npm run dashboard` serves the dashboard and prints an export line the command line can use", async () => {
    expect(commandsOf("dashboard").map((c) => c.bare)).toEqual(["npm run dashboard"]);
    const [gatewayPort, dashboardPort] = [await freePort(), await freePort()];
    const dashboard = new Background(
      commandsOf("dashboard")[0]!.text,
      userEnv({ OPENSHELL_LOCAL_DIR: join(scratch, "dashboard-state"), OPENSHELL_GATEWAY_PORT: String(gatewayPort), DASHBOARD_PORT: String(dashboardPort) }),
    );
    background.push(dashboard);
    const [, dashboardUrl] = await dashboard.waitFor(/^dashboard:\s+(\S+)$/m);
    const [exportLine] = await dashboard.waitFor(new RegExp(`export ${URL_ENV}=\\S+ ${TOKEN_ENV}=\\S+$`, "m"));
    const page = await fetch(dashboardUrl!);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<html");
    const list = await bash(`${exportLine}\nnpx openshell-config sandbox list`, scratch, userEnv({ npm_config_cache: join(scratch, "npm-cache-dashboard") }), 60_000);
    expect(list.code, `${list.stdout}\n${list.stderr}`).toBe(0);
    for (const name of ["dev", "staging", "prod"]) expect(list.stdout).toMatch(new RegExp(`^${name}\\b`, "m"));
    await dashboard.stop();
  }, 180_000);
});
