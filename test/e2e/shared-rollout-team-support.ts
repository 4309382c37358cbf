// Support for test/e2e/shared-rollout-team.test.ts: the two things it drives besides the stack.
// - An operator's "machine": the built CLI (dist/cli/main.js) run as a child process with a HOME,
//   XDG_CONFIG_HOME (a config file holding the gateway URL and that operator's token) and
//   XDG_STATE_HOME of its own, so one operator never sees another's local rollout state files.
//   Every child is remembered, so a failed test can still kill what it left running.
// - A dashboard page: the dashboard served by Vite's dev server, opened in Debian's Chromium
//   (playwright-core), signed in, its rollouts panel read and saved as screenshots.

import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type Browser, type Locator, type Page } from "playwright-core";
import { dashboardConfig } from "../../examples/dashboard/vite.config.js";
import { processesMentioning } from "../../examples/dashboard/test/processes.js";
import { ensureChromium, systemHost, CHROMIUM } from "../setup/chromium.js";
import { BIN, ROOT, type Run } from "../cli/harness.js";

/** One operator's machine: its own home, config (URL and token) and state directories. */
export interface Machine {
  /** `$XDG_STATE_HOME/openshell-config/rollouts`: where this machine keeps its rollouts' state files. */
  readonly rollouts: string;
  /** Runs `openshell-config args…` to its end. */
  run(args: readonly string[]): Promise<Run>;
}

const children = new Set<ChildProcess>();

/** A machine under `dir/<name>` whose CLI talks to `url` with `token`. */
export function machine(dir: string, name: string, url: string, token: string): Machine {
  const home = join(dir, name);
  const config = join(home, "config");
  const state = join(home, "state");
  mkdirSync(join(config, "openshell-config"), { recursive: true });
  mkdirSync(state, { recursive: true });
  // The token in the machine's config file (mode 600), not in the environment: as an operator keeps it.
  writeFileSync(join(config, "openshell-config", "config.json"), JSON.stringify({ url, token }), { mode: 0o600 });
  const env = { PATH: process.env.PATH ?? "", HOME: home, XDG_CONFIG_HOME: config, XDG_STATE_HOME: state };
  return {
    rollouts: join(state, "openshell-config", "rollouts"),
    run: (args) =>
      new Promise((res, rej) => {
        const child = spawn(process.execPath, [BIN, ...args], { cwd: home, env, stdio: ["ignore", "pipe", "pipe"] });
        children.add(child);
        let stdout = "";
        let stderr = "";
        child.stdout!.setEncoding("utf8").on("data", (c: string) => (stdout += c));
        child.stderr!.setEncoding("utf8").on("data", (c: string) => (stderr += c));
        child.once("error", rej);
        child.once("close", (code) => {
          children.delete(child);
          res({ code, stdout, stderr });
        });
      }),
  };
}

/** Kills every CLI child still running (a test that failed while one ran); how many there were. */
export async function killMachines(): Promise<number> {
  const left = [...children];
  await Promise.all(
    left.map(
      (c) =>
        new Promise<void>((res) => {
          c.once("close", () => res());
          c.kill("SIGKILL");
        }),
    ),
  );
  return left.length;
}

/** A flag that marks this process's Chromium, to check that none outlives the test. */
const MARKER = `--class=shared-rollout-team-${process.pid}`;
const CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", MARKER];

/** The part of Vite's dev server used here. */
interface DevServer {
  listen(): Promise<unknown>;
  close(): Promise<void>;
  readonly resolvedUrls: { readonly local: readonly string[] } | null;
}

/**
 * Vite's createServer. Vite is the dashboard's dependency (examples/dashboard/node_modules), which
 * an import from test/ does not resolve: it is loaded from the dashboard's directory.
 */
async function loadCreateServer(): Promise<(config: Record<string, unknown>) => Promise<DevServer>> {
  const path = createRequire(join(ROOT, "examples", "dashboard", "package.json")).resolve("vite");
  return ((await import(pathToFileURL(path).href)) as { createServer: (config: Record<string, unknown>) => Promise<DevServer> }).createServer;
}

export interface Dashboard {
  /** Vite's origin: the gateway must allow it (CORS) before the page signs in. */
  readonly origin: string;
  /** Opens one page and signs in to `gateway` with `token`; resolves when the rollouts panel is live. */
  signIn(gateway: string, token: string, firstSandbox: string): Promise<Page>;
  /** Chromium's processes still running (by the marker flag). */
  leftRunning(): number[];
  close(): Promise<void>;
}

/** Starts Vite and Chromium (installing Chromium as the browser tests' setup does, when it may). */
export async function startDashboard(timeout: number, pageErrors: string[]): Promise<Dashboard> {
  await ensureChromium(systemHost());
  const cacheDir = mkdtempSync(join(tmpdir(), "team-dashboard-vite-"));
  let vite: DevServer | undefined;
  let browser: Browser | undefined;
  const close = async () => {
    await Promise.allSettled([browser?.close(), vite?.close()]);
    rmSync(cacheDir, { recursive: true, force: true });
  };
  try {
    const createServer = await loadCreateServer();
    vite = await createServer({ ...dashboardConfig(), configFile: false, cacheDir, logLevel: "warn", server: { host: "127.0.0.1", port: 0, strictPort: false, hmr: false, watch: null } });
    await vite.listen();
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS, timeout });
  } catch (err) {
    await close();
    throw err;
  }
  const origin = new URL(vite.resolvedUrls!.local[0]!).origin;
  const b = browser;
  return {
    origin,
    async signIn(gateway, token, firstSandbox) {
      const ctx = await b.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await ctx.newPage();
      page.setDefaultTimeout(timeout);
      page.on("pageerror", (e) => pageErrors.push(e.message));
      await page.goto(origin);
      await page.locator("#gateway").fill(gateway);
      await page.locator("#token").fill(token);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.locator(`tr[data-sandbox="${firstSandbox}"]`).waitFor();
      await page.locator('[data-testid="shared-status"][data-tone="live"]').waitFor();
      return page;
    },
    leftRunning: () => processesMentioning(MARKER),
    close,
  };
}

/** The rollouts panel's row of rollout `id`, further narrowed by `attrs` (e.g. `[data-standing="complete"]`). */
export const panelRow = (page: Page, id: string, attrs = ""): Locator => page.locator(`[data-testid="shared-rollouts"] li[data-rollout-id="${id}"]${attrs}`);

/** The texts of a row's parts the test reads, by their data-testid. */
export async function rowTexts(row: Locator): Promise<Record<"standing" | "waves" | "counts" | "creator" | "driver" | "approvals", string>> {
  const text = async (what: string) => ((await row.locator(`[data-testid="shared-${what}"]`).count()) > 0 ? row.locator(`[data-testid="shared-${what}"]`).innerText() : "");
  const [standing, waves, counts, creator, driver, approvals] = await Promise.all(["standing", "waves", "counts", "creator", "driver", "approvals"].map(text));
  return { standing: standing!, waves: waves!, counts: counts!, creator: creator!, driver: driver!, approvals: approvals! };
}

/** Saves the page's rollouts panel as test-results/shared-rollout-team-<step>.png; its path. */
export async function shot(page: Page, step: string): Promise<string> {
  const path = join(ROOT, "test-results", `shared-rollout-team-${step}.png`);
  mkdirSync(join(ROOT, "test-results"), { recursive: true });
  await page.locator('[data-testid="rollouts-panel"]').screenshot({ path });
  return path;
}
