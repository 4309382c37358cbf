// The dashboard in a real browser: Debian's Chromium (/usr/bin/chromium, headless) driven by
// playwright-core, the dashboard served by Vite's dev server, talking Connect over fetch (CORS) to
// a real gateway process with real supervisor processes (examples/local-stack.ts).
//
// Waits are on conditions in the page, never fixed sleeps. Every process started here (Chromium,
// Vite, gateway, supervisors) is stopped in afterAll, and the test checks that Chromium is gone.
// The final page is saved to test-results/dashboard.png (also when a step fails), the page
// showing a sandbox that fails closed to test-results/dashboard-fail-closed.png, and the page at
// 1280 and 390 px wide to test-results/dashboard-1280.png and dashboard-390.png (and 360 px), and
// the editor card while an update is pending to test-results/dashboard-pending.png. The rollout
// card is saved as test-results/dashboard-rollout-<what>.png: paused for approval (and after a
// reload), complete, undone, rolled back after a failed canary, and at 360 px.

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
import { processesMentioning } from "./processes.js";

const ROOT = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../..");
const SCREENSHOT = join(ROOT, "test-results", "dashboard.png");
const FAIL_CLOSED_SCREENSHOT = join(ROOT, "test-results", "dashboard-fail-closed.png");
const PENDING_SCREENSHOT = join(ROOT, "test-results", "dashboard-pending.png");
const WIDTH_SCREENSHOT = (width: number) => join(ROOT, "test-results", `dashboard-${width}.png`);
const ROLLOUT_SCREENSHOT = (what: string) => join(ROOT, "test-results", `dashboard-rollout-${what}.png`);
/** "Dec 1, 09:16:37": a date and a time. */
const DATE_TIME = /^[A-Z][a-z]{2} \d{1,2}, \d{2}:\d{2}:\d{2}$/;
/** Computed colours of the palette (style.css). */
const RED = "rgb(180, 35, 24)";
const GREY = "rgb(71, 84, 103)";
const AMBER = "rgb(138, 90, 0)";
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
  // dev applies after a delay, so that its operations are visibly pending first (long enough for
  // a loaded machine to render and read the pending panel and row). prod has no supervisor: it
  // stays provisioning.
  s.startSupervisor({ sandbox: "dev", args: ["--apply-delay-ms", "2500"] });
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
    // eslint-disable-next-line no-console
    if (pageErrors.length > 0) console.log(`page errors: ${pageErrors.join("\n")}`);
    if (userDataDir) {
      expect(processesMentioning(userDataDir), "Chromium processes left running").toEqual([]);
      rmSync(userDataDir, { recursive: true, force: true });
    }
    if (viteCacheDir) rmSync(viteCacheDir, { recursive: true, force: true });
    for (const p of stack?.processes ?? []) expect(p.running, `${p.name} still running`).toBe(false);
  }
}, 30_000);

/**
 * A computed style of the first element matching a CSS selector, read in one step in the page (a
 * locator's element may be replaced by a re-render between finding it and reading its style).
 */
const styleOf = (selector: string, property: "color" | "backgroundColor" = "color") =>
  page.evaluate(([sel, prop]) => {
    const el = document.querySelector(sel!);
    if (!el) throw new Error(`nothing matches ${sel}`);
    return getComputedStyle(el)[prop as "color"];
  }, [selector, property]);

