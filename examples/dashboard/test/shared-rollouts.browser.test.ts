// Two browsers on one gateway share rollouts (issue 31, item 5): Debian's Chromium driven by
// playwright-core, two contexts (two operators, each with its own token and storage), the
// dashboard served by Vite's dev server, a real gateway and a supervisor fleet
// (examples/local-stack.ts). Operator A (demo-admin) starts a three-wave rollout paused for
// approval; B (bob, another admin) sees it paused within a second of A, continues it from the
// workspace's rollouts panel, and A's panel follows it to done. A user (carol) sees the buttons
// disabled, saying why. A third context whose rollout RPCs answer UNIMPLEMENTED (as a gateway
// without the extension does) keeps rollouts in the browser and says that they are not shared.
//
// The panels are saved as test-results/dashboard-shared-<what>.png. Every process started here is
// stopped in afterAll, and the test checks that Chromium is gone.

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { createServer, type ViteDevServer } from "vite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, SandboxPhase, workspaceScope } from "openshell-config/raw";
import { fleetNames, startLocalStack, type LocalStack } from "../../local-stack.js";
import { dashboardConfig } from "../vite.config.js";
import { processesMentioning } from "./processes.js";

const ROOT = resolve(fileURLToPath(new URL(".", import.meta.url)), "../../..");
const SHOT = (what: string) => join(ROOT, "test-results", `dashboard-shared-${what}.png`);
const CHROMIUM = "/usr/bin/chromium";
/** A flag that marks this test's Chromium processes, to check that none is left. */
const MARKER = `--class=shared-rollouts-test-${process.pid}`;
const CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", MARKER];
/** Generous: a loaded 2-core machine runs the gateway, a supervisor fleet, Vite and Chromium at once. */
const WAIT = 20_000;
const POLICY = { filesystem: { includeWorkdir: true, readWrite: ["/tmp"] }, networkPolicies: { github: { name: "github", endpoints: [{ host: "api.github.com", ports: [443] }] } } };
/** Four sandboxes: the default waves `1, 50%, 100%` make three waves of 1, 1 and 2. */
const WEB = fleetNames("web-", 4);
const BOB = `bob-${process.pid}-0123456789abcdef`;
const CAROL = `carol-${process.pid}-0123456789abcdef`;

let vite: ViteDevServer | undefined;
let stack: LocalStack | undefined;
let browser: Browser | undefined;
let dir: string | undefined;
let viteCacheDir: string | undefined;
let origin = "";
const pageErrors: string[] = [];

