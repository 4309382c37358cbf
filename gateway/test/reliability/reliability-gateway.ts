// A real gateway for the reliability tests: the production server and wiring on SQLite (a temp
// file whose bytes tests can read) or a fresh PostgreSQL database, an auth file with a principal
// of every kind (each with a distinct random token, so scans can look for it), captured logs at
// trace level, clients on every protocol, and a dump of every stored row.

import { freshDatabase } from "../rpc/harness.js";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { createClient, type Client, type Interceptor, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import Database from "better-sqlite3";
import { OpenShell } from "openshell-config/raw";
import pg from "pg";
import { parseAuthFile } from "../../src/auth/auth-file.js";
import { createGateway, type Gateway, type GatewayOptions } from "../../src/gateway.js";
import { createLogger } from "../../src/observability/logger.js";
import { createMetrics } from "../../src/observability/metrics.js";
import type { RunningServer } from "../../src/server.js";
import { openStore } from "../../src/store/open-store.js";
import type { Store } from "../../src/store/store.js";
import { serveGateway } from "../serve-gateway.js";

/** Every principal the reliability tests call as; `anonymous` sends no token, `forged` an unknown one. */
export const PRINCIPALS = {
  admin: { principal: "alice", role: "admin", workspaces: ["default", "team-a"] },
  user: { principal: "bob", role: "user", workspaces: ["default"] },
  teamBAdmin: { principal: "carol", role: "admin", workspaces: ["team-b"] },
  teamBUser: { principal: "dave", role: "user", workspaces: ["team-b"] },
  platform: { principal: "root", role: "admin", workspaces: "*" },
  platformUser: { principal: "erin", role: "user", workspaces: "*" },
  supervisor: { principal: "supervisor:dev", role: "supervisor", workspace: "default", sandbox: "dev" },
  teamBSupervisor: { principal: "supervisor:build", role: "supervisor", workspace: "team-b", sandbox: "build" },
  ghostSupervisor: { principal: "supervisor:ghost", role: "supervisor", workspace: "default", sandbox: "ghost" },
} as const;

export type Who = keyof typeof PRINCIPALS | "anonymous" | "forged";
export type Protocol = "grpc" | "grpc-web" | "connect-proto" | "connect-json";
export const PROTOCOLS: readonly Protocol[] = ["grpc", "grpc-web", "connect-proto", "connect-json"];

export type Backend = "sqlite" | "postgres";

export interface ReliabilityGateway {
  readonly url: string;
  readonly backend: Backend;
  readonly gateway: Gateway;
  readonly store: Store;
  /** The bearer token of each principal (random per gateway), plus a forged one nobody holds. */
  readonly tokens: Readonly<Record<Exclude<Who, "anonymous">, string>>;
  /** Everything logged so far (pino JSON lines, trace level). */
  logs(): string;
  /** A raw OpenShell client for `who` over `protocol`. */
  client(who: Who, protocol?: Protocol): Client<typeof OpenShell>;
  /**
   * Every stored row of every table, sorted, as text; redelivery bookkeeping left out, and the
   * operation columns named in `ignore` too (e.g. `target`, which any delivery may record).
   */
  dumpTables(options?: { ignore?: readonly string[] }): Promise<string>;
  /** The raw bytes of the database files (SQLite file, WAL and shared memory); empty for PostgreSQL. */
  databaseFileBytes(): Buffer;
  close(): Promise<void>;
}

/** Columns the reconciler may change between two dumps without anyone committing anything. */
const VOLATILE_COLUMNS = new Set(["attempt_count", "next_attempt_at", "row_version", "updated_at"]);

function cell(v: unknown): unknown {
  if (v instanceof Uint8Array) return `hex:${Buffer.from(v).toString("hex")}`;
  if (typeof v === "bigint") return `${v}n`;
  if (v instanceof Date) return v.toISOString();
  return v;
}

function rowText(table: string, row: Record<string, unknown>, ignore: readonly string[]): string {
  const kept = Object.entries(row).filter(([k]) => !(table === "operations" && (VOLATILE_COLUMNS.has(k) || ignore.includes(k))));
  return JSON.stringify(kept.map(([k, v]) => [k, cell(v)]));
}

const freshPostgres = () => freshDatabase("osc_rel");

export async function startReliabilityGateway(backend: Backend = "sqlite", options: Partial<GatewayOptions> = {}): Promise<ReliabilityGateway> {
  const tokens = Object.fromEntries(
    [...Object.keys(PRINCIPALS), "forged"].map((who) => [who, `tok-${who}-${randomBytes(12).toString("hex")}`]),
  ) as Record<Exclude<Who, "anonymous">, string>;
  const auth = parseAuthFile({ tokens: Object.entries(PRINCIPALS).map(([who, p]) => ({ token: tokens[who as keyof typeof PRINCIPALS], ...p })) });

  let dir: string | undefined;
  let dbUrl: string;
  let dbPath = "";
  let drop = async () => {};
  if (backend === "sqlite") {
    dir = mkdtempSync(join(tmpdir(), "osc-rel-"));
    dbPath = join(dir, "gateway.db");
    dbUrl = `sqlite:${dbPath}`;
  } else {
    const db = await freshPostgres();
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
  const store = await openStore(dbUrl);
  const metrics = createMetrics();
  const logger = createLogger({ level: "trace", destination: sink });
  const gateway = createGateway({ store, logger, metrics, auth, ...options });
  await gateway.start();
  const server: RunningServer = await serveGateway(gateway, logger, metrics);
  const url = server.url;
  const pgClient = backend === "postgres" ? new pg.Client({ connectionString: dbUrl }) : undefined;
  await pgClient?.connect();
  const sqliteReader = backend === "sqlite" ? new Database(dbPath, { readonly: true, fileMustExist: true }) : undefined;
  sqliteReader?.defaultSafeIntegers(true);

  const transport = (who: Who, protocol: Protocol): Transport => {
    const interceptors: Interceptor[] =
      who === "anonymous"
        ? []
        : [
            (next) => (req) => {
              req.header.set("authorization", `Bearer ${tokens[who]}`);
              return next(req);
            },
          ];
    switch (protocol) {
      case "grpc":
        // A client sending 17 MiB must not trip its own HTTP/2 session memory cap (10 MB).
        return createGrpcTransport({ baseUrl: url, interceptors, nodeOptions: { maxSessionMemory: 64 } });
      case "grpc-web":
        return createGrpcWebTransport({ baseUrl: url, httpVersion: "1.1", interceptors });
      case "connect-proto":
        return createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: true, interceptors });
      case "connect-json":
        return createConnectTransport({ baseUrl: url, httpVersion: "1.1", useBinaryFormat: false, interceptors });
    }
  };

  return {
    url,
    backend,
    gateway,
    store,
    tokens,
    logs: () => logText,
    client: (who, protocol = "grpc") => createClient(OpenShell, transport(who, protocol)),
    async dumpTables({ ignore = [] } = {}) {
      const out: string[] = [];
      if (sqliteReader) {
        const tables = sqliteReader.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[];
        for (const { name } of tables) {
          const rows = sqliteReader.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[];
          out.push(`## ${name}`, ...rows.map((r) => rowText(name, r, ignore)).sort());
        }
      } else {
        const tables = await pgClient!.query<{ table_name: string }>(
          "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
        );
        for (const { table_name: name } of tables.rows) {
          const rows = await pgClient!.query<Record<string, unknown>>(`SELECT * FROM "${name}"`);
          out.push(`## ${name}`, ...rows.rows.map((r) => rowText(name, r, ignore)).sort());
        }
      }
      return out.join("\n");
    },
    databaseFileBytes() {
      if (!dir) return Buffer.alloc(0);
      return Buffer.concat(["", "-wal", "-shm"].map((s) => dbPath + s).filter(existsSync).map((p) => readFileSync(p)));
    },
    async close() {
      await server.close({ graceMs: 1_000 });
      await store.close();
      sqliteReader?.close();
      await pgClient?.end();
      await drop();
      if (dir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