/** The saved state of the rollout started last (kept per rollout, listed newest first: src/rollout-store.ts). */
const newestKeptState = () =>
  page.evaluate(() => {
    const [newest] = JSON.parse(localStorage.getItem("openshell-dashboard.rollouts") ?? "[]") as { id: string }[];
    return newest ? (localStorage.getItem(`openshell-dashboard.rollout/${newest.id}`) ?? "") : "";
  });

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

    // Nothing invalid can be sent: Apply and Roll out are disabled while the text is invalid.
    expect(await page.locator("#apply").isDisabled()).toBe(true);
    expect(await page.locator("#apply").getAttribute("title")).toContain("Fix the policy first");
    expect(await page.locator("#rollout-start").isDisabled()).toBe(true);
    await page.locator("#apply").click({ force: true });
    expect(updateConfigRequests).toBe(0);
    mark("yaml error");
  }, 30_000);

  it("applies a valid policy and follows its operation from pending to applied without a reload", async () => {
    await page.evaluate(() => ((window as unknown as { sameDocument: boolean }).sameDocument = true));
    await page.locator("#policy-text").fill(policyYaml("rest"));
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor();
    expect(await page.locator("#apply").isEnabled()).toBe(true);
    await page.locator("#apply").click();

    // As soon as the commit returns (dev's supervisor takes 2.5 s to apply), the panel says
    // pending with the committed version and the operation id, not "sending…".
    const pendingPanel = outcome("update-outcome").and(page.locator('[data-state="pending"]'));
    await pendingPanel.locator('[data-testid="operation-id"]').waitFor();
    const pendingText = await pendingPanel.innerText();
    expect(pendingText).toContain("Policy v2 is committed; waiting for dev to apply it");
    expect(await pendingPanel.locator('[data-testid="outcome-change"]').innerText()).toBe("policy v2");
    const committedId = await pendingPanel.locator('[data-testid="operation-id"]').innerText();
    expect(committedId).toMatch(UUID);
    mkdirSync(join(ROOT, "test-results"), { recursive: true });
    await page.locator('[data-testid="editor"]').screenshot({ path: PENDING_SCREENSHOT });

    // The watch shows the new operation pending, then the same row turns applied.
    // (Read in one step: the row may turn applied right after.)
    const pending = await page.waitForFunction(() => document.querySelector('[data-testid="operation-rows"] tr[data-state="pending"]')?.getAttribute("data-operation-id"));
    const operationId = (await pending.jsonValue())!;
    expect(operationId).toBe(committedId);
    await page.locator(`tr[data-operation-id="${operationId}"][data-state="applied"]`).waitFor();
    // The row says what changed, and when (date and time; the full date in the tooltip).
    const row = page.locator(`tr[data-operation-id="${operationId}"]`);
    expect(await row.locator('[data-testid="operation-change"]').innerText()).toBe("policy v2");
    expect(await row.locator('[data-testid="operation-time"]').innerText()).toMatch(DATE_TIME);
    expect(await row.locator('[data-testid="operation-time"] time').getAttribute("title")).toContain(String(new Date().getFullYear()));

    await outcome("update-outcome").and(page.locator('[data-state="applied"]')).waitFor();
    expect(await outcome("update-outcome").locator('[data-testid="operation-id"]').innerText()).toBe(operationId);
    expect(await outcome("update-outcome").innerText()).toContain("Policy v2 is applied");
    await page.locator('tr[data-sandbox="dev"] [data-testid="policy-version"]', { hasText: "v2" }).waitFor();
    // In sync: green ready, and the headers say what dev enforces.
    await page.locator('[data-testid="policy-enforcement"] [data-health="in-sync"]', { hasText: "enforces v2" }).waitFor();
    expect(await page.locator('[data-testid="operations-enforcement"] [data-health]').innerText()).toBe("enforces v2");
    expect(await page.locator('tr[data-sandbox="dev"] [data-phase]').getAttribute("data-health")).toBe("in-sync");
    expect(await page.locator('[data-testid="validation"]').innerText()).toBe("✓ Valid SandboxPolicy");
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
    // It still runs a valid policy, but not the desired one: "ready" in amber, never green.
    expect(await dev.locator("[data-phase]").innerText()).toBe("ready");
    expect(await dev.locator("[data-phase]").getAttribute("data-health")).toBe("drift");
    expect(await styleOf('tr[data-sandbox="dev"] [data-phase]')).toBe(AMBER);
    // The editor holds the rejected v3: it says so, not only that the text is a valid policy.
    const warning = page.locator('[data-testid="policy-warning"]');
    await warning.waitFor();
    expect(await warning.getAttribute("data-level")).toBe("amber");
    expect(await warning.innerText()).toMatch(/^v3 was rejected by the sandbox: .*protocol "ftp" is not supported.*; it enforces v2 \(last known good\)\.$/);
    // The validity line does not claim all is well, and the headers say v3 was rejected.
    const validity = page.locator('[data-testid="validation"][data-valid="true"][data-warning="not-taken"]');
    await validity.waitFor();
    expect(await validity.innerText()).toBe("⚠ Valid format — but the sandbox rejected v3; correct it before applying again.");
    expect(await page.locator('[data-testid="policy-enforcement"] [data-health]').innerText()).toBe("v3 rejected, runs v2");
    expect(await page.locator('[data-testid="operations-enforcement"] [data-health]').getAttribute("data-health")).toBe("drift");
    expect(await page.locator('[data-testid="policy-meta"]').innerText()).toMatch(/^desired v3 · sha256 [0-9a-f]{12}$/);
    // Edited, it is a new policy: plainly valid again.
    await page.locator("#policy-text").fill(policyYaml("rest", "[443, 8443]"));
    await page.locator('[data-testid="validation"][data-valid="true"]:not([data-warning])').waitFor();
    mark("failed");
  }, 30_000);

  it("labels operations policy or setting, and paints superseded grey, failed red", async () => {
    // Two commits in a row: dev's supervisor (1 s per apply) has not applied v4 when v5 arrives.
    const first = await admin.updatePolicy({ sandbox: "dev", policy: { ...POLICY_V1, networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443, 8443] }] } } } });
    const second = await admin.updatePolicy({ sandbox: "dev", policy: { ...POLICY_V1, networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443, 9443] }] } } } });
    const superseded = page.locator(`[data-testid="operation-rows"] tr[data-operation-id="${first.operation!.operationId}"][data-state="superseded"]`);
    await superseded.waitFor();
    expect(await superseded.locator('[data-testid="operation-change"]').innerText()).toBe(`policy v${first.policyVersion}`);
    const supersededRow = `[data-testid="operation-rows"] tr[data-operation-id="${first.operation!.operationId}"]`;
    expect(await styleOf(`${supersededRow} .badge`)).toBe(GREY);
    expect(await superseded.locator(".error-text").count()).toBe(0); // its note is not an error
    expect(await styleOf(`${supersededRow} .note-text`)).not.toBe(RED);
    await page.locator(`tr[data-operation-id="${second.operation!.operationId}"][data-state="applied"]`).waitFor();
    expect(await styleOf('[data-testid="operation-rows"] tr[data-state="failed"] .badge')).toBe(RED);
    expect(await styleOf('[data-testid="operation-rows"] tr[data-state="failed"] .error-text')).toBe(RED);
    expect(await styleOf('[data-testid="operation-rows"] tr[data-state="applied"] .badge')).toBe("rgb(19, 122, 58)");

    // A setting change made elsewhere (the CLI, a script): the row names the key.
    const setting = await admin.updateSettings({ sandbox: "dev", key: "log_level", value: "debug" });
    const row = page.locator(`[data-testid="operation-rows"] tr[data-operation-id="${setting.operation!.operationId}"]`);
    await row.locator('[data-testid="operation-change"]', { hasText: "setting log_level" }).waitFor();
    expect(await row.getAttribute("data-kind")).toBe("setting");
    await page.locator(`tr[data-operation-id="${setting.operation!.operationId}"][data-state="applied"]`).waitFor();
    mark("operation labels");
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
    // Every state each row passes through, in order (some last only a few milliseconds).
    await page.evaluate(() => {
      const seen: Record<string, string[]> = ((window as unknown as { rowStates: Record<string, string[]> }).rowStates = {});
      const body = document.querySelector('[data-testid="rollout-rows"]')!;
      // A batch may hold several changes of one row: the old values give the states in between.
      const push = (name: string, state: string | null | undefined) => {
        const list = (seen[name] ??= []);
        if (state && list.at(-1) !== state) list.push(state);
      };
      new MutationObserver((records) => {
        const touched = new Set<HTMLElement>();
        for (const r of records) {
          const tr = r.target as HTMLElement;
          const name = tr.dataset["sandbox"];
          if (!name) continue;
          push(name, r.oldValue);
          touched.add(tr);
        }
        for (const tr of touched) push(tr.dataset["sandbox"]!, tr.dataset["state"]);
      }).observe(body, { attributes: true, attributeFilter: ["data-state"], attributeOldValue: true, subtree: true });
    });
    await page.locator("#rollout-start").click();

    // Live: every sandbox is listed at once, and some are being sent while others are still queued.
    for (const name of WEB) await page.locator(`[data-testid="rollout-rows"] tr[data-sandbox="${name}"]`).waitFor();
    await page.locator('[data-testid="rollout-rows"] tr:is([data-state="committing"], [data-state="pending"])').first().waitFor();
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="queued"]').count()).toBeGreaterThan(0);
    // Committed before its outcome (the fleet takes 400 ms per apply): pending, with the version and operation id.
    const pendingRow = page.locator('[data-testid="rollout-rows"] tr[data-state="pending"]').first();
    await pendingRow.waitFor();
    expect(await pendingRow.locator("td").nth(2).innerText()).toMatch(/^policy v\d+ · operation [0-9a-f]{8}$/);
    expect(await pendingRow.getAttribute("data-operation-id")).toMatch(UUID);

    await page.locator('[data-testid="rollout-progress"][data-verdict="done"]').waitFor();
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="applied"]').count()).toBe(WEB.length);
    expect(await page.locator('[data-testid="rollout-progress"]').innerText()).toMatch(/^Done: 6 applied \(rollout [0-9a-f-]{36}; this run (\d+ms|\d+\.\ds|\d+m\d\ds)\)\.$/);
    expect(await page.locator('[data-testid="rollout-bar"]').getAttribute("aria-valuenow")).toBe(String(WEB.length));
    expect(await page.locator('[data-testid="rollout-bar"]').getAttribute("aria-valuemax")).toBe(String(WEB.length));
    expect(await page.locator('[data-testid="rollout-progress"]').getAttribute("data-tone")).toBe("ok");
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="applied"]').first().locator("td").nth(2).innerText()).toMatch(/^policy v\d+ · (\d+ms|\d+\.\ds|\d+m\d\ds)$/);
    expect(await page.locator("#rollout-resume").isHidden()).toBe(true);
    // Each sandbox: queued, sending, committed (pending), then applied; never straight from sending to its outcome.
    const rowStates = await page.evaluate(() => (window as unknown as { rowStates: Record<string, string[]> }).rowStates);
    for (const name of WEB) expect(rowStates[name], name).toEqual(["queued", "committing", "pending", "applied"]);
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
    expect(await page.locator('[data-testid="rollout-progress"]').getAttribute("data-tone")).toBe("error");
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="failed"] .error-text').count()).toBe(1);
    expect(await page.locator("#rollout-resume").isVisible()).toBe(true);
    // The saved state holds no token.
    const saved = await newestKeptState();
    expect(saved).toContain('"kind":"openshell-config/rollout@2"');
    expect(saved).not.toContain(stack!.adminToken);
    expect(pageErrors).toEqual([]);
    mark("rollout halted");
  }, 30_000);

  it("shows a selector that matches nothing as an error, refuses an empty one, and pluralizes", async () => {
    await page.locator("#policy-text").fill(policyYaml("rest"));
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor();
    const summary = page.locator('[data-testid="rollout-progress"]');
    const bar = page.locator('[data-testid="rollout-bar"]');
    expect(Number(await bar.getAttribute("aria-valuemax"))).toBe(WEB.length); // the halted rollout's bar
    const sent = updateConfigRequests;

    await page.locator("#rollout-selector").fill("app=xyz");
    await page.locator("#rollout-start").click();
    await page.locator('[data-testid="rollout-progress"][data-verdict="no-match"]').waitFor();
    expect(await summary.innerText()).toBe("No sandbox matches app=xyz: nothing was sent.");
    expect(await styleOf('[data-testid="rollout-progress"]')).toBe(RED);
    expect(await bar.getAttribute("aria-valuemax")).toBe("0"); // no full bar, no "Done"
    expect(await bar.getAttribute("data-tone")).toBe("error");
    expect(await page.locator('[data-testid="rollout-rows"] tr').count()).toBe(0);
    expect(await summary.innerText()).not.toContain("Done");

    // An empty selector: a visible error, and the previous bar and rows are gone.
    await page.locator("#rollout-selector").fill("app=web");
    await page.locator("#rollout-max-failures").fill("");
    await page.locator("#rollout-start").click();
    await page.locator('[data-testid="rollout-progress"][data-verdict="done"]').waitFor();
    expect(Number(await bar.getAttribute("aria-valuemax"))).toBe(WEB.length);
    await page.locator("#rollout-selector").fill("");
    await page.locator("#rollout-start").click();
    await page.locator('[data-testid="rollout-progress"][data-verdict="error"]').waitFor();
    expect(await summary.innerText()).toBe("Enter a label selector (e.g. app=web): nothing was sent.");
    expect(await styleOf('[data-testid="rollout-progress"]')).toBe(RED);
    expect(await bar.getAttribute("aria-valuemax")).toBe("0");
    expect(await page.locator('[data-testid="rollout-rows"] tr').count()).toBe(0);

    // One sandbox is "1 sandbox", never "1 sandboxes" (every summary line is recorded).
    await page.evaluate(() => {
      const el = document.querySelector('[data-testid="rollout-progress"]')!;
      const seen: string[] = ((window as unknown as { summaries: string[] }).summaries = []);
      new MutationObserver(() => seen.push(el.textContent ?? "")).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await page.locator("#rollout-selector").fill("env=staging");
    await page.locator("#rollout-start").click();
    await page.locator('[data-testid="rollout-progress"][data-verdict="done"]').waitFor();
    const summaries = await page.evaluate(() => (window as unknown as { summaries: string[] }).summaries);
    expect(summaries).toContain("Rolling out to 1 sandbox…");
    expect(summaries.filter((t) => /\b1 (sandboxes|errors|failures)\b/.test(t))).toEqual([]);
    expect(await summary.innerText()).toMatch(/^Done: 1 applied \(rollout [0-9a-f-]{36}; this run (\d+ms|\d+\.\ds|\d+m\d\ds)\)\.$/);
    expect(updateConfigRequests).toBeGreaterThan(sent);
    expect(pageErrors).toEqual([]);
    mark("rollout errors");
  }, 45_000);

  /** The rollout card's waves: each one's gate and counts, read in one step. */
  const waveStates = () =>
    page.evaluate(() =>
      [...document.querySelectorAll('[data-testid="rollout-waves"] li.wave')].map((li) => ({
        gate: li.getAttribute("data-gate"),
        chip: li.querySelector('[data-testid="wave-gate"]')?.textContent,
        counts: li.querySelector('[data-testid="wave-counts"]')?.textContent,
        reason: li.querySelector('[data-testid="wave-reason"]')?.textContent ?? undefined,
      })),
    );
  const card = () => page.locator('[data-testid="rollout"]');

  it("rolls out in waves with a pause for approval, keeps the paused rollout across a reload, and continues it to complete", async () => {
    await page.locator("#policy-text").fill(policyYaml("rest", "[443, 7443]"));
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor();
    await page.locator("#rollout-selector").fill("app=web");
    expect(await page.locator("#rollout-waves").inputValue()).toBe("1, 50%, 100%");
    await page.locator("#rollout-concurrency").fill("2");
    await page.locator("#rollout-max-failures").fill("");
    await page.locator("#rollout-approval").check();
    await page.locator("#rollout-start").click();

    // The canary passes its gate; the rollout pauses before wave 2.
    await page.locator('[data-testid="rollout-progress"][data-verdict="paused"]').waitFor();
    expect(await waveStates()).toEqual([
      { gate: "passed", chip: "gate passed", counts: "1 applied · 0 failed · 0 pending", reason: "wave 1 (canary): 1 of 1 succeeded" },
      { gate: "approval", chip: "waiting for approval", counts: "0 applied · 0 failed · 0 pending · 2 queued", reason: expect.stringContaining("Continue sends this wave") },
      { gate: "not-reached", chip: "not reached", counts: "0 applied · 0 failed · 0 pending · 3 queued", reason: undefined },
    ]);
    expect(await page.locator('[data-testid="rollout-progress"]').innerText()).toMatch(/^Paused after wave 1 of 3, waiting for approval: 1 applied, 5 not sent yet \(rollout [0-9a-f-]{36}; this run (\d+ms|\d+\.\ds|\d+m\d\ds)\)\. Continue sends the next wave\.$/);
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="applied"]').count()).toBe(1);
    // Wave 2's sandboxes await the approval; wave 3's are not sent yet.
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="waiting"][data-wave="1"]').count()).toBe(2);
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="queued"][data-wave="2"]').count()).toBe(3);
    expect(await page.locator('[data-testid="rollout-bar"]').getAttribute("aria-valuenow")).toBe("1");
    expect(await page.locator("#rollout-resume").innerText()).toBe("Continue");
    expect(await page.locator("#rollout-resume").isEnabled()).toBe(true);
    expect(await page.locator("#rollout-undo").isVisible()).toBe(true);
    // Amber for the wave that waits, green for the gate that passed.
    expect(await styleOf('[data-testid="rollout-waves"] li[data-gate="approval"] [data-testid="wave-gate"]')).toBe(AMBER);
    expect(await styleOf('[data-testid="rollout-waves"] li[data-gate="passed"] [data-testid="wave-gate"]')).toBe("rgb(19, 122, 58)");
    const saved = await newestKeptState();
    expect(saved).toContain('"phase":"paused"');
    expect(saved).not.toContain(stack!.adminToken);
    mkdirSync(join(ROOT, "test-results"), { recursive: true });
    await card().screenshot({ path: ROLLOUT_SCREENSHOT("paused") });

    // A reload: the paused rollout is still there, with its waves, Continue and Undo.
    await page.reload();
    await page.locator('tr[data-sandbox="dev"]').waitFor();
    await page.locator('[data-testid="rollout-progress"][data-verdict="paused"]').waitFor();
    expect((await waveStates()).map((w) => w.gate)).toEqual(["passed", "approval", "not-reached"]);
    expect((await waveStates())[0]!.counts).toBe("1 applied · 0 failed · 0 pending");
    expect(await page.locator("#rollout-resume").innerText()).toBe("Continue");
    expect(await page.locator("#rollout-undo").isVisible()).toBe(true);
    await card().screenshot({ path: ROLLOUT_SCREENSHOT("paused-reloaded") });
    // The form shows what the restored rollout was started with, not the defaults (issue 30, item 18).
    expect(await page.locator("#rollout-selector").inputValue()).toBe("app=web");
    expect(await page.locator("#rollout-concurrency").inputValue()).toBe("2");
    expect(await page.locator("#rollout-approval").isChecked()).toBe(true);
    const pausedId = (await page.locator('[data-testid="kept-rollouts"] li[data-phase="paused"]').getAttribute("data-rollout-id"))!;
    expect(pausedId).toMatch(/^[0-9a-f-]{36}$/);

    // A new rollout over the paused one's sandboxes warns, naming it, and sends nothing (issue 30, item 4).
    await page.locator("#rollout-start").click();
    await page.locator('[data-testid="rollout-conflict"]:not([hidden])').waitFor();
    expect(await page.locator('[data-testid="rollout-conflict"]').innerText()).toContain(`Rollout ${pausedId.slice(0, 8)} (app=web) is paused over 6 of these sandboxes`);
    await page.locator("#rollout-conflict-cancel").click();
    expect(await page.locator('[data-testid="rollout-conflict"]').isHidden()).toBe(true);
    // A new rollout elsewhere leaves the paused one listed, with Continue and Undo.
    await page.locator("#rollout-selector").fill("env=staging");
    await page.locator("#rollout-waves").fill("");
    await page.locator("#rollout-approval").uncheck();
    await page.locator("#rollout-start").click();
    await page.locator('[data-testid="rollout-progress"][data-verdict="done"]').waitFor();
    const pausedRow = page.locator(`[data-testid="kept-rollouts"] li[data-rollout-id="${pausedId}"]`);
    expect(await pausedRow.getAttribute("data-phase")).toBe("paused");
    expect(await pausedRow.locator('[data-action="resume"]').innerText()).toBe("Continue");
    expect(await pausedRow.locator('[data-action="undo"]').isVisible()).toBe(true);
    // Not finished: this one and the halted rollout of an earlier test.
    expect(await page.locator('[data-testid="kept-count"]').innerText()).toMatch(/ kept, 2 not finished$/);
    // Continue from the list takes the paused rollout up again, on the card.
    // It approves wave 2; the buttons are disabled while it runs; it pauses again before wave 3.
    await pausedRow.locator('[data-action="resume"]').click();
    expect(await page.locator("#rollout-resume").isDisabled()).toBe(true);
    expect(await page.locator("#rollout-undo").isDisabled()).toBe(true);
    await page.locator('[data-testid="rollout-waves"] li[data-wave="1"][data-gate="running"]').waitFor();
    await page.locator('[data-testid="rollout-waves"] li[data-wave="2"][data-gate="approval"]').waitFor();
    await page.locator('[data-testid="rollout-progress"][data-verdict="paused"]').waitFor();
    expect((await waveStates()).map((w) => w.gate)).toEqual(["passed", "passed", "approval"]);
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="applied"]').count()).toBe(3);

    await page.locator("#rollout-resume").click();
    await page.locator('[data-testid="rollout-progress"][data-verdict="done"]').waitFor();
    expect(await waveStates()).toEqual([
      { gate: "passed", chip: "gate passed", counts: "1 applied · 0 failed · 0 pending", reason: "wave 1 (canary): 1 of 1 succeeded" },
      { gate: "passed", chip: "gate passed", counts: "2 applied · 0 failed · 0 pending", reason: "wave 2: 2 of 2 succeeded" },
      { gate: "passed", chip: "gate passed", counts: "3 applied · 0 failed · 0 pending", reason: "wave 3: 3 of 3 succeeded" },
    ]);
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="applied"]').count()).toBe(WEB.length);
    expect(await page.locator('[data-testid="rollout-progress"]').innerText()).toMatch(/^Done: 6 applied \(rollout [0-9a-f-]{36}; this run (\d+ms|\d+\.\ds|\d+m\d\ds)\)\.$/);
    expect(await page.locator("#rollout-resume").isHidden()).toBe(true);
    expect(await page.locator("#rollout-undo").isEnabled()).toBe(true); // a finished rollout can still be undone
    await card().screenshot({ path: ROLLOUT_SCREENSHOT("complete") });
    expect(pageErrors).toEqual([]);
    mark("waves with approval");
  }, 60_000);

  it("undoes the completed rollout from the card, leaving alone a sandbox someone else changed since", async () => {
    const versionOf = async (name: string) => (await admin.getConfig({ sandbox: name })).desired.policyVersion;
    const before = await versionOf("web-0001");
    // Someone else changes web-0000 after the rollout: the undo must not overwrite it.
    const other = await admin.updatePolicy({ sandbox: "web-0000", policy: POLICY_V1, wait: { timeoutMs: WAIT } });
    expect(other.completion.state).toBe("applied");

    await page.locator("#rollout-undo").click();
    expect(await page.locator("#rollout-undo").isDisabled()).toBe(true);
    expect(await page.locator("#rollout-start").isDisabled()).toBe(true);
    await page.locator('[data-testid="rollout-rollback"][data-state="running"]').waitFor();
    expect(await page.locator('[data-testid="rollback-progress"]').innerText()).toMatch(/^Rolling back \d\/6…$/);
    await page.locator('[data-testid="rollout-progress"][data-verdict="rolled-back"]').waitFor();
    const panel = page.locator('[data-testid="rollout-rollback"]');
    expect(await panel.getAttribute("data-state")).toBe("done");
    expect(await page.locator('[data-testid="rollback-progress"]').innerText()).toBe("Rolled back 5 of 6 changed sandboxes; 1 left alone.");
    expect(await panel.innerText()).toContain("Why: undo requested");
    const leftAlone = panel.locator('li[data-sandbox="web-0000"][data-rollback="left-alone"]');
    expect(await leftAlone.innerText()).toMatch(/^web-0000 left alone: changed by someone else since \(desired policy is v\d+, this rollout made v\d+\)$/);
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-rollback="rolled-back"]').count()).toBe(5);
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-sandbox="web-0001"] [data-testid="row-rollback"]').innerText()).toMatch(/^↩ rolled back \(policy v\d+\)$/);
    expect(await page.locator('[data-testid="rollout-progress"]').innerText()).toMatch(/^Undone: 5 rolled back, 1 left alone \(rollout [0-9a-f-]{36}; this run (\d+ms|\d+\.\ds|\d+m\d\ds)\)\.$/);
    expect(await page.locator("#rollout-undo").isHidden()).toBe(true);
    // web-0001 has a new revision with the policy it had before; web-0000 keeps the other change.
    expect(await versionOf("web-0001")).toBe(before + 1);
    expect(await versionOf("web-0000")).toBe(other.policyVersion);
    await card().screenshot({ path: ROLLOUT_SCREENSHOT("undone") });
    expect(pageErrors).toEqual([]);
    mark("undo");
  }, 45_000);

  it("rolls back automatically when the canary fails its gate, showing the gate's reason and the rollback's results", async () => {
    // The page was reloaded: select a sandbox to have an editor, and fill the form again.
    await page.locator('tr[data-sandbox="dev"]').click();
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor();
    await page.locator("#policy-text").fill(policyYaml("ftp"));
    await page.locator("#rollout-selector").fill("app=web");
    await page.locator("#rollout-concurrency").fill("2");
    // Waves the SDK refuses: its message, naming the wave, and nothing is sent.
    const sent = updateConfigRequests;
    await page.locator("#rollout-waves").fill("50%, 10%");
    await page.locator("#rollout-start").click();
    await page.locator('[data-testid="rollout-progress"][data-verdict="error"]').waitFor();
    expect(await page.locator('[data-testid="rollout-progress"]').innerText()).toBe("Could not roll out: waves[1]: wave sizes are cumulative and must increase (10% after 50%) (field waves[1])");
    expect(await page.locator('[data-testid="rollout-waves"]').isHidden()).toBe(true);
    expect(updateConfigRequests).toBe(sent);
    await page.locator("#rollout-waves").fill("1, 50%, 100%");
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor();
    await page.locator("#rollout-approval").uncheck();
    await page.locator("#rollout-rollback").check();
    await page.locator("#rollout-start").click();

    await page.locator('[data-testid="rollout-progress"][data-verdict="rolled-back"]').waitFor();
    const waves = await waveStates();
    expect(waves.map((w) => w.gate)).toEqual(["failed", "not-reached", "not-reached"]);
    expect(waves[0]).toMatchObject({ chip: "gate failed", counts: "0 applied · 1 failed · 0 pending", reason: "wave 1 (canary): 1 of 1 failed, limit 1" });
    expect(await styleOf('[data-testid="rollout-waves"] li[data-gate="failed"] [data-testid="wave-reason"]')).toBe(RED);
    expect(await page.locator('[data-testid="rollout-progress"]').innerText()).toMatch(/^Rolled back after a failed gate: 1 failed, 5 not sent; 1 rolled back \(rollout [0-9a-f-]{36}; this run (\d+ms|\d+\.\ds|\d+m\d\ds)\)\.$/);
    expect(await page.locator('[data-testid="rollout-progress"]').getAttribute("data-tone")).toBe("error");
    const failed = page.locator('[data-testid="rollout-rows"] tr[data-state="failed"]');
    expect(await failed.count()).toBe(1);
    expect(await failed.innerText()).toContain('protocol "ftp" is not supported');
    expect(await failed.getAttribute("data-rollback")).toBe("rolled-back");
    expect(await page.locator('[data-testid="rollout-rows"] tr[data-state="skipped"]').count()).toBe(WEB.length - 1);
    expect(await page.locator('[data-testid="rollback-progress"]').innerText()).toBe("Rolled back 1 of 1 changed sandbox.");
    expect(await page.locator('[data-testid="rollout-rollback"]').innerText()).toContain("Why: wave 1 (canary): 1 of 1 failed, limit 1");
    // The canary enforces its earlier policy again.
    const canary = (await failed.getAttribute("data-sandbox"))!;
    const cfg = await admin.getConfig({ sandbox: canary });
    expect(JSON.stringify(cfg.desired.policy)).not.toContain("ftp");
    expect(await page.locator("#rollout-resume").isHidden()).toBe(true);
    await card().screenshot({ path: ROLLOUT_SCREENSHOT("rolled-back") });
    await page.locator("#rollout-rollback").uncheck();
    expect(pageErrors).toEqual([]);
    mark("canary rolled back");
  }, 45_000);

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
    expect(await styleOf('tr[data-sandbox="qa"] [data-testid="phase"] .badge', "backgroundColor")).toBe(RED);
    expect(await qa.locator('[data-drift="failed-closed"]').innerText()).toBe("denies all traffic");
    expect(await qa.locator('[data-drift="last-update-failed"]').innerText()).toMatch(/^v2 failed: .*network_policies\["pypi"\]\.endpoints\[0\]: protocol "ftp" is not supported/);
    expect(await qa.locator('[data-testid="policy-version"]').innerText()).not.toMatch(/runs v/);

    await qa.click();
    const warning = page.locator('[data-testid="policy-warning"][data-level="red"]');
    await warning.waitFor();
    expect(await warning.innerText()).toMatch(/^v2 was rejected by the sandbox: .*protocol "ftp" is not supported.*\. The sandbox fails closed: it denies all traffic since .+\. Apply a corrected policy to restore it\.$/);
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor(); // the rejected v2 is in the editor
    expect(await page.locator("#policy-text").inputValue()).toContain("protocol: ftp");
    expect(await page.locator('[data-testid="validation"]').innerText()).toBe("⚠ Valid format — but the sandbox rejected v2 and fails closed; correct it before applying again.");
    // The policy header and the operations card say so too, in red.
    for (const slot of ["policy-enforcement", "operations-enforcement"]) {
      const chip = page.locator(`[data-testid="${slot}"] [data-health="failed-closed"]`);
      expect(await chip.innerText()).toBe("fails closed: denies all traffic");
      expect(await styleOf(`[data-testid="${slot}"] [data-health="failed-closed"]`, "backgroundColor")).toBe(RED);
    }

    mkdirSync(join(ROOT, "test-results"), { recursive: true });
    await page.screenshot({ path: FAIL_CLOSED_SCREENSHOT, fullPage: true });
    expect(pageErrors).toEqual([]);
    mark("fail closed");
  }, 45_000);

  it("shows and edits a sandbox's settings, typed and with their scope, and diffs two of its policy revisions", async () => {
    // A second policy revision of staging, committed elsewhere (the SDK in this process).
    const v2 = { ...POLICY_V1, networkPolicies: { ...POLICY_V1.networkPolicies, npm: { name: "npm", endpoints: [{ host: "registry.npmjs.org", ports: [443] }] } } };
    const { policyVersion: latest } = await admin.updatePolicy({ sandbox: "staging", policy: v2, wait: { timeoutMs: WAIT } });
    await page.locator('tr[data-sandbox="staging"]').click();
    const settings = page.locator('[data-testid="settings-card"]');
    await expect.poll(() => settings.locator("h2").textContent()).toBe("Settings of staging");

    // A value that is not of its type is refused in the page, naming the field; nothing is sent.
    const before = updateConfigRequests;
    await page.fill("#setting-key", "max_conns");
    await page.selectOption("#setting-type", "int");
    await page.fill("#setting-value", "lots");
    await page.click("#setting-set");
    await expect.poll(() => page.locator('[data-testid="setting-error"]').textContent()).toBe('value: an int is a whole number such as 64 or -5, not "lots"');
    expect(updateConfigRequests).toBe(before);

    // Typed values, each waited for at the sandbox, then listed with type and scope.
    for (const [key, type, value] of [["max_conns", "int", "64"], ["log_level", "string", "debug"]] as const) {
      await page.fill("#setting-key", key);
      await page.selectOption("#setting-type", type);
      await page.fill("#setting-value", value);
      await page.click("#setting-set");
      await page.locator('[data-testid="setting-outcome"] .outcome[data-state="applied"]').waitFor();
      await page.locator(`[data-testid="setting-rows"] tr[data-key="${key}"]`).waitFor();
    }
    const row = (key: string) => page.locator(`[data-testid="setting-rows"] tr[data-key="${key}"] td`).allTextContents();
    expect((await row("max_conns")).slice(0, 4)).toEqual(["max_conns", "int", "64", "sandbox"]);
    expect((await row("log_level")).slice(0, 4)).toEqual(["log_level", "string", '"debug"', "sandbox"]);
    const stored = await admin.getConfig({ sandbox: "staging" });
    expect(stored.desired.settings["max_conns"]?.value).toBe(64n);
    // A click on a row puts its setting, typed, in the form.
    await page.fill("#setting-key", "");
    await page.locator('[data-testid="setting-rows"] tr[data-key="max_conns"] td').first().click();
    expect([await page.inputValue("#setting-key"), await page.inputValue("#setting-type"), await page.inputValue("#setting-value")]).toEqual(["max_conns", "int", "64"]);
    // Delete: the row goes, and so does the value at the gateway.
    await page.locator('[data-testid="setting-rows"] tr[data-key="log_level"] [data-action="delete"]').click();
    await page.locator('[data-testid="setting-rows"] tr[data-key="log_level"]').waitFor({ state: "detached" });
    expect((await admin.getConfig({ sandbox: "staging" })).desired.settings["log_level"]).toBeUndefined();

    // History, newest first, and the diff of the latest change as 'policy diff' prints it.
    const history = page.locator('[data-testid="history-card"]');
    const versions = () => history.locator('[data-testid="revisions"] li').evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-version"))));
    await expect.poll(async () => (await versions()).slice(0, 2)).toEqual([latest, latest - 1]);
    expect(await versions()).toEqual([...Array(latest).keys()].map((i) => latest - i));
    await page.click("#diff-show");
    await history.locator('[data-testid="revision-diff"] .add').first().waitFor();
    const diff = await history.locator('[data-testid="revision-diff"]').textContent();
    expect(diff).toContain(`--- staging v${latest - 1}\n+++ staging v${latest}\n`);
    expect(diff).toMatch(/^\+ +npm:$/m);
    expect(diff).toMatch(/^\+ +- host: registry\.npmjs\.org$/m);
    await page.selectOption("#diff-from", String(latest));
    await page.click("#diff-show");
    await expect.poll(() => history.locator('[data-testid="diff-note"]').textContent()).toBe(`v${latest} and v${latest} are the same policy.`);
    await page.selectOption("#diff-from", "1");
    await page.click("#diff-show");
    await history.locator('[data-testid="revision-diff"] .add').first().waitFor();
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      if (width === 390) {
        // One column: the two cards follow the operations, before the rollout card.
        const tops = await page.evaluate(() => ["operations", "settings-card", "history-card", "rollout"].map((id) => document.querySelector(`[data-testid="${id}"]`)!.getBoundingClientRect().top));
        expect(tops).toEqual([...tops].sort((a, b) => a - b));
      }
      await settings.screenshot({ path: join(ROOT, "test-results", `dashboard-settings-${width}.png`) });
      await history.screenshot({ path: join(ROOT, "test-results", `dashboard-history-${width}.png`) });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(pageErrors).toEqual([]);
  }, 60_000);

  it("fits every width from 360 px up without scrolling sideways, and saves screenshots at 1280 and 390 px", async () => {
    await page.locator('tr[data-sandbox="dev"]').click();
    await page.locator('[data-testid="operation-rows"] tr[data-kind="setting"]').waitFor();
    await page.locator('[data-testid="validation"][data-valid="true"]').waitFor();
    mkdirSync(join(ROOT, "test-results"), { recursive: true });
    for (const width of [1280, 768, 390, 360]) {
      await page.setViewportSize({ width, height: 900 });
      await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
      const m = await page.evaluate(() => {
        const rect = (sel: string) => document.querySelector(sel)!.getBoundingClientRect();
        const signout = rect("#signout");
        const json = rect('[data-format="json"]');
        const editor = rect('[data-testid="editor"]');
        // Elements reaching past the window's right edge, or text cut off inside its own box.
        const outside = [...document.querySelectorAll("body *")]
          .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 0.5)
          .map((el) => `${el.tagName.toLowerCase()}.${el.className}`);
        const clipped = [...document.querySelectorAll(".badge, button, .seg")]
          .filter((el) => el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).display !== "none")
          .map((el) => `${el.tagName.toLowerCase()}.${el.className}: ${el.textContent}`);
        const details = [...document.querySelectorAll('[data-testid="operation-rows"] td.detail')].map((el) => el.getBoundingClientRect().width);
        return {
          scrollWidth: document.documentElement.scrollWidth,
          innerWidth: window.innerWidth,
          signoutHeight: signout.height,
          signoutRight: signout.right,
          jsonRight: json.right,
          editorRight: editor.right,
          outside,
          clipped,
          narrowestDetail: Math.min(...details),
        };
      });
      expect(m.scrollWidth, `page width at ${width} px`).toBeLessThanOrEqual(m.innerWidth);
      expect(m.outside, `elements past the right edge at ${width} px`).toEqual([]);
      expect(m.clipped, `clipped text at ${width} px`).toEqual([]);
      expect(m.signoutHeight, `"Sign out" on one line at ${width} px`).toBeLessThan(40);
      expect(m.signoutRight).toBeLessThanOrEqual(width);
      expect(m.jsonRight, `the JSON toggle inside the editor card at ${width} px`).toBeLessThanOrEqual(m.editorRight);
      // The detail column is never squeezed to a few letters a line.
      expect(m.narrowestDetail, `operation detail width at ${width} px`).toBeGreaterThanOrEqual(width < 640 ? width - 80 : 150);
      if (width === 1280 || width === 390 || width === 360) await page.screenshot({ path: WIDTH_SCREENSHOT(width), fullPage: true });
      // The rollout card (waves, a failed gate, the rollback) on a phone.
      if (width === 360) await card().screenshot({ path: ROLLOUT_SCREENSHOT("360") });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    expect(pageErrors).toEqual([]);
    mark("widths");
  }, 45_000);
});