async function startStack(): Promise<LocalStack> {
  dir = mkdtempSync(join(tmpdir(), "dashboard-shared-"));
  // Two more principals beside the stack's own admin (stack-tokens.ts keeps entries it did not write).
  writeFileSync(
    join(dir, "auth.json"),
    JSON.stringify({ tokens: [{ token: BOB, principal: "bob", role: "admin", workspaces: "*" }, { token: CAROL, principal: "carol", role: "user", workspaces: "*" }] }),
    { mode: 0o600 },
  );
  const s = await startLocalStack({ sandboxes: WEB, dir, corsOrigins: [origin] });
  stack = s;
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: s.url }), token: s.adminToken }).raw(OpenShell);
  for (const name of WEB) await raw.createSandbox({ name, labels: { app: "web" }, spec: { policy: POLICY }, workspaceScope: workspaceScope() });
  s.startSupervisor({ fleet: { prefix: "web-", count: WEB.length }, args: ["--apply-delay-ms", "300"] });
  const end = Date.now() + WAIT;
  for (const name of WEB) {
    while ((await raw.getSandbox({ name, workspaceScope: workspaceScope() })).sandbox?.status?.phase !== SandboxPhase.READY) {
      if (Date.now() > end) throw new Error(`sandbox ${name} did not become ready; see ${s.logFile}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return s;
}

/** A new browser context (its own storage) signed in with `token`, its policy editor loaded. */
async function signedIn(token: string, setup?: (ctx: BrowserContext) => Promise<void>): Promise<Page> {
  const ctx = await browser!.newContext({ viewport: { width: 1280, height: 900 } });
  await setup?.(ctx);
  const page = await ctx.newPage();
  page.setDefaultTimeout(WAIT);
  page.on("pageerror", (e) => pageErrors.push(e.message));
  await page.goto(origin);
  await page.locator("#gateway").fill(stack!.url);
  await page.locator("#token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator(`tr[data-sandbox="${WEB[0]}"]`).waitFor();
  return page;
}

beforeAll(async () => {
  viteCacheDir = mkdtempSync(join(tmpdir(), "dashboard-vite-"));
  vite = await createServer({ ...dashboardConfig(), configFile: false, cacheDir: viteCacheDir, logLevel: "warn", server: { host: "127.0.0.1", port: 0, strictPort: false, hmr: false, watch: null } });
  await vite.listen();
  origin = new URL(vite.resolvedUrls!.local[0]!).origin;
  [, browser] = await Promise.all([startStack(), chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS, timeout: WAIT })]);
}, 60_000);

afterAll(async () => {
  await Promise.allSettled([browser?.close(), vite?.close(), stack?.stop()]);
  // eslint-disable-next-line no-console
  if (pageErrors.length > 0) console.log(`page errors: ${pageErrors.join("\n")}`);
  expect(processesMentioning(MARKER), "Chromium processes left running").toEqual([]);
  for (const p of stack?.processes ?? []) expect(p.running, `${p.name} still running`).toBe(false);
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (viteCacheDir) rmSync(viteCacheDir, { recursive: true, force: true });
}, 30_000);

const panelRow = (page: Page, id: string) => page.locator(`[data-testid="shared-rollouts"] li[data-rollout-id="${id}"]`);

async function shot(page: Page, what: string): Promise<void> {
  mkdirSync(join(ROOT, "test-results"), { recursive: true });
  await page.locator('[data-testid="rollouts-panel"]').screenshot({ path: SHOT(what) });
}

describe("two dashboards share rollouts through the gateway", () => {
  let a: Page;
  let b: Page;
  let id = "";

  it("shows A's rollout, paused for approval, in B's panel within a second of A's", async () => {
    [a, b] = await Promise.all([signedIn(stack!.adminToken), signedIn(BOB)]);
    for (const p of [a, b]) await p.locator('[data-testid="shared-status"][data-tone="live"]').waitFor();
    expect(await b.locator('[data-testid="shared-status"]').innerText()).toContain("Shared");
    await a.locator('[data-testid="validation"][data-valid="true"]').waitFor();
    await a.locator("#rollout-selector").fill("app=web");
    await a.locator("#rollout-approval").check();
    await a.locator("#rollout-start").click();

    const paused = '[data-testid="shared-rollouts"] li[data-standing="awaiting-approval"]';
    const seen = await Promise.all([a, b].map((p) => p.locator(paused).waitFor().then(() => Date.now())));
    expect(Math.abs(seen[1]! - seen[0]!), "B saw it paused this long after A (ms)").toBeLessThan(1000);
    id = (await b.locator(paused).getAttribute("data-rollout-id"))!;
    const row = panelRow(b, id);
    expect(await row.locator('[data-testid="shared-standing"]').innerText()).toBe("paused for approval");
    expect(await row.locator('[data-testid="shared-waves"]').innerText()).toBe("waves 1/3");
    expect(await row.locator('[data-testid="shared-counts"]').innerText()).toBe("1 applied, 0 failed of 4 · 1 sent");
    expect(await row.locator('[data-testid="shared-creator"]').innerText()).toBe("by demo-admin");
    expect(await row.locator('[data-testid="shared-driver"]').innerText()).toBe("no driver");
    expect(await row.locator('button[data-action="proceed"]').innerText()).toBe("Approve & continue");
    expect(await row.locator('button[data-action="proceed"]').isEnabled()).toBe(true);
    // A's own card still shows the run it drove, as before.
    await a.locator('[data-testid="rollout-progress"][data-verdict="paused"]').waitFor();
    await shot(a, "paused-a");
    await shot(b, "paused-b");
  }, 60_000);

  it("lets B continue it, and A's panel follows it running, approved by bob, to done", async () => {
    await panelRow(b, id).locator('button[data-action="proceed"]').click();
    // A sees B's run: its driver is B's dashboard, its approval bob's.
    const rowA = panelRow(a, id);
    await rowA.locator('[data-testid="shared-approvals"]').waitFor();
    expect(await rowA.locator('[data-testid="shared-approvals"]').innerText()).toMatch(/^approved: wave 2 by bob at /);
    // Paused again before wave 3: B approves that one too.
    await b.locator(`[data-testid="shared-rollouts"] li[data-rollout-id="${id}"][data-standing="awaiting-approval"] [data-testid="shared-waves"]`, { hasText: "waves 2/3" }).waitFor();
    await panelRow(b, id).locator('button[data-action="proceed"]').click();
    await a.locator(`[data-testid="shared-rollouts"] li[data-rollout-id="${id}"][data-standing="complete"]`).waitFor();
    expect(await rowA.locator('[data-testid="shared-waves"]').innerText()).toBe("waves 3/3");
    expect(await rowA.locator('[data-testid="shared-counts"]').innerText()).toBe("4 applied, 0 failed of 4 · 4 sent");
    expect(await rowA.locator('[data-testid="shared-approvals"]').innerText()).toMatch(/wave 2 by bob at .*; wave 3 by bob at /);
    // B's card showed the run it drove, to done.
    await b.locator('[data-testid="rollout-progress"][data-verdict="done"]').waitFor();
    expect(await b.locator('[data-testid="rollout-rows"] tr[data-state="applied"]').count()).toBe(WEB.length);
    // Done: no Continue, but Undo is offered to both.
    expect(await rowA.locator('button[data-action="proceed"]').count()).toBe(0);
    expect(await rowA.locator('button[data-action="undo"]').isEnabled()).toBe(true);
    await shot(a, "done-a");
  }, 60_000);

  it("starting another rollout keeps the first one listed", async () => {
    await a.locator("#rollout-approval").uncheck();
    await a.locator("#rollout-waves").fill("");
    await a.locator("#rollout-start").click();
    await a.locator('[data-testid="rollout-progress"][data-verdict="done"]').waitFor();
    await b.locator('[data-testid="shared-rollouts"] li').nth(1).waitFor();
    const ids = await b.locator('[data-testid="shared-rollouts"] li').evaluateAll((els) => els.map((e) => e.getAttribute("data-rollout-id")));
    expect(ids).toHaveLength(2);
    expect(ids[1]).toBe(id); // newest first
    // A's own list shows the first one as the record has it now (done by bob), not as A saved it (paused).
    expect(await a.locator(`[data-testid="kept-rollouts"] li[data-rollout-id="${id}"]`).getAttribute("data-phase")).toBe("complete");
  }, 60_000);

  it("shows a user the buttons disabled, saying why", async () => {
    const c = await signedIn(CAROL);
    const row = panelRow(c, id);
    await c.locator('[data-testid="shared-refused"]:not([hidden])').waitFor();
    expect(await c.locator('[data-testid="shared-refused"]').innerText()).toMatch(/^Only an admin of this workspace may continue or undo a rollout \(Permission denied: .+\)\.$/);
    await row.locator('button[data-action="undo"][disabled]').waitFor();
    expect(await row.locator('button[data-action="undo"]').getAttribute("title")).toMatch(/^Only an admin of this workspace/);
    await shot(c, "user");
    await c.context().close();
  }, 60_000);

  it("says rollouts are not shared against a gateway without the extension, and keeps them in the browser", async () => {
    const d = await signedIn(stack!.adminToken, async (ctx) => {
      await ctx.route(/\/openshell\.v1\.OpenShell\/(Create|Get|List|Watch|Update|Approve)Rollouts?$/, (route) =>
        route.fulfill({ status: 501, contentType: "application/json", body: JSON.stringify({ code: "unimplemented", message: "method not implemented" }) }),
      );
    });
    await d.locator('[data-testid="rollouts-panel"][data-shared="false"]').waitFor();
    expect(await d.locator('[data-testid="shared-status"]').innerText()).toMatch(/^Rollouts are not shared/);
    expect(await d.locator('[data-testid="rollouts"] h3').innerText()).toBe("Rollouts (this browser only: not shared)");
    await d.locator('[data-testid="validation"][data-valid="true"]').waitFor();
    await d.locator("#rollout-selector").fill("app=web");
    await d.locator("#rollout-waves").fill("");
    await d.locator("#rollout-start").click();
    await d.locator('[data-testid="rollout-progress"][data-verdict="done"]').waitFor();
    expect(await d.locator('[data-testid="kept-rollouts"] li').count()).toBe(1);
    expect(await d.locator('[data-testid="shared-rollouts"] li').count()).toBe(0);
    await shot(d, "not-shared");
    await d.context().close();
  }, 60_000);
});
