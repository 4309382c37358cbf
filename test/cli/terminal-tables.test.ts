// Tables and watch screens at 80 columns, in a real pseudo-terminal (tmux), as a newcomer met them
// (issue 30, item 5): `sandbox list`, `policy history` and `operation list` wrapped mid-word
// (full timestamps and UUIDs), `operation get -w` cut its own state word and `policy rollout
// status -w` cut the command to copy. Now no row of a table wraps (AGE, short ids, the last
// column cut to the width), state words are whole, commands to copy are whole, `-o wide` has the
// full ids and times, and `--no-headers` drops the header row. The screens are saved to
// test-results/.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { fleetNames, startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { build, policyYaml, ROOT, runBinary, waitReady } from "./harness.js";
import { hasTmux, startInPane, type Screen } from "./tmux.js";

const web = "tt-web";
/** No supervisor: its updates stay pending. */
const stuck = "tt-stuck";
const fleet = fleetNames("tq-", 2);
const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";

let stack: LocalStack;
let dir: string;
let env: Record<string, string>;
let n = 0;

function policyFile(extra: Record<string, { host: string; protocol?: string }> = {}): string {
  const path = join(dir, `p${++n}.yaml`);
  writeFileSync(path, policyYaml({ github: { host: "api.github.com" }, [`r${n}`]: { host: `r${n}.example.com` }, ...extra }));
  return path;
}

const pane = (args: readonly string[]) => startInPane(80, args, env, dir);
const cli = (args: readonly string[]) => runBinary(args, dir, env);

function save(name: string, screen: Screen): void {
  mkdirSync(join(ROOT, "test-results"), { recursive: true });
  writeFileSync(join(ROOT, "test-results", name), `${screen.rows.join("\n")}\n`);
}

/** No row wrapped: the pane's rows are the printed lines, each within 80 columns. */
function fits(screen: Screen): void {
  expect(screen.rows).toEqual(screen.lines);
  for (const row of screen.rows) expect([...row].length, row).toBeLessThanOrEqual(80);
}

