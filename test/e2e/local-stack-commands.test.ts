// `npm run gateway` and `npm run dashboard` side by side, as a newcomer runs them (issue 30, items
// 3 and 6): the admin token is kept with the state, so it works after a restart; a second stack
// command on the same port says what runs there and changes nothing; the dashboard attaches to a
// running `npm run gateway` of the same folder; a port held by another program is named.

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { connect } from "node:http2";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConfigClient } from "openshell-config";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { createNodeTransport } from "openshell-config/transport/node";
import { freePort } from "../../examples/local-stack.js";
import { ROOT } from "../cli/harness.js";
import { Background, bash, userEnvIn } from "../readme/background.js";

let scratch: string;
const background: Background[] = [];
let blocker: Server | undefined;

beforeAll(() => {
  mkdirSync(join(ROOT, "test-results"), { recursive: true });
  scratch = mkdtempSync(join(ROOT, "test-results", "local-stack-"));
});

afterAll(async () => {
  await Promise.all(background.map((b) => b.stop()));
  blocker?.close();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
}, 30_000);

function start(command: string, env: Record<string, string>): Background {
  const b = new Background(command, userEnvIn(scratch, env));
  background.push(b);
  return b;
}

/** The sandboxes the admin token lists at `url`. */
async function sandboxNames(url: string, token: string): Promise<string[]> {
  const raw = createConfigClient({ transport: createNodeTransport({ baseUrl: url }), token }).raw(OpenShell);
  const { sandboxes } = await raw.listSandboxes({ workspaceScope: workspaceScope() });
  return sandboxes.map((s) => s.metadata?.name ?? "").sort();
}

