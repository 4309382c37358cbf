// `npm run gateway -- --mtls` and `npm run dashboard -- --mtls` as a user runs them: each in its
// own process group with its state in a temporary directory and free ports, stopped with Ctrl-C.
// The gateway's `export` line alone points `npx openshell-config` at it, as at a stock install;
// the dashboard's dev server forwards the page's calls to the mutual-TLS gateway with the client
// bundle (server streams included) and refuses calls from other origins and oversized bodies.

import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { clone, create, toJsonString } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { ListSandboxesRequestSchema, NetworkPolicyRuleSchema, OpenShell, SandboxPolicySchema, workspaceScope } from "openshell-config/raw";
import { PROXY_MAX_BODY_BYTES } from "../../examples/dashboard/gateway-proxy.js";
import { DEMO_POLICY } from "../../examples/demo-sandboxes.js";
import { freePort } from "../../examples/local-stack.js";
import { build, ROOT } from "../cli/harness.js";
import { Background, bash, userEnvIn } from "../readme/background.js";

let scratch: string;
const background: Background[] = [];
const LIST = "/openshell.v1.OpenShell/ListSandboxes";

beforeAll(async () => {
  // Inside the checkout, as the README's commands run "in the clone": npx finds the clone's command.
  mkdirSync(join(ROOT, "test-results"), { recursive: true });
  scratch = mkdtempSync(join(ROOT, "test-results", "tls-commands-"));
  // `npm run build`, as the README's set-up: the command line runs from dist/.
  await build();
}, 180_000);