beforeAll(async () => {
  if (!(await hasTmux())) throw new Error("test/cli/terminal-tables.test.ts needs tmux (e.g. apt-get install tmux)");
  dir = mkdtempSync(join(tmpdir(), "openshell-cli-tables-"));
  mkdirSync(join(dir, "home"));
  const [started] = await Promise.all([startLocalStack({ sandboxes: [web, ...fleet] }), build()]);
  stack = started;
  env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(dir, "home"), XDG_STATE_HOME: join(dir, "state"), OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: stack.adminToken };
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
  const policy = { version: 1, filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] } };
  await raw.createSandbox({ name: web, labels: { team: "platform", env: "production", tier: "frontend" }, spec: { policy }, workspaceScope: workspaceScope() });
  await raw.createSandbox({ name: stuck, spec: { policy }, workspaceScope: workspaceScope() });
  for (const name of fleet) await raw.createSandbox({ name, labels: { fleet: "tables" }, spec: { policy }, workspaceScope: workspaceScope() });
  stack.startSupervisor({ sandbox: web });
  stack.startSupervisor({ fleet: { prefix: "tq-", count: fleet.length } });
  await waitReady(async (name) => (await raw.getSandbox({ name, workspaceScope: workspaceScope() })).sandbox?.status?.phase, [web, ...fleet], stack.logFile, 600);
  // web's history: applied, then a rule its supervisor rejects (a long error, outcome failed-retained-last-known-good).
  for (const file of [policyFile(), policyFile({ files: { host: "files.example.com", protocol: "ftp" } })]) {
    const r = await cli(["policy", "set", "--sandbox", web, "--file", file, "--wait"]);
    expect(r.stdout + r.stderr).toMatch(/applied|failed/);
  }
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("tables at 80 columns", () => {
  it("sandbox list: no row wraps, an AGE column, labels cut to the width, WORKSPACE only with -A; --no-headers drops the header; -o wide adds the full id", async () => {
    const screen = await (await pane(["sandbox", "list"])).finish();
    expect(screen.code).toBe(0);
    fits(screen);
    // One workspace: no WORKSPACE column (as kubectl's NAMESPACE, it comes with -A). LABELS, the
    // last column, is cut to what is left of the width, or left out when not even its name fits.
    expect(screen.lines[0]).toMatch(/^NAME\s+PHASE\s+DESIRED\s+ENFORCED\s+DRIFT\s+AGE(\s+LABELS)?$/);
    expect(screen.lines.find((l) => l.startsWith(`${web} `))).toMatch(/^tt-web\s+ready\s+v3\s+v2\s+behind,last-update-failed\s+\d+(s|m\d*s?)\b/);
    const one = await (await pane(["sandbox", "list", "-l", "team=platform"])).finish();
    fits(one);
    expect(one.lines).toEqual([
      expect.stringMatching(/^NAME\s+PHASE\s+DESIRED\s+ENFORCED\s+DRIFT\s+AGE\s+LABELS$/),
      expect.stringMatching(/^tt-web\s+ready\s+v3\s+v2\s+behind,last-update-failed\s+\d+(s|m\d*s?)\s+\w+=\S*…$/),
    ]);
    expect(one.lines[1]).toHaveLength(80);
    const across = await (await pane(["sandbox", "list", "-A", "-l", "fleet=tables"])).finish();
    fits(across);
    expect(across.lines[0]).toMatch(/^NAME\s+WORKSPACE\s+PHASE\s+DESIRED\s+ENFORCED\s+DRIFT\s+AGE\s+LABELS$/);
    expect(across.lines[1]).toMatch(/^tq-0000\s+default\s+ready\s/);
    save("sandbox-list-80.txt", screen);

    const bare = await (await pane(["sandbox", "list", "--no-headers"])).finish();
    expect(bare.lines.some((l) => l.startsWith("NAME"))).toBe(false);
    expect(bare.lines.find((l) => l.startsWith(`${web} `))).toBeDefined();

    const wide = await cli(["sandbox", "list", "-o", "wide"]);
    expect(wide.stdout.split("\n")[0]).toMatch(/^NAME\s+WORKSPACE\s+ID\s+PHASE\s+DESIRED\s+ENFORCED\s+DRIFT\s+CREATED\s+LABELS$/);
    expect(wide.stdout).toMatch(new RegExp(`^${web}\\s+default\\s+${UUID}\\s+ready\\s.+\\d{4}-\\d\\d-\\d\\dT.+\\S*team=platform\\S*$`, "m"));
  }, 60_000);

  it("policy history: whole status words, AGE instead of two timestamps, the load error cut to the width", async () => {
    const screen = await (await pane(["policy", "history", "--sandbox", web])).finish();
    expect(screen.code).toBe(0);
    fits(screen);
    expect(screen.lines[0]).toMatch(/^VERSION\s+STATUS\s+HASH\s+AGE\s+ERROR$/);
    expect(screen.lines[1]).toMatch(/^v3\s+failed\s+sha256:[0-9a-f]{12}…\s+\d+s\s+invalid policy: .*…$/);
    expect(screen.lines[2]).toMatch(/^v2\s+loaded \(enforced\)\s+sha256:/);
    save("policy-history-80.txt", screen);
    const wide = await cli(["policy", "history", "--sandbox", web, "-o", "wide"]);
    expect(wide.stdout).toContain('protocol "ftp" is not supported');
    expect(wide.stdout.split("\n")[0]).toMatch(/^VERSION\s+STATUS\s+HASH\s+CREATED\s+LOADED\s+ERROR$/);
  }, 60_000);

  it("operation list: short ids, whole outcome words (failed-retained-last-known-good), AGE; the full id with -o wide, and a short id given back is named as such", async () => {
    const screen = await (await pane(["operation", "list", "--sandbox", web])).finish();
    expect(screen.code).toBe(0);
    fits(screen);
    expect(screen.lines[0]).toMatch(/^OPERATION\s+CHANGE\s+STATE\s+OUTCOME\s+AGE\s+ERROR$/);
    expect(screen.lines[1]).toMatch(/^[0-9a-f]{8}\s+policy v3\s+failed\s+failed-retained-last-known-good\s+\d+s\s+\S/);
    expect(screen.lines[2]).toMatch(/^[0-9a-f]{8}\s+policy v2\s+applied\s+-\s+\d+s$/);
    save("operation-list-80.txt", screen);
    const short = screen.lines[1]!.slice(0, 8);
    const wide = await cli(["operation", "list", "--sandbox", web, "-o", "wide"]);
    const full = new RegExp(`^(${short}-[0-9a-f-]{27})\\s`, "m").exec(wide.stdout)?.[1];
    expect(full, wide.stdout).toBeDefined();
    const named = await cli(["operation", "get", short]);
    expect(named.code).toBe(2);
    expect(named.stderr).toContain(`"${short}" is a short operation ID`);
    expect((await cli(["operation", "get", full!])).code).toBe(0);
  }, 60_000);
});

/**
 * Columns on screen of the text in the test below, counted without the code under test: its
 * kana, kanji and ideographic punctuation (U+3000 and up) take two columns, everything else one.
 */
const screenColumns = (text: string) => [...text].reduce((n, ch) => n + (ch.codePointAt(0)! >= 0x3000 ? 2 : 1), 0);

