// The dashboard in a real browser: Debian's Chromium (/usr/bin/chromium, headless) driven by
// playwright-core, the dashboard served by Vite's dev server, talking Connect over fetch (CORS) to
// a real gateway process with real supervisor processes (examples/local-stack.ts).
//
// Waits are on conditions in the page, never fixed sleeps. Every process started here (Chromium,
// Vite, gateway, supervisors) is stopped in afterAll, and the test checks that Chromium is gone.
// The final page is saved to test-results/dashboard.png (also when a step fails), and the page
// showing a sandbox that fails closed to test-results/dashboard-fail-closed.png.

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { createServer, type ViteDevServer } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient, type ConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, PolicyEnforcementState, SandboxPhase, workspaceScope } from "openshell-config/raw";
import { fleetNames, startLocalStack, type LocalStack } from "../../local-stack.js";
import { dashboardConfig } from "../vite.config.js";

const ROOT = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../..");
const SCREENSHOT = join(ROOT, "test-results", "dashboard.png");
const FAIL_CLOSED_SCREENSHOT = join(ROOT, "test-results", "dashboard-fail-closed.png");
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
/** Generous: a loaded 2-core machine runs the gateway, two supervisors, Vite and Chromium at once. */
const WAIT = 20_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const POLICY_V1 = { filesystem: { includeWorkdir: true, readWrite: ["/tmp"] }, networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }] } } };
/** A rule the gateway accepts and the supervisor rejects (it supports no "ftp" endpoints). */
const FTP_RULE = { name: "pypi", endpoints: [{ host: "pypi.org", ports: [443], protocol: "ftp" }] };
const policyYaml = (pypiProtocol: string, githubPorts = "[443]") => `version: 1
filesystem:
  includeWorkdir: true
  readWrite: [/tmp]
networkPolicies:
  github:
    name: github
    endpoints:
      - host: api.github.com
        ports: ${githubPorts}
  pypi:
    name: pypi
    endpoints:
      - host: pypi.org
        ports: [443]
        protocol: ${pypiProtocol}
`;

let vite: ViteDevServer | undefined;
let stack: LocalStack | undefined;
/** The SDK in this process, with the admin token. */
let admin: ConfigClient;
/** qa's supervisor: restarted to make qa fail closed. */
let qaSupervisor: { kill(signal?: NodeJS.Signals): Promise<void> } | undefined;
let context: BrowserContext | undefined;
let page: Page;
let userDataDir: string | undefined;
let viteCacheDir: string | undefined;
let origin = "";
const consoleLines: string[] = [];
const pageErrors: string[] = [];
let updateConfigRequests = 0;
const timings: string[] = [];
const t0 = Date.now();
const mark = (what: string) => timings.push(`${what} ${((Date.now() - t0) / 1000).toFixed(1)} s`);

/** Processes whose command line mentions `needle` (Linux /proc). */
function processesMentioning(needle: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(needle)) out.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

async function startVite(): Promise<ViteDevServer> {
  viteCacheDir = mkdtempSync(join(tmpdir(), "dashboard-vite-"));
  const server = await createServer({
    ...dashboardConfig(),
    configFile: false,
    cacheDir: viteCacheDir,
    logLevel: "warn",
    server: { host: "127.0.0.1", port: 0, strictPort: false, hmr: false, watch: null },
  });
  await server.listen();
  return server;
}

/** The fleet the rollout view is tested with: one supervisor process, labelled app=web. */
const WEB = fleetNames("web-", 6);

