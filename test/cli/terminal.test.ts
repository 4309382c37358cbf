// What a person sees in a terminal: the built binary under a real pseudo-terminal (a tmux pane
// 80 and 120 columns wide) against a real gateway and supervisors (examples/local-stack.ts). The
// tests read the screen, not only the exit status: a live line while waiting, then exactly the
// result (no spinner rows, no stale fragment, as many rows as the printed lines take), and what
// a timeout, Ctrl-C and a rollout leave on it. The 80-column screens of `policy set --wait` and of
// a rollout are saved to test-results/.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { fleetNames, startLocalStack, type LocalStack } from "../../examples/local-stack.js";
import { build, policyYaml, ROOT, runBinary, waitReady } from "./harness.js";
import { framesOf, hasTmux, rowsFor, startInPane, type Screen } from "./tmux.js";

/** Applies each update after 2 s: long enough for the spinner to be seen. */
const web = "term-web";
/** Has no supervisor, so its updates stay pending: for timeouts and Ctrl-C. */
const stuck = "term-stuck";
const fleet = fleetNames("tr-", 6);
const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
const SPINNER = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]/;
const COLUMNS = [80, 120] as const;

let stack: LocalStack;
let dir: string;
let env: Record<string, string>;
let files: string[] = [];

/** A policy file that differs from every earlier one, so that each update is a new revision. */
function policyFile(): string {
  const path = join(dir, `p${files.length}.yaml`);
  writeFileSync(path, policyYaml({ github: { host: "api.github.com" }, [`r${files.length}`]: { host: `r${files.length}.example.com` } }));
  files.push(path);
  return path;
}

function pane(columns: number, args: readonly string[], extra: Record<string, string> = {}) {
  return startInPane(columns, args, { ...env, ...extra }, dir);
}

/** Volatile values (ids, hashes, numbers) masked, to compare two runs of one command. */
const shape = (line: string) => line.replace(new RegExp(UUID, "g"), "<id>").replace(/[0-9a-f]{6,}/g, "<hex>").replace(/\d+/g, "#");

function save(name: string, screen: Screen): void {
  mkdirSync(join(ROOT, "test-results"), { recursive: true });
  writeFileSync(join(ROOT, "test-results", name), `${screen.rows.join("\n")}\n`);
}