describe("npm run gateway and npm run dashboard on one folder", () => {
  it("keeps the admin token across restarts, refuses a second gateway on its port without touching its files, and lets the dashboard attach", async () => {
    const [gatewayPort, dashboardPort] = [await freePort(), await freePort()];
    const dir = join(scratch, "state");
    const env = { OPENSHELL_LOCAL_DIR: dir, OPENSHELL_GATEWAY_PORT: String(gatewayPort), DASHBOARD_PORT: String(dashboardPort) };
    const url = `http://127.0.0.1:${gatewayPort}`;

    const first = start("npm run gateway", env);
    const [, token] = await first.waitFor(/^admin token: (\S+)$/m, 60_000);
    await first.waitFor(/^Ctrl-C to stop\.$/m);
    const authFile = join(dir, "auth.json");
    const before = { text: readFileSync(authFile, "utf8"), mtime: statSync(authFile).mtimeMs };
    // No token on any command line of the stack: every user of the machine can read those (ps).
    const cmdlines = processesMentioning(dir).map((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0"));
    expect(cmdlines.some((args) => args.some((a) => a.endsWith("supervisor/src/cli.ts"))), "the supervisors run").toBe(true);
    for (const args of cmdlines) {
      expect(args).not.toContain("--token");
      expect(args.join(" ")).not.toContain(token!);
    }
    expect(statSync(authFile).mode & 0o077).toBe(0);

    // A second `npm run gateway` on the same port: one line saying this folder's gateway runs there.
    const second = await bash("npm run --silent gateway", ROOT, userEnvIn(scratch, env), 60_000);
    expect(second.code).toBe(1);
    expect(second.stderr.trim().split("\n")).toEqual([
      `error: port ${gatewayPort} (the gateway) is in use: this folder's gateway already runs there (npm run gateway or npm run dashboard). Use it (export OPENSHELL_GATEWAY_URL=${url} OPENSHELL_TOKEN=${token}), stop it first, or set OPENSHELL_GATEWAY_PORT to another port`,
    ]);
    expect(second.stdout).toBe("");
    expect(readFileSync(authFile, "utf8")).toBe(before.text);
    expect(statSync(authFile).mtimeMs).toBe(before.mtime);

    // `npm run dashboard` beside it attaches: the dashboard on its port, the same gateway and token.
    const dashboard = start("npm run dashboard", env);
    const [, dashboardUrl] = await dashboard.waitFor(/^dashboard:\s+(\S+)$/m, 60_000);
    await dashboard.waitFor(/^Ctrl-C to stop\.$/m);
    expect(dashboard.output).toMatch(new RegExp(`^gateway: +${url} +\\(already running \\(npm run gateway\\): attached; Ctrl-C stops the dashboard only\\)$`, "m"));
    expect(dashboard.output).toMatch(new RegExp(`^admin token: ${token} `, "m"));
    expect(dashboard.output).not.toMatch(/^error:/m);
    expect((await fetch(dashboardUrl!)).status).toBe(200);
    expect(readFileSync(authFile, "utf8")).toBe(before.text);
    await dashboard.stop();
    // Stopping the attached dashboard leaves the gateway running.
    expect(await sandboxNames(url, token!)).toEqual(["dev", "prod", "staging"]);

    // A restart on the same folder keeps the token the user exported and pasted.
    await first.stop();
    const again = start("npm run gateway", env);
    const [, tokenAgain] = await again.waitFor(/^admin token: (\S+)$/m, 60_000);
    expect(tokenAgain).toBe(token);
    expect(await sandboxNames(url, token!)).toEqual(["dev", "prod", "staging"]);
    await again.stop();
  }, 240_000);

  it("says that this folder's gateway runs on mutual TLS when the dashboard or a plain gateway finds its port taken by it", async () => {
    const [gatewayPort, dashboardPort] = [await freePort(), await freePort()];
    const env = { OPENSHELL_LOCAL_DIR: join(scratch, "mtls"), OPENSHELL_GATEWAY_PORT: String(gatewayPort), DASHBOARD_PORT: String(dashboardPort) };
    const mtls = start("npm run gateway -- --mtls", env);
    try {
      await mtls.waitFor(/^Ctrl-C to stop\.$/m, 90_000);
      const base = `error: port ${gatewayPort} (the gateway) is in use: this folder's gateway already runs there on mutual TLS (npm run gateway -- --mtls)`;
      const dashboard = await bash("npm run --silent dashboard", ROOT, userEnvIn(scratch, env), 60_000);
      expect(dashboard.code, dashboard.stderr).toBe(1);
      expect(dashboard.stderr.trim()).toBe(`${base}, which the dashboard cannot attach to: stop it first (Ctrl-C in its terminal), or set OPENSHELL_GATEWAY_PORT to another port`);
      const plain = await bash("npm run --silent gateway", ROOT, userEnvIn(scratch, env), 60_000);
      expect(plain.code, plain.stderr).toBe(1);
      expect(plain.stderr.trim()).toBe(`${base}: stop it first (Ctrl-C in its terminal), or set OPENSHELL_GATEWAY_PORT to another port`);
    } finally {
      await mtls.stop();
    }
  }, 240_000);

  it("names a port another program holds and writes no state", async () => {
    blocker = createServer();
    await new Promise<void>((r) => blocker!.listen(0, "127.0.0.1", r));
    const taken = (blocker.address() as { port: number }).port;
    const dir = join(scratch, "other");
    const env = userEnvIn(scratch, { OPENSHELL_LOCAL_DIR: dir, OPENSHELL_GATEWAY_PORT: String(taken), DASHBOARD_PORT: String(await freePort()) });
    for (const script of ["gateway", "dashboard"]) {
      const r = await bash(`npm run --silent ${script}`, ROOT, env, 60_000);
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr.trim().split("\n")).toEqual([`error: port ${taken} (the gateway) is in use by another program: stop it, or set OPENSHELL_GATEWAY_PORT to another port`]);
    }
    const dashboardBusy = await bash("npm run --silent dashboard", ROOT, userEnvIn(scratch, { OPENSHELL_LOCAL_DIR: dir, OPENSHELL_GATEWAY_PORT: String(await freePort()), DASHBOARD_PORT: String(taken) }), 60_000);
    expect(dashboardBusy.code).toBe(1);
    expect(dashboardBusy.stderr.trim()).toBe(`error: port ${taken} (the dashboard) is in use: stop what listens there, or set DASHBOARD_PORT to another port`);
    expect(() => statSync(join(dir, "auth.json"))).toThrow(/ENOENT/);
  }, 120_000);

  it("one Ctrl-C stops npm run gateway gracefully even while a call is held open: the store is closed and no WAL is left", async () => {
    const dir = join(scratch, "ctrl-c-held");
    const port = await freePort();
    const b = start("npm run gateway", { OPENSHELL_LOCAL_DIR: dir, OPENSHELL_GATEWAY_PORT: String(port), DASHBOARD_PORT: String(await freePort()) });
    await b.waitFor(/^Ctrl-C to stop\.$/m, 90_000);
    // A call whose request never ends keeps the gateway's graceful shutdown waiting its full grace.
    const session = connect(`http://127.0.0.1:${port}`);
    session.on("error", () => undefined);
    const held = session.request({ ":method": "POST", ":path": "/openshell.v1.OpenShell/Health", "content-type": "application/grpc", te: "trailers" });
    held.on("error", () => undefined);
    held.write(Buffer.from([0, 0, 0]));
    await new Promise((r) => setTimeout(r, 200));
    try {
      // What a terminal sends on Ctrl-C: SIGINT to the whole group (the runner then sends SIGTERM).
      process.kill(-b.child.pid!, "SIGINT");
      const end = Date.now() + 30_000;
      while (processesMentioning(dir).length > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 200));
      expect(processesMentioning(dir)).toEqual([]);
      const log = readFileSync(join(dir, "stack.log"), "utf8");
      expect(log).toContain('"msg":"gateway stopped"');
      expect(log).not.toContain("exiting without waiting");
      expect(() => statSync(join(dir, "gateway.db-wal"))).toThrow(/ENOENT/);
    } finally {
      session.destroy();
    }
  }, 120_000);

  it.each(["gateway", "dashboard"])("Ctrl-C pressed twice stops npm run %s and every process it started", async (script) => {
    const dir = join(scratch, `ctrl-c-${script}`);
    const env = { OPENSHELL_LOCAL_DIR: dir, OPENSHELL_GATEWAY_PORT: String(await freePort()), DASHBOARD_PORT: String(await freePort()) };
    const b = start(`npm run ${script}`, env);
    await b.waitFor(/^Ctrl-C to stop\.$/m, 90_000);
    expect(processesMentioning(dir).length, "the stack's processes run").toBeGreaterThan(0);
    // A terminal sends SIGINT to the whole group; tsx passes it on to its child once more.
    process.kill(-b.child.pid!, "SIGINT");
    await new Promise((r) => setTimeout(r, 100));
    try {
      process.kill(-b.child.pid!, "SIGINT");
    } catch {
      // Every process of the group is gone already: the first Ctrl-C was enough.
    }
    const end = Date.now() + 20_000;
    while (processesMentioning(dir).length > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 200));
    expect(processesMentioning(dir).map((pid) => readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").slice(0, 120))).toEqual([]);
  }, 120_000);
});

/** Processes whose command line mentions `needle` (Linux /proc). */
function processesMentioning(needle: string): number[] {
  return readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(needle);
      } catch {
        return false;
      }
    })
    .map(Number);
}
