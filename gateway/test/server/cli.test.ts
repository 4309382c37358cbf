// The `openshell-gateway` executable end to end: started as a process from its source, it serves
// the SDK, reports bad command lines and auth files, and stops cleanly on SIGTERM.

import { existsSync } from "node:fs";
import { connect } from "node:http2";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNodeTransport } from "openshell-config/transport/node";
import { ServiceStatus, workspaceScope } from "openshell-config/raw";
import { freePort } from "../../../examples/free-port.js";
import { run } from "./gateway-process.js";
import { openShell } from "./harness.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "gateway-cli-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/**
 * A call whose request never ends, opened once the gateway listens: it keeps a graceful shutdown
 * waiting for its grace period (5 s). Settles when its stream closes.
 */
async function heldCall(gw: ReturnType<typeof run>): Promise<{ closed: Promise<string> }> {
  const listening = await gw.waitFor(/listening on/);
  const session = connect(listening.url as string);
  session.on("error", () => undefined);
  const stream = session.request({ ":method": "POST", ":path": "/openshell.v1.OpenShell/Health", "content-type": "application/grpc", te: "trailers" });
  stream.on("error", () => undefined);
  const closed = new Promise<string>((resolve) => stream.once("close", () => resolve("closed"))).finally(() => session.destroy());
  // Part of an envelope header, and nothing more; written (with the request's HEADERS) before the
  // PING below is queued, which nghttp2 would otherwise send first.
  await new Promise((resolve) => stream.write(Buffer.from([0, 0, 0]), resolve));
  // The gateway answers a PING after reading the frames before it: then it holds the stream. (A
  // PING asked for before the session has connected is cancelled, hence the wait for it.)
  if (session.connecting) await new Promise((resolve) => session.once("connect", resolve));
  await new Promise<void>((resolve, reject) => session.ping((err) => (err ? reject(err) : resolve())));
  return { closed };
}