describe("wide characters at 80 columns", () => {
  it("settings list: values in Japanese keep the columns in line on screen; a long value is cut to the width and SCOPE stays; piped, it is whole", async () => {
    const sandbox = fleet[1]!;
    const long = "設定の値は画面の幅に合わせて切られます。".repeat(4);
    for (const [key, value] of [["greeting", "こんにちは"], ["motto", long], ["owner", "platform"]] as const) {
      const r = await cli(["settings", "set", "--sandbox", sandbox, "--key", key, "--value", value]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
    }
    const screen = await (await pane(["settings", "list", "--sandbox", sandbox])).finish();
    expect(screen.code).toBe(0);
    save("settings-list-cjk-80.txt", screen);
    // No row wrapped, and none is wider than the terminal in columns (not code units).
    expect(screen.rows).toEqual(screen.lines);
    for (const row of screen.rows) expect(screenColumns(row), row).toBeLessThanOrEqual(80);
    expect(screen.lines[0]).toMatch(/^KEY\s+TYPE\s+VALUE\s+SCOPE$/);
    expect(screen.lines[1]).toMatch(/^greeting\s+string\s+"こんにちは"\s+sandbox$/);
    expect(screen.lines[2]).toMatch(/^motto\s+string\s+"設定の値は[^"]*…\s+sandbox$/);
    expect(screen.lines[3]).toMatch(/^owner\s+string\s+"platform"\s+sandbox$/);
    // SCOPE starts at one column on every row, as the eye sees it.
    const scopeAt = screen.lines.map((l) => screenColumns(l.slice(0, l.search(/\S+$/))));
    expect(new Set(scopeAt).size, screen.lines.join("\n")).toBe(1);
    const piped = await cli(["settings", "list", "--sandbox", sandbox]);
    expect(piped.stdout).toContain(`"${long}"`);
  }, 60_000);
});

describe("watch screens at 80 columns", () => {
  it("operation get -w keeps the state word whole beside the full id, and Ctrl-C ends it", async () => {
    const set = await cli(["policy", "set", "--sandbox", stuck, "--file", policyFile(), "-o", "json"]);
    const id = (JSON.parse(set.stdout) as { operationId: string }).operationId;
    const run = await pane(["operation", "get", id, "-w"]);
    let rows: string[] = [];
    for (let i = 0; i < 200 && !rows.some((r) => r.includes(`operation ${id}`)); i++) {
      await new Promise((r) => setTimeout(r, 50));
      rows = await run.capture();
    }
    expect(rows).toContainEqual(expect.stringMatching(new RegExp(`^\\d\\d:\\d\\d:\\d\\d  operation ${id}: pending`)));
    await run.keys("C-c");
    const screen = await run.finish();
    expect(screen.code).toBe(130);
    save("operation-watch-80.txt", screen);
  }, 60_000);

  it("policy rollout status -w prints the command to copy whole, and Ctrl-C ends it with 130 as every -w does", async () => {
    const paused = await cli(["policy", "rollout", "--selector", "fleet=tables", "--file", policyFile(), "--waves", "1,100%", "--pause-for-approval"]);
    expect(paused.code, paused.stderr).toBe(3);
    const id = new RegExp(`rollout (${UUID})`).exec(paused.stdout + paused.stderr)![1]!;
    const run = await pane(["policy", "rollout", "status", id, "-w"]);
    await run.waitForRow((r) => r.startsWith("undo with"), "the undo command");
    await run.keys("C-c");
    const screen = await run.finish();
    expect(screen.code).toBe(130);
    // The status whole on its own line, and each command whole on a row of its own.
    expect(screen.rows).toContain("status: paused after wave 1/2, waiting for approval");
    expect(screen.rows).toContain(`  openshell-config policy rollout resume ${id}`);
    expect(screen.rows).toContain(`  openshell-config policy rollout undo ${id}`);
    expect(screen.rows.slice(0, -1)).toEqual(screen.lines.slice(0, -1));
    expect(screen.rows.join("\n")).not.toContain("…");
    save("rollout-status-watch-80.txt", screen);

    // Under npx, from the clone, the same Ctrl-C gives the same exit status. (npm ends itself by
    // SIGINT whatever its child returns, which a shell reports as 130; this one traps SIGINT so
    // that it lives on to report it, as an interactive shell does.)
    const npxEnv = { ...env, npm_config_cache: join(dir, "npm-cache"), npm_config_update_notifier: "false" };
    const npx = await startInPane(80, ["policy", "rollout", "status", id, "-w"], npxEnv, ROOT, ["bash", "-c", 'trap : INT; npx openshell-config "$@"', "npx"]);
    await npx.waitForRow((r) => r.startsWith("undo with"), "the undo command under npx");
    await npx.keys("C-c");
    expect((await npx.finish()).code).toBe(130);
  }, 60_000);
});
