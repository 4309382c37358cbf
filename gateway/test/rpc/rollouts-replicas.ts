// Two gateways in this process on one fresh PostgreSQL database, each with its own store (and so
// its own LISTEN connection), for the rollout watch test that writes on one and watches on the
// other. No cluster options: notifications go through the store alone.

import { Writable } from "node:stream";
import { createGateway } from "../../src/gateway.js";
import type { RunningServer } from "../../src/server.js";
import { parseAuthFile } from "../../src/auth/auth-file.js";
import { createMetrics } from "../../src/observability/metrics.js";
import { createLogger } from "../../src/observability/logger.js";
import { openStore } from "../../src/store/open-store.js";
import type { Store } from "../../src/store/store.js";
import { freshDatabase, TOKENS } from "./harness.js";
import { serveGateway } from "../serve-gateway.js";

export interface ReplicaPair {
  readonly urls: readonly [string, string];
  /** The shared database (tests cut its connections). */
  readonly dbUrl: string;
  close(): Promise<void>;
}

export async function startReplicaPair(): Promise<ReplicaPair> {
  const db = await freshDatabase("osc_rollout");
  const auth = parseAuthFile({ tokens: [{ token: TOKENS.admin, principal: "alice", role: "admin", workspaces: ["default"] }] });
  const started: { server: RunningServer; store: Store }[] = [];
  const quiet = new Writable({ write: (_c, _e, cb) => cb() });
  try {
    for (let i = 0; i < 2; i++) {
      const store = await openStore(db.url);
      const metrics = createMetrics();
      const logger = createLogger({ level: "warn", destination: quiet });
      const gateway = createGateway({ store, logger, metrics, auth });
      await gateway.start();
      const server = await serveGateway(gateway, logger, metrics);
      started.push({ server, store });
    }
  } catch (err) {
    for (const s of started) await s.server.close({ graceMs: 500 }).then(() => s.store.close());
    await db.drop();
    throw err;
  }
  return {
    urls: [`http://127.0.0.1:${started[0]!.server.port}`, `http://127.0.0.1:${started[1]!.server.port}`],
    dbUrl: db.url,
    async close() {
      for (const s of started) {
        await s.server.close({ graceMs: 1_000 });
        await s.store.close();
      }
      await db.drop();
    },
  };
}