afterAll(async () => {
  await Promise.all(background.map((b) => b.stop()));
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, 30_000);

function start(command: string, env: Record<string, string>): Background {
  const b = new Background(command, userEnvIn(scratch, env));
  background.push(b);
  return b;
}

describe("npm run gateway -- --mtls", () => {
  it("refuses an unknown argument with one line and exit status 2", async () => {
    const r = await bash("npm run --silent gateway -- --tls", ROOT, userEnvIn(scratch, {}), 30_000);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toEqual(['npm run gateway: unknown argument "--tls" (usage: npm run gateway [-- --mtls])']);
  }, 30_000);

  it("prints an export line with which `npx openshell-config sandbox list` lists the demo sandboxes with no other flags", async () => {
    const port = await freePort();
    const dir = join(scratch, "gateway-state");
    const gateway = start("npm run gateway -- --mtls", { OPENSHELL_LOCAL_DIR: dir, OPENSHELL_GATEWAY_PORT: String(port) });
    const [exportLine, registryDir] = await gateway.waitFor(/^export OPENSHELL_SYSTEM_GATEWAY_DIR=(\S+) OPENSHELL_GATEWAY=openshell-local$/m, 60_000);
    await gateway.waitFor(/^Ctrl-C to stop\.$/m, 10_000);
    expect(registryDir).toBe(dir);
    expect(gateway.output).toMatch(new RegExp(`^gateway: +https://127\\.0\\.0\\.1:${port} `, "m"));
    expect(gateway.output).toContain(join(dir, "gateways", "openshell-local", "mtls"));
    expect(gateway.output).not.toMatch(/admin token/);
    const list = await bash(`${exportLine}\nnpx openshell-config sandbox list`, scratch, userEnvIn(scratch, { npm_config_cache: join(scratch, "npm-cache") }), 60_000);
    expect(list.code, `${list.stdout}\n${list.stderr}\n(gateway: ${gateway.output})`).toBe(0);
    for (const name of ["dev", "staging", "prod"]) expect(list.stdout).toMatch(new RegExp(`^${name}\\b`, "m"));
    await gateway.stop();
  }, 90_000);
});

describe("npm run dashboard -- --mtls", () => {
  let dashboard: Background;
  let origin: string;

  beforeAll(async () => {
    const [gatewayPort, dashboardPort] = [await freePort(), await freePort()];
    dashboard = start("npm run dashboard -- --mtls", {
      OPENSHELL_LOCAL_DIR: join(scratch, "dashboard-state"),
      OPENSHELL_GATEWAY_PORT: String(gatewayPort),
      DASHBOARD_PORT: String(dashboardPort),
    });
    const [, url] = await dashboard.waitFor(/^dashboard:\s+(\S+)$/m, 90_000);
    await dashboard.waitFor(/^Ctrl-C to stop\.$/m, 10_000);
    origin = new URL(url!).origin;
  }, 100_000);

  afterAll(async () => {
    await dashboard?.stop();
  }, 30_000);

  const connectPost = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${origin}${LIST}`, { method: "POST", headers: { "content-type": "application/json", "connect-protocol-version": "1", ...headers }, body });

  it("says that the page's calls are proxied with the client bundle, and that no token is needed", () => {
    expect(dashboard.output).toMatch(/proxied with the client bundle \S+\/gateways\/openshell-local\/mtls/);
    expect(dashboard.output).toMatch(/no token/);
  });

  it("a Connect request to the dashboard's origin reaches the gateway and lists dev, staging and prod", async () => {
    const res = await connectPost(toJsonString(ListSandboxesRequestSchema, create(ListSandboxesRequestSchema, { workspaceScope: workspaceScope() })), { origin });
    expect(res.status, await res.clone().text()).toBe(200);
    const names = ((await res.json()) as { sandboxes: { metadata: { name: string } }[] }).sandboxes.map((s) => s.metadata.name);
    expect(names).toEqual(expect.arrayContaining(["dev", "staging", "prod"]));
  });

  it("the SDK's browser transport on the page's origin commits a waited update while a watch streams its operation through the proxy", async () => {
    const client = createConfigClient({ baseUrl: origin });
    const raw = client.raw(OpenShell);
    const watching = new AbortController();
    const seen: string[] = [];
    // Whether the operation comes as one of the watch's initial ones or live, it comes while the
    // stream stays open: the proxy streams rather than buffering the response to its end.
    const watch = (async () => {
      const stream = raw.watchConfigUpdateOperations({ sandbox: "staging", workspaceScope: workspaceScope() }, { signal: watching.signal });
      for await (const res of stream) if (res.operation) seen.push(res.operation.operationId);
    })().catch((err: unknown) => {
      if (!watching.signal.aborted) throw err;
    });
    // The demo sandbox's static fields as created, one more network rule.
    const withNpm = clone(SandboxPolicySchema, DEMO_POLICY);
    withNpm.networkPolicies["npm"] = create(NetworkPolicyRuleSchema, { name: "npm", endpoints: [{ host: "registry.npmjs.org", ports: [443] }], binaries: [{ path: "/usr/bin/git" }] });
    // Each step has its own bound, and the test's is their sum with room to spare: on a loaded CI
    // machine (two cores, other suites' stacks beside this one) a bound that only just covered
    // the waits timed the test out without saying which step was slow.
    const started = Date.now();
    const res = await client.updatePolicy({ sandbox: "staging", policy: withNpm, wait: { timeoutMs: 30_000 } });
    const operationId = res.handle.operationId ?? "";
    expect(res.completion, `after ${Date.now() - started} ms`).toMatchObject({ state: "applied", outcome: "applied" });
    const until = Date.now() + 15_000;
    while (!seen.includes(operationId) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    watching.abort();
    const ended = await Promise.race([watch.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 10_000))]);
    expect(ended, "the aborted watch ended within 10 s").toBe(true);
    expect(seen, `the watch saw ${seen.length} operations in ${Date.now() - started} ms`).toContain(operationId);
  }, 75_000);

  it("refuses a call from another origin before it reaches the gateway", async () => {
    const res = await connectPost("{}", { origin: "http://localhost:1" });
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ code: "permission_denied", message: expect.stringContaining("http://localhost:1") });
  });

  it("forwards a body at the size bound and refuses one a byte over it", async () => {
    const atBound = await connectPost(" ".repeat(PROXY_MAX_BODY_BYTES - 2) + "{}");
    expect(((await atBound.json()) as { message?: string }).message ?? "").not.toMatch(/^dashboard proxy/);
    const over = await connectPost(" ".repeat(PROXY_MAX_BODY_BYTES - 1) + "{}");
    expect(over.status).toBe(429);
    expect(await over.json()).toEqual({ code: "resource_exhausted", message: `dashboard proxy: request body larger than ${PROXY_MAX_BODY_BYTES} bytes` });
  });

  it("serves the page itself from the dev server", async () => {
    const page = await fetch(`${origin}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<html");
  });
});
