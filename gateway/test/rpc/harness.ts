// A real gateway on a loopback port for RPC tests: the production server, gateway wiring and
// store (SQLite in a temp file by default, or a fresh PostgreSQL database), an auth file with
// tokens of every kind, and SDK clients per principal.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createClient, type Client } from "@connectrpc/connect";
import { createConfigClient, type ConfigClient } from "openshell-config";
import { createNodeTransport } from "openshell-config/transport/node";
import { OpenShell } from "openshell-config/raw";
import pg from "pg";
import { createGateway, type Gateway, type GatewayOptions } from "../../src/gateway.js";
import type { RunningServer } from "../../src/server.js";
import { parseAuthFile } from "../../src/auth/auth-file.js";
import { createMetrics } from "../../src/observability/metrics.js";
import { createLogger } from "../../src/observability/logger.js";
import { openStore } from "../../src/store/open-store.js";
import type { Store } from "../../src/store/store.js";
import { serveGateway } from "../serve-gateway.js";

export const TOKENS = {
  admin: "admin-token-0123456789",
  user: "user-token-0123456789",
  otherAdmin: "other-admin-token-0123456789",
  platform: "platform-admin-token-0123456789",
  supervisor: "supervisor-dev-token-0123456789",
} as const;

const AUTH = parseAuthFile({
  tokens: [
    { token: TOKENS.admin, principal: "alice", role: "admin", workspaces: ["default", "team-a"] },
    { token: TOKENS.user, principal: "bob", role: "user", workspaces: ["default"] },
    { token: TOKENS.otherAdmin, principal: "carol", role: "admin", workspaces: ["team-b"] },
    { token: TOKENS.platform, principal: "root", role: "admin", workspaces: "*" },
    { token: TOKENS.supervisor, principal: "supervisor:dev", role: "supervisor", workspace: "default", sandbox: "dev" },
  ],
});

export type Backend = "sqlite" | "postgres";

export interface TestGateway {
  readonly url: string;
  /** The database the gateway stores in (sqlite:… or postgres://…). */
  readonly dbUrl: string;
  readonly gateway: Gateway;
  readonly store: Store;
  /** Everything the gateway logged, as text (to check that no secret appears). */
  logs(): string;
  /** An SDK client authenticated as `who`. */
  sdk(who?: keyof typeof TOKENS, options?: Parameters<typeof createConfigClient>[0]): ConfigClient;
  /** A raw OpenShell client authenticated as `who` (or anonymous). */
  raw(who?: keyof typeof TOKENS): Client<typeof OpenShell>;
  /** Stops the gateway (gracefully) and starts a new one on the same database. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** A new PostgreSQL database on the shared server, and how to drop it; `prefix` names whose it is. */
export async function freshDatabase(prefix = "osc_rpc"): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/postgres" });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return {
    url: `postgres://postgres@127.0.0.1:5432/${name}`,
    drop: async () => {
      const c = new pg.Client({ connectionString: "postgres://postgres@127.0.0.1:5432/postgres" });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

export async function startTestGateway(backend: Backend = "sqlite", gatewayOptions: Partial<GatewayOptions> = {}): Promise<TestGateway> {
  let dir: string | undefined;
  let dbUrl: string;
  let drop = async () => {};
  if (backend === "sqlite") {
    dir = mkdtempSync(join(tmpdir(), "osc-gw-"));
    dbUrl = `sqlite:${join(dir, "gateway.db")}`;
  } else {
    const db = await freshDatabase();
    dbUrl = db.url;
    drop = db.drop;
  }
  let logText = "";
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logText += String(chunk);
      cb();
    },
  });

  let store!: Store;
  let gateway!: Gateway;
  let server!: RunningServer;
  let port = 0;
  const boot = async () => {
    store = await openStore(dbUrl);
    const metrics = createMetrics();
    const logger = createLogger({ level: "info", destination: sink });
    gateway = createGateway({ store, logger, metrics, auth: AUTH, ...gatewayOptions });
    await gateway.start();
    server = await serveGateway(gateway, logger, metrics, { port });
    port = server.port;
  };
  const stop = async () => {
    await server.close({ graceMs: 1_000 });
    await store.close();
  };
  await boot();
  const url = `http://127.0.0.1:${port}`;
  const transports: ReturnType<typeof createNodeTransport>[] = [];
  const transport = () => {
    const t = createNodeTransport({ baseUrl: url, protocol: "grpc" });
    transports.push(t);
    return t;
  };
  return {
    url,
    dbUrl,
    get gateway() {
      return gateway;
    },
    get store() {
      return store;
    },
    logs: () => logText,
    sdk: (who = "admin", options) =>
      createConfigClient({ transport: transport(), token: TOKENS[who], retry: { retries: 2, minDelayMs: 20, maxDelayMs: 50 }, ...options }),
    raw: (who) => {
      const t = transport();
      return who ? createConfigClient({ transport: t, token: TOKENS[who] }).raw(OpenShell) : createClient(OpenShell, t);
    },
    restart: async () => {
      await stop();
      await boot();
    },
    close: async () => {
      await stop();
      await drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