describe("openshell-gateway", () => {
  it("serves the SDK with the auth file's tokens and exits 0 after a graceful SIGTERM", async () => {
    const authFile = join(dir, "auth.json");
    await writeFile(authFile, JSON.stringify({ tokens: [{ token: "cli-test-token-0001", principal: "alice", role: "admin", workspaces: "*" }] }), { mode: 0o600 });
    const gw = run(["serve", "--db", "sqlite::memory:", "--port", "0"], { OPENSHELL_GATEWAY_AUTH_FILE: authFile });
    try {
      const listening = await gw.waitFor(/listening on/);
      const url = listening.url as string;
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const client = openShell(createNodeTransport({ baseUrl: url, protocol: "grpc" }));
      expect((await client.health({})).status).toBe(ServiceStatus.HEALTHY);
      const err = await client.listSandboxes({ workspaceScope: workspaceScope() }).catch((e: unknown) => ConnectError.from(e));
      expect(err).toBeInstanceOf(ConnectError);
      expect((err as ConnectError).code).toBe(Code.Unauthenticated);
      expect(await (await fetch(`${url}/healthz`)).text()).toBe("ok");
      gw.child.kill("SIGTERM");
      expect(await gw.exit).toBe(0);
      expect(gw.lines.join("\n")).toContain("gateway stopped");
      expect(gw.lines.join("\n")).not.toContain("cli-test-token-0001");
    } finally {
      gw.child.kill("SIGKILL");
    }
  });

  it("warns loudly at startup when run with --no-auth", async () => {
    const gw = run(["serve", "--db", "sqlite::memory:", "--port", "0", "--no-auth"]);
    try {
      const warning = await gw.waitFor(/AUTHENTICATION IS DISABLED/);
      expect(warning.level).toBe("warn");
      await gw.waitFor(/listening on/);
      gw.child.kill("SIGINT");
      expect(await gw.exit).toBe(0);
    } finally {
      gw.child.kill("SIGKILL");
    }
  });

  it("shuts down gracefully on a Ctrl-C followed by its parent's SIGTERM, and closes a SQLite file's WAL", async () => {
    const db = join(dir, "ctrl-c.db");
    const gw = run(["serve", "--db", `sqlite:${db}`, "--port", "0", "--no-auth"]);
    try {
      const held = await heldCall(gw);
      // What a terminal and `npm run gateway` send: SIGINT to the whole group, then, once the
      // parent has handled it, SIGTERM.
      gw.child.kill("SIGINT");
      await gw.waitFor(/shutting down/);
      gw.child.kill("SIGTERM");
      await gw.waitFor(/already shutting down/);
      expect(await gw.exit).toBe(0);
      const out = gw.lines.join("\n");
      expect(out).toContain("gateway stopped");
      expect(out).not.toContain("exiting without waiting");
      expect(existsSync(`${db}-wal`)).toBe(false);
      expect(await held.closed).toBe("closed");
    } finally {
      gw.child.kill("SIGKILL");
    }
  });

  it("exits at once, 1, on the same signal twice", async () => {
    const gw = run(["serve", "--db", "sqlite::memory:", "--port", "0", "--no-auth"]);
    try {
      const held = await heldCall(gw);
      gw.child.kill("SIGINT");
      await gw.waitFor(/shutting down/);
      gw.child.kill("SIGINT");
      expect(await gw.exit).toBe(1);
      expect(gw.lines.join("\n")).toContain("second signal: exiting without waiting");
      expect(await held.closed).toBe("closed");
    } finally {
      gw.child.kill("SIGKILL");
    }
  });

  it("exits 2 with the usage text on a bad command line", async () => {
    const gw = run(["serve", "--db", "sqlite::memory:", "--no-auth"]);
    expect(await gw.exit).toBe(2);
    const out = gw.lines.join("\n");
    expect(out).toContain("--port is required");
    // The problem and where the options are, not 70 lines of help burying it.
    expect(gw.lines.filter((l) => l !== "")).toEqual(["openshell-gateway: --port is required (or set OPENSHELL_GATEWAY_PORT)", "run `openshell-gateway --help` for the options"]);
  });

  it("exits 1 naming the entry and field when the auth file is invalid", async () => {
    const authFile = join(dir, "bad-auth.json");
    await writeFile(authFile, JSON.stringify({ tokens: [{ token: "t-0123456789", principal: "bob", role: "owner", workspaces: "*" }] }));
    const gw = run(["serve", "--db", "sqlite::memory:", "--port", "0", "--auth-file", authFile]);
    expect(await gw.exit).toBe(1);
    // One plain line, not a JSON log line with a stack.
    expect(gw.lines).toEqual([`openshell-gateway: ${authFile}: tokens[0].role: must be "admin", "user" or "supervisor"`]);
  });

  it("exits 1 with one plain line, without a password, when PostgreSQL cannot be reached", async () => {
    const port = await freePort();
    const gw = run(["serve", "--db", `postgres://app:s3cret-pass@127.0.0.1:${port}/openshell`, "--port", "0", "--no-auth", "--log-level", "error"]);
    expect(await gw.exit).toBe(1);
    expect(gw.lines).toHaveLength(1);
    expect(gw.lines[0]).toMatch(new RegExp(`^openshell-gateway: cannot open the database postgres://app:\\*\\*\\*@127\\.0\\.0\\.1:${port}/openshell: PostgreSQL unreachable: .*ECONNREFUSED`));
    expect(gw.lines.join("\n")).not.toContain("s3cret-pass");
  });

  it("says where the user goes when a PostgreSQL URL names none and the server wants one", async () => {
    // Without USER or PGUSER, node-postgres sends no user name at all; the server refuses that.
    const gw = run(["serve", "--db", "postgres://127.0.0.1:5432/postgres", "--port", "0", "--no-auth", "--log-level", "error"], { USER: "", PGUSER: "" });
    expect(await gw.exit).toBe(1);
    expect(gw.lines).toHaveLength(1);
    expect(gw.lines[0]).toMatch(/^openshell-gateway: cannot open the database postgres:\/\/127\.0\.0\.1:5432\/postgres: .*user name.*; name the user in the URL: postgres:\/\/USER@HOST:PORT\/DATABASE$/);
  });

  it("exits 1 with one plain line when the SQLite file's folder does not exist", async () => {
    const db = join(dir, "no-such-folder", "gateway.db");
    const gw = run(["serve", "--db", `sqlite:${db}`, "--port", "0", "--no-auth", "--log-level", "error"]);
    expect(await gw.exit).toBe(1);
    expect(gw.lines).toEqual([`openshell-gateway: cannot open the database sqlite:${db}: Cannot open database because the directory does not exist`]);
  });
});