async function startStack(corsOrigin: string): Promise<LocalStack> {
  const s = await startLocalStack({ sandboxes: ["dev", "staging", "prod", "qa", ...WEB], corsOrigins: [corsOrigin] });
  stack = s;
  admin = createConfigClient({ transport: createNodeTransport({ baseUrl: s.url }), token: s.adminToken });
  const raw = admin.raw(OpenShell);
  for (const name of ["dev", "staging", "prod", "qa"]) await raw.createSandbox({ name, labels: { env: name }, spec: { policy: POLICY_V1 }, workspaceScope: workspaceScope() });
  for (const name of WEB) await raw.createSandbox({ name, labels: { app: "web" }, spec: { policy: POLICY_V1 }, workspaceScope: workspaceScope() });
  // Slow enough that the rollout view visibly shows sandboxes being sent before their outcome.
  s.startSupervisor({ fleet: { prefix: "web-", count: WEB.length }, args: ["--apply-delay-ms", "400"] });
  // dev applies after a delay, so that its operations are visibly pending first. prod has no
  // supervisor: it stays provisioning.
  s.startSupervisor({ sandbox: "dev", args: ["--apply-delay-ms", "1000"] });
  s.startSupervisor({ sandbox: "staging" });
  qaSupervisor = s.startSupervisor({ sandbox: "qa" });
  const end = Date.now() + WAIT;
  for (const name of ["dev", "staging", "qa", ...WEB]) {
    while ((await raw.getSandbox({ name, workspaceScope: workspaceScope() })).sandbox?.status?.phase !== SandboxPhase.READY) {
      if (Date.now() > end) throw new Error(`sandbox ${name} did not become ready; see ${s.logFile}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return s;
}

async function startChromium(): Promise<BrowserContext> {
  userDataDir = mkdtempSync(join(tmpdir(), "dashboard-chromium-"));
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1280, height: 900 },
    timeout: WAIT,
  });
  context = ctx;
  return ctx;
}

beforeAll(async () => {
  vite = await startVite();
  origin = new URL(vite.resolvedUrls!.local[0]!).origin;
  mark("vite");
  const [, ctx] = await Promise.all([
    startStack(origin).then(() => mark("stack ready")),
    startChromium().then((c) => (mark("chromium"), c)),
  ]);
  page = ctx.pages()[0] ?? (await ctx.newPage());
  page.setDefaultTimeout(WAIT);
  page.on("console", (m) => consoleLines.push(m.text()));
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("request", (r) => void (r.url().endsWith("/openshell.v1.OpenShell/UpdateConfig") && updateConfigRequests++));
}, 60_000);

afterAll(async () => {
  try {
    if (context) {
      mkdirSync(join(ROOT, "test-results"), { recursive: true });
      await page?.screenshot({ path: SCREENSHOT, fullPage: true }).catch(() => {});
    }
  } finally {
    await Promise.allSettled([context?.close(), vite?.close(), stack?.stop()]);
    mark("stopped");
    // eslint-disable-next-line no-console
    console.log(`dashboard browser test: ${timings.join(", ")}`);
    if (userDataDir) {
      expect(processesMentioning(userDataDir), "Chromium processes left running").toEqual([]);
      rmSync(userDataDir, { recursive: true, force: true });
    }
    if (viteCacheDir) rmSync(viteCacheDir, { recursive: true, force: true });
    for (const p of stack?.processes ?? []) expect(p.running, `${p.name} still running`).toBe(false);
  }
}, 30_000);

const outcome = (slot: "update-outcome" | "resume-outcome") => page.locator(`[data-testid="${slot}"] .outcome`);

describe("dashboard in Chromium", () => {
  it("signs in with the admin token and lists the sandboxes", async () => {
    await page.goto(origin);
    await page.locator("#gateway").fill(stack!.url);
    await page.locator("#token").fill(stack!.adminToken);
    await page.getByRole("button", { name: "Sign in" }).click();

    for (const name of ["dev", "staging", "prod"]) await page.locator(`tr[data-sandbox="${name}"]`).waitFor();
    const dev = page.locator('tr[data-sandbox="dev"]');
    expect(await dev.locator("[data-phase]").innerText()).toBe("ready");
    expect(await dev.locator('[data-testid="policy-version"]').innerText()).toBe("v1");
    expect(await dev.locator('[data-testid="settings-revision"]').innerText()).toBe("r0");
    expect(await page.locator('tr[data-sandbox="prod"] [data-phase]').innerText()).toBe("provisioning");

    // The token is kept for this tab only.
    const stored = await page.evaluate(() => ({ session: sessionStorage.getItem("openshell-dashboard.token"), local: JSON.stringify({ ...localStorage }) }));
    expect(stored.session).toBe(stack!.adminToken);
    expect(stored.local).not.toContain(stack!.adminToken);
    mark("signed in");
  }, 30_000);

  it("shows a YAML error naming the field and sends nothing", async () => {
    await page.locator('tr[data-sandbox="dev"]').click();
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor(); // the current policy is loaded
    expect(await page.locator("#policy-text").inputValue()).toContain("api.github.com");

    await page.locator("#policy-text").fill(policyYaml("rest", "[443, https]"));
    const validation = page.locator('[data-testid="validation"][data-valid="false"]');
    await validation.waitFor();
    expect(await validation.innerText()).toContain('line 10, column 22: networkPolicies.github.endpoints[0].ports[1]: expected number (uint32), got "https"');

    await page.locator("#apply").click();
    await outcome("update-outcome").and(page.locator('[data-state="invalid"]')).waitFor();
    expect(await outcome("update-outcome").innerText()).toContain("Not sent");
    expect(updateConfigRequests).toBe(0);
    mark("yaml error");
  }, 30_000);

  it("applies a valid policy and follows its operation from pending to applied without a reload", async () => {
    await page.evaluate(() => ((window as unknown as { sameDocument: boolean }).sameDocument = true));
    await page.locator("#policy-text").fill(policyYaml("rest"));
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor();
    await page.locator("#apply").click();

    // The watch shows the new operation pending, then the same row turns applied.
    // (Read in one step: the row may turn applied right after.)
    const pending = await page.waitForFunction(() => document.querySelector('[data-testid="operation-rows"] tr[data-state="pending"]')?.getAttribute("data-operation-id"));
    const operationId = (await pending.jsonValue())!;
    expect(operationId).toMatch(UUID);
    await page.locator(`tr[data-operation-id="${operationId}"][data-state="applied"]`).waitFor();

    await outcome("update-outcome").and(page.locator('[data-state="applied"]')).waitFor();
    expect(await outcome("update-outcome").locator('[data-testid="operation-id"]').innerText()).toBe(operationId);
    expect(await outcome("update-outcome").innerText()).toContain("Policy v2 is applied");
    await page.locator('tr[data-sandbox="dev"] [data-testid="policy-version"]', { hasText: "v2" }).waitFor();
    expect(await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument)).toBe(true);
    expect(updateConfigRequests).toBeGreaterThan(0);
    mark("applied");
  }, 30_000);

  it("shows the supervisor's rejection of an ftp endpoint as failed", async () => {
    await page.locator("#policy-text").fill(policyYaml("ftp"));
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor(); // valid protobuf; the sandbox rejects it
    await page.locator("#apply").click();

    await outcome("update-outcome").and(page.locator('[data-state="failed"]')).waitFor();
    const detail = await outcome("update-outcome").locator('[data-testid="outcome-detail"]').innerText();
    expect(detail).toContain('network_policies["pypi"].endpoints[0]: protocol "ftp" is not supported');
    const operationId = await outcome("update-outcome").locator('[data-testid="operation-id"]').innerText();
    expect(operationId).toMatch(UUID);
    await page.locator(`tr[data-operation-id="${operationId}"][data-state="failed"]`).waitFor();
    // v3 is the newest version; the sandbox keeps running v2: amber "behind", the failure and its error.
    const dev = page.locator('tr[data-sandbox="dev"]');
    await dev.locator('[data-drift="behind"]', { hasText: "behind: runs v2, desired v3" }).waitFor();
    expect(await dev.locator('[data-drift="last-update-failed"]').innerText()).toMatch(/^v3 failed: .*network_policies\["pypi"\]\.endpoints\[0\]: protocol "ftp" is not supported/);
    expect(await dev.locator("[data-phase]").innerText()).toBe("ready"); // it still runs a valid policy
    // The editor holds the rejected v3: it says so, not only that the text is a valid policy.
    const warning = page.locator('[data-testid="policy-warning"]');
    await warning.waitFor();
    expect(await warning.getAttribute("data-level")).toBe("amber");
    expect(await warning.innerText()).toMatch(/^v3 was rejected by the sandbox: .*protocol "ftp" is not supported.*; it enforces v2 \(last known good\)\.$/);
    mark("failed");
  }, 30_000);

  it("resumes a wait by operation id", async () => {
    const applied = page.locator('[data-testid="operation-rows"] tr[data-state="applied"]').first();
    const operationId = (await applied.getAttribute("data-operation-id"))!;
    await applied.locator("button.op-id").click(); // copies the id into the resume field
    expect(await page.locator("#resume-id").inputValue()).toBe(operationId);
    await page.locator("#resume").click();

    await outcome("resume-outcome").and(page.locator('[data-state="applied"]')).waitFor();
    expect(await outcome("resume-outcome").locator('[data-testid="operation-id"]').innerText()).toBe(operationId);

    expect(pageErrors).toEqual([]);
    expect(consoleLines.filter((l) => l.includes(stack!.adminToken))).toEqual([]);
    mark("resumed");
  }, 30_000);
  it("rolls the editor's policy out to every sandbox with a label, showing each one's progress live", async () => {
    await page.locator("#policy-text").fill(policyYaml("rest"));
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor();
    await page.locator("#rollout-selector").fill("app=web");
    await page.locator("#rollout-concurrency").fill("2");
    await page.locator("#rollout-start").click();

    // Live: every sandbox is listed at once, and some are being sent while others are still queued.
    for (const name of WEB) await page.locator(`[data-testid="rollout-rows"] tr[data-sandbox="${name}"]`).waitFor();
    await page.locator('[data-testid="rollout-rows"] tr[data-state="committing"]').first().waitFor();
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="queued"]').count()).toBeGreaterThan(0);

    await page.locator('[data-testid="rollout-progress"][data-verdict="done"]').waitFor();
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="applied"]').count()).toBe(WEB.length);
    expect(await page.locator('[data-testid="rollout-progress"]').innerText()).toMatch(/^Done: 6 applied \(rollout [0-9a-f-]{36}, [\d.]+ s\)\.$/);
    expect(await page.locator('[data-testid="rollout-bar"]').evaluate((el) => (el as HTMLProgressElement).value)).toBe(WEB.length);
    expect(await page.locator("#rollout-resume").isHidden()).toBe(true);
    mark("rolled out");
  }, 30_000);

  it("halts a rollout the sandboxes reject after the failure limit, and keeps it resumable", async () => {
    await page.locator("#policy-text").fill(policyYaml("ftp"));
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor();
    await page.locator("#rollout-concurrency").fill("1");
    await page.locator("#rollout-max-failures").fill("1");
    await page.locator("#rollout-start").click();

    await page.locator('[data-testid="rollout-progress"][data-verdict="halted"]').waitFor();
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="failed"]').count()).toBe(1);
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="skipped"]').count()).toBe(WEB.length - 1);
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="failed"]').innerText()).toContain('protocol "ftp" is not supported');
    expect(await page.locator('[data-testid="rollout-progress"]').innerText()).toContain("1 failed, 5 not sent");
    expect(await page.locator("#rollout-resume").isVisible()).toBe(true);
    // The saved state holds no token.
    const saved = await page.evaluate(() => localStorage.getItem("openshell-dashboard.rollout") ?? "");
    expect(saved).toContain('"kind":"openshell-config/rollout@1"');
    expect(saved).not.toContain(stack!.adminToken);
    expect(pageErrors).toEqual([]);
    mark("rollout halted");
  }, 30_000);

  it("shows a sandbox that fails closed after its supervisor restarts with a red badge, never a green ready, and warns in the editor", async () => {
    // A rejected update keeps qa on v1 (its last known good, in the supervisor's memory); a
    // supervisor restart re-bootstraps with the rejected v2, and the supervisor fails closed.
    const res = await admin.updatePolicy({ sandbox: "qa", policy: { ...POLICY_V1, networkPolicies: { ...POLICY_V1.networkPolicies, pypi: FTP_RULE } }, wait: { timeoutMs: WAIT } });
    expect(res.completion).toMatchObject({ state: "failed", outcome: "failed-retained-last-known-good" });
    await qaSupervisor!.kill("SIGTERM");
    qaSupervisor = stack!.startSupervisor({ sandbox: "qa" });
    const raw = admin.raw(OpenShell);
    const end = Date.now() + WAIT;
    while ((await raw.getSandbox({ name: "qa", workspaceScope: workspaceScope() })).sandbox?.status?.policyEnforcement?.state !== PolicyEnforcementState.FAILED_CLOSED) {
      if (Date.now() > end) throw new Error(`qa did not fail closed; see ${stack!.logFile}`);
      await new Promise((r) => setTimeout(r, 100));
    }

    await page.locator("#refresh").click();
    const qa = page.locator('tr[data-sandbox="qa"][data-enforced="failed-closed"]');
    await qa.waitFor();
    expect(await qa.locator('[data-enforcement="failed-closed"]').innerText()).toBe("fails closed (deny all)");
    expect(await qa.locator(".phase-ready").count()).toBe(0); // no green "ready"
    expect(await qa.locator('[data-testid="phase"]').evaluate((el) => getComputedStyle(el.querySelector(".badge")!).backgroundColor)).toBe("rgb(180, 35, 24)"); // --red
    expect(await qa.locator('[data-drift="failed-closed"]').innerText()).toBe("denies all traffic");
    expect(await qa.locator('[data-drift="last-update-failed"]').innerText()).toMatch(/^v2 failed: .*network_policies\["pypi"\]\.endpoints\[0\]: protocol "ftp" is not supported/);
    expect(await qa.locator('[data-testid="policy-version"]').innerText()).not.toMatch(/runs v/);

    await qa.click();
    const warning = page.locator('[data-testid="policy-warning"][data-level="red"]');
    await warning.waitFor();
    expect(await warning.innerText()).toMatch(/^v2 was rejected by the sandbox: .*protocol "ftp" is not supported.*\. The sandbox fails closed: it denies all traffic since .+\. Apply a corrected policy to restore it\.$/);
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor(); // the rejected v2 is in the editor
    expect(await page.locator("#policy-text").inputValue()).toContain("protocol: ftp");

    mkdirSync(join(ROOT, "test-results"), { recursive: true });
    await page.screenshot({ path: FAIL_CLOSED_SCREENSHOT, fullPage: true });
    expect(pageErrors).toEqual([]);
    mark("fail closed");
  }, 45_000);
});
