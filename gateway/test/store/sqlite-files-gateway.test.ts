// The review's probe of finding 6 (issue 29), against the `openshell-gateway` process itself under
// umask 022: the modes of the database files it creates, what it says about a database others
// may read, and whether a credential rotated away through UpdateProvider can still be read from
// the files' bytes while it runs and after it stops.

import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell, workspaceScope } from "openshell-config/raw";
import { run, type Run } from "../server/gateway-process.js";
import { modesOf, secretsOnDisk } from "./sqlite-file-bytes.js";

const dir = mkdtempSync(join(tmpdir(), "osc-sqlite-files-gw-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Starts the gateway on `path` with the umask the review's host had. */
async function serve(path: string): Promise<{ gw: Run; url: string }> {
  const before = process.umask(0o022);
  let gw: Run;
  try {
    gw = run(["serve", "--db", `sqlite:${path}`, "--host", "127.0.0.1", "--port", "0", "--no-auth"]);
  } finally {
    process.umask(before);
  }
  const listening = await gw.waitFor(/listening on/);
  return { gw, url: listening.url as string };
}

async function stop(gw: Run): Promise<void> {
  gw.child.kill("SIGTERM");
  expect(await gw.exit).toBe(0);
}

const secret = () => `sk-${randomBytes(24).toString("hex")}`;

/** The gateway's JSON log lines whose msg matches. */
function logged(gw: Run, msg: RegExp): Record<string, unknown>[] {
  return gw.lines.flatMap((l) => {
    try {
      const json = JSON.parse(l) as Record<string, unknown>;
      return typeof json.msg === "string" && msg.test(json.msg) ? [json] : [];
    } catch {
      return [];
    }
  });
}

describe("the gateway's SQLite files", () => {
  it("under umask 022 the gateway creates its database, -wal and -shm readable and writable by itself only", async () => {
    const path = join(dir, "fresh.db");
    const { gw, url } = await serve(path);
    try {
      const client = createClient(OpenShell, createNodeTransport({ baseUrl: url, protocol: "grpc" }));
      await client.createProvider({ provider: { metadata: { name: "llm" }, type: "openai", credentials: { API_KEY: secret() } }, workspaceScope: workspaceScope() });
      expect(modesOf(path)).toEqual({ main: "0600", "-shm": "0600", "-wal": "0600" });
      await stop(gw);
      expect(modesOf(path)).toEqual({ main: "0600" });
    } finally {
      gw.child.kill("SIGKILL");
    }
  });

  it("a credential rotated away through UpdateProvider is in neither the database file nor the -wal once the call is answered, and not after a clean stop", async () => {
    const path = join(dir, "rotated.db");
    const { gw, url } = await serve(path);
    try {
      const client = createClient(OpenShell, createNodeTransport({ baseUrl: url, protocol: "grpc" }));
      const scope = workspaceScope();
      const [first, second, third] = [secret(), secret(), secret()];
      await client.createProvider({ provider: { metadata: { name: "llm" }, type: "openai", credentials: { API_KEY: first }, config: { REGION: "eu" } }, workspaceScope: scope });
      await client.updateProvider({ provider: { metadata: { name: "llm" }, credentials: { API_KEY: second }, config: { REGION: "eu" } }, workspaceScope: scope });
      await client.updateProvider({ provider: { metadata: { name: "llm" }, credentials: { API_KEY: third }, config: { REGION: "eu" } }, workspaceScope: scope });
      // Still running, no restart, no checkpoint asked for: the answer to UpdateProvider is enough.
      expect(secretsOnDisk(path, [first, second])).toEqual([]);
      expect(secretsOnDisk(path, [third])).toEqual([`main: ${third.slice(0, 24)}…`]);
      expect(gw.lines.join("\n")).not.toContain(third);
      await stop(gw);
      expect(secretsOnDisk(path, [first, second])).toEqual([]);
    } finally {
      gw.child.kill("SIGKILL");
    }
  });

  it("a database left readable by others is tightened at startup, and the gateway logs a warning naming the file and both modes", async () => {
    const path = join(dir, "loose.db");
    const raw = new Database(path);
    raw.close();
    chmodSync(path, 0o644);
    const { gw } = await serve(path);
    try {
      expect(logged(gw, /database file was readable by group or others/)).toEqual([expect.objectContaining({ level: "warn", file: path, mode: "0644", now: "0600" })]);
      expect(modesOf(path)).toEqual({ main: "0600", "-shm": "0600", "-wal": "0600" });
      await stop(gw);
    } finally {
      gw.child.kill("SIGKILL");
    }
  });
});