beforeAll(async () => {
  if (!(await hasTmux())) throw new Error("test/cli/terminal.test.ts needs tmux (e.g. apt-get install tmux)");
  dir = mkdtempSync(join(tmpdir(), "openshell-cli-term-"));
  mkdirSync(join(dir, "home"));
  const [started] = await Promise.all([startLocalStack({ sandboxes: [web, ...fleet] }), build()]);
  stack = started;
  env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(dir, "home"), XDG_STATE_HOME: join(dir, "state"), OPENSHELL_GATEWAY_URL: stack.url, OPENSHELL_TOKEN: stack.adminToken };
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: stack.url }), token: stack.adminToken }).raw(OpenShell);
  const policy = { version: 1, filesystem: { includeWorkdir: true, readOnly: ["/usr"], readWrite: ["/tmp", "/workspace"] } };
  for (const name of [web, stuck]) await raw.createSandbox({ name, spec: { policy }, workspaceScope: workspaceScope() });
  for (const name of fleet) await raw.createSandbox({ name, labels: { fleet: "term" }, spec: { policy }, workspaceScope: workspaceScope() });
  stack.startSupervisor({ sandbox: web, args: ["--apply-delay-ms", "2000"] });
  stack.startSupervisor({ fleet: { prefix: "tr-", count: fleet.length }, args: ["--apply-delay-ms", "700"] });
  await waitReady(async (name) => (await raw.getSandbox({ name, workspaceScope: workspaceScope() })).sandbox?.status?.phase, [web, ...fleet], stack.logFile, 600);
}, 240_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.each(COLUMNS)("at %i columns", (columns) => {
  it("policy set --wait shows one live line while waiting, then exactly the result: no spinner rows, nothing stale above it", async () => {
    const file = policyFile();
    const run = await pane(columns, ["policy", "set", "--sandbox", web, "--file", file, "--wait"]);
    const during = await run.waitForRow((r) => /committed, waiting for sandbox/.test(r), "the live line");
    // One row on the screen: the live line, fitted.
    expect(during).toEqual([expect.stringMatching(new RegExp(`^${SPINNER.source} policy v\\d+ committed, waiting for sandbox ${web}: pending \\d+\\.\\ds$`))]);
    expect(during[0]!.length).toBeLessThan(columns);
    const screen = await run.finish();
    expect(screen.code).toBe(0);

    // The same command with stdout in a pipe prints the result alone: the screen shows just that.
    const piped = await runBinary(["policy", "set", "--sandbox", web, "--file", policyFile(), "--wait"], dir, env);
    expect(screen.lines.map(shape)).toEqual(piped.stdout.trimEnd().split("\n").map(shape));
    expect(screen.lines[0]).toMatch(new RegExp(`^policy v\\d+ of sandbox ${web}: applied$`));
    expect(screen.rows).toHaveLength(rowsFor(screen.lines, columns));
    expect(screen.rows.join("\n")).not.toMatch(SPINNER);
    // Every frame fitted the row and was drawn in place: nothing but the frames and the result.
    const frames = framesOf(screen.raw).filter((f) => SPINNER.test(f));
    expect(frames.length).toBeGreaterThan(1);
    for (const f of frames) expect([...f].length).toBeLessThan(columns);
    if (columns === 80) save("policy-set-wait-80.txt", screen);
  }, 60_000);

  it("operation wait that times out prints one message: the committed version, the operation and a resume command (without a --timeout as short as 1.5s)", async () => {
    const committed = await runBinary(["policy", "set", "--sandbox", stuck, "--file", policyFile(), "-o", "json"], dir, env);
    const { operationId: id, policyVersion } = JSON.parse(committed.stdout) as { operationId: string; policyVersion: number };
    const run = await pane(columns, ["operation", "wait", id, "--timeout", "1500ms"]);
    const screen = await run.finish();
    expect(screen.code).toBe(124);
    expect(screen.lines).toEqual([
      `policy v${policyVersion} committed; still pending after 1.5s (operation ${id})`,
      `resume with: openshell-config operation wait ${id}`,
    ]);
    expect(screen.rows).toHaveLength(rowsFor(screen.lines, columns));
  }, 60_000);

  it("Ctrl-C during policy set --wait leaves one message with the version and the resume command, and no trace of the live line or ^C", async () => {
    const run = await pane(columns, ["policy", "set", "--sandbox", stuck, "--file", policyFile(), "--wait"]);
    await run.waitForRow((r) => /committed, waiting for sandbox/.test(r), "the live line");
    await run.keys("C-c");
    const screen = await run.finish();
    expect(screen.code).toBe(130);
    expect(screen.lines).toEqual([
      expect.stringMatching(new RegExp(`^policy v\\d+ of sandbox ${stuck} committed; still pending when interrupted \\(operation ${UUID}\\)$`)),
      expect.stringMatching(new RegExp(`^resume with: openshell-config operation wait ${UUID}$`)),
    ]);
    expect(screen.rows).toHaveLength(rowsFor(screen.lines, columns));
  }, 60_000);

  it("policy rollout draws a bar that fits, no bar before the sandboxes are known, and leaves only the summary", async () => {
    const run = await pane(columns, ["policy", "rollout", "--selector", "fleet=term", "--file", policyFile(), "--concurrency", "2"]);
    const during = await run.waitForRow((r) => /^rolling out \[/.test(r), "the progress bar");
    // The header above the bar, on its own row; the bar on one row, fitted.
    expect(during).toEqual([expect.stringMatching(new RegExp(`^rollout ${UUID}: 6 sandboxes \\(fleet=term\\)$`)), expect.stringMatching(/^rolling out \[[#-]+\] \d\/6 \d+\.\ds$/)]);
    expect(during[1]!.length).toBeLessThan(columns);
    const screen = await run.finish();
    expect(screen.code).toBe(0);

    const frames = framesOf(screen.raw);
    expect(frames[0]).toMatch(new RegExp(`^${SPINNER.source} finding the sandboxes \\(fleet=term\\) \\d+\\.\\ds$`));
    expect(frames.filter((f) => f.includes("0/0"))).toEqual([]);
    for (const f of frames.filter((f) => f.startsWith("rolling out ["))) expect([...f].length).toBeLessThan(columns);

    const id = new RegExp(`^rollout (${UUID}): 6 sandboxes \\(fleet=term\\)$`).exec(screen.lines[0]!)?.[1];
    expect(id, screen.lines.join("\n")).toBeDefined();
    expect(screen.lines).toEqual([
      `rollout ${id}: 6 sandboxes (fleet=term)`,
      expect.stringMatching(new RegExp(`^rollout ${id}: done, 6 sandboxes in (\\d+ms|\\d+\\.\\ds)$`)),
      "",
      "STATE    OUTCOME  SANDBOXES",
      "applied  applied  6",
      "",
      expect.stringMatching(/^slowest: tr-\d{4} (\d+ms|\d+\.\ds)(, tr-\d{4} (\d+ms|\d+\.\ds)){2,4}$/),
    ]);
    expect(screen.rows).toHaveLength(rowsFor(screen.lines, columns));
    if (columns === 80) save("rollout-80.txt", screen);
  }, 90_000);
});

describe("progressive rollout at 80 columns", () => {
  it("policy rollout --waves draws one line per wave with its gate, a bar for the wave being sent, every row within 80 columns; a paused rollout prints its resume and undo commands", async () => {
    const run = await pane(80, ["policy", "rollout", "--selector", "fleet=term", "--file", policyFile(), "--waves", "1,50%,100%", "--concurrency", "2"]);
    // While wave 2 is sent: the header, wave 1's line, and the live bar of wave 2.
    const during = await run.waitForRow((r) => /^wave 2\/3 50% \[/.test(r), "the bar of wave 2");
    expect(during).toEqual([
      expect.stringMatching(new RegExp(`^rollout ${UUID}: 6 sandboxes \\(fleet=term\\)$`)),
      "wave 1/3  canary  1/1 applied  gate passed",
      expect.stringMatching(/^wave 2\/3 50% \[[#-]+\] \d\/2 \d+\.\ds$/),
    ]);
    const screen = await run.finish();
    expect(screen.code).toBe(0);
    // Every line fits: nothing was wrapped by the terminal.
    for (const line of screen.lines) expect([...line].length, line).toBeLessThanOrEqual(80);
    for (const f of framesOf(screen.raw).filter((x) => /^(wave|rolling)/.test(x))) expect([...f].length, f).toBeLessThan(80);
    const id = new RegExp(`^rollout (${UUID}):`).exec(screen.lines[0]!)?.[1];
    expect(screen.lines).toEqual([
      `rollout ${id}: 6 sandboxes (fleet=term)`,
      "wave 1/3  canary  1/1 applied  gate passed",
      "wave 2/3  50%     2/2 applied  gate passed",
      "wave 3/3  100%    3/3 applied  gate passed",
      expect.stringMatching(new RegExp(`^rollout ${id}: done, 6 sandboxes in (\\d+ms|\\d+\\.\\ds)$`)),
      "",
      "WAVE      SANDBOXES  APPLIED  FAILED  NOT SENT  GATE",
      "1 canary  1          1        0       0         passed",
      "2 50%     2          2        0       0         passed",
      "3 100%    3          3        0       0         passed",
      "",
      "STATE    OUTCOME  SANDBOXES",
      "applied  applied  6",
      "",
      expect.stringMatching(/^slowest: tr-\d{4} (\d+ms|\d+\.\ds)(, tr-\d{4} (\d+ms|\d+\.\ds)){2,4}$/),
    ]);
    expect(screen.rows).toHaveLength(rowsFor(screen.lines, 80));
    save("rollout-waves-80.txt", screen);

    // Paused for approval after the canary: the paused line, then the exact commands to go on or undo.
    const paused = await (await pane(80, ["policy", "rollout", "--selector", "fleet=term", "--file", policyFile(), "--waves", "1,100%", "--pause-for-approval"])).finish();
    expect(paused.code).toBe(3);
    const pid = new RegExp(`^rollout (${UUID}):`).exec(paused.lines[0]!)?.[1];
    expect(paused.lines).toContain("paused after wave 1/2: waiting for approval");
    expect(paused.lines).toContain(`approve the next wave with: openshell-config policy rollout resume ${pid}`);
    expect(paused.lines).toContain(`undo with: openshell-config policy rollout undo ${pid}`);
    expect(paused.lines).toContain("2 100%    5          0        0       5         not reached");
    // Every line fits but the commands, which are printed whole to be copied.
    for (const line of paused.lines.filter((l) => !l.includes("openshell-config policy rollout"))) expect([...line].length, line).toBeLessThanOrEqual(80);

    // Its undo in the same pane size: the rollback's live line, then what was rolled back.
    const undo = await (await pane(80, ["policy", "rollout", "undo", pid!])).finish();
    expect(undo.code).toBe(0);
    expect(undo.lines).toContain("rolling back 1 sandbox: undo requested");
    expect(undo.lines).toContain("rolled back 1 of 1 changed sandbox");
    expect(framesOf(undo.raw).some((f) => /^rolling back \[[#-]+\] [01]\/1 /.test(f))).toBe(true);
    save("rollout-paused-undo-80.txt", { ...paused, rows: [...paused.rows, "$ openshell-config policy rollout undo …", ...undo.rows] });
  }, 120_000);
});

describe("a rollout header wider than 80 columns", () => {
  it("wraps at a space, keeping all of its selector, every row within 80 columns", async () => {
    const selector = "fleet=term,fleet notin (staging-eu-west,staging-us-east,canary-ap-south)";
    const screen = await (await pane(80, ["policy", "rollout", "--selector", selector, "--file", policyFile(), "--concurrency", "2"])).finish();
    expect(screen.code, screen.lines.join("\n")).toBe(0);
    const id = new RegExp(`^rollout (${UUID}):`).exec(screen.lines[0]!)?.[1];
    expect(screen.lines.slice(0, 2)).toEqual([`rollout ${id}: 6 sandboxes (fleet=term,fleet`, "  notin (staging-eu-west,staging-us-east,canary-ap-south))"]);
    for (const line of screen.lines) expect([...line].length, line).toBeLessThanOrEqual(80);
    expect(screen.rows).toHaveLength(rowsFor(screen.lines, 80));
  }, 90_000);
});

describe("colour", () => {
  it("the live line is coloured on a terminal, and has no colour at all with NO_COLOR", async () => {
    const SGR = /\x1b\[\d+m/;
    const committed = await runBinary(["policy", "set", "--sandbox", stuck, "--file", policyFile(), "-o", "json"], dir, env);
    const { operationId: id } = JSON.parse(committed.stdout) as { operationId: string };
    const coloured = await (await pane(80, ["operation", "wait", id, "--timeout", "500ms"])).finish();
    const plain = await (await pane(80, ["operation", "wait", id, "--timeout", "500ms"], { NO_COLOR: "1" })).finish();
    for (const screen of [coloured, plain]) {
      expect(screen.code).toBe(124);
      expect(framesOf(screen.raw).filter((f) => SPINNER.test(f)).length).toBeGreaterThan(1);
    }
    expect(coloured.raw).toMatch(SGR);
    expect(plain.raw).not.toMatch(SGR);
  }, 60_000);
});
