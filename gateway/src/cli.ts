#!/usr/bin/env node
// The `openshell-gateway` command: parses the command line, opens the store, wires the gateway
// into the server, and shuts everything down in order on SIGINT/SIGTERM.

import { readFileSync } from "node:fs";
import { AuthFileError, loadAuthFile, type AuthFile } from "./auth/auth-file.js";
import { parseCommandLine, UsageError, type GatewayConfig } from "./config.js";
import { createGateway } from "./gateway.js";
import { createLogger, type Logger } from "./observability/logger.js";
import { createMetrics } from "./observability/metrics.js";
import { startServer } from "./server.js";
import { openStore } from "./store/open-store.js";
import { defaultReplicaId } from "./cluster/replica-id.js";

/** How long in-flight calls get to finish on SIGINT/SIGTERM. */
const SHUTDOWN_GRACE_MS = 5_000;

async function main(): Promise<number> {
  let command;
  try {
    command = parseCommandLine(process.argv.slice(2), process.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`openshell-gateway: ${err.message}\n`);
    return err.exitCode;
  }
  if (command.kind === "help") {
    process.stdout.write(`${command.text}\n`);
    return 0;
  }
  const config = command.config;
  const logger = createLogger({ level: config.logLevel });
  try {
    return await serve(config, logger);
  } catch (err) {
    logger.fatal({ err: err instanceof AuthFileError ? { message: err.message } : err }, "gateway failed to start");
    return 1;
  }
}

async function serve(config: GatewayConfig, logger: Logger): Promise<number> {
  const auth = await loadAuth(config, logger);
  const metrics = createMetrics();
  const store = await openStore(config.db, config.dbPoolSize !== undefined ? { poolSize: config.dbPoolSize } : {});
  const gateway = createGateway({
    store,
    logger,
    metrics,
    auth,
    waitMaxMs: config.waitMaxMs,
    version: packageVersion(),
    ...(config.withoutOperations ? { trackOperations: false } : {}),
    session: {
      ...(config.ackTimeoutMs !== undefined ? { ackTimeoutMs: config.ackTimeoutMs } : {}),
      ...(config.heartbeatMs !== undefined ? { heartbeatMs: config.heartbeatMs } : {}),
    },
    ...(config.reconcileIntervalMs !== undefined ? { reconcileIntervalMs: config.reconcileIntervalMs } : {}),
    limits: {
      ...(config.maxMessageBytes !== undefined ? { maxMessageBytes: config.maxMessageBytes } : {}),
      ...(config.maxWaitersPerCaller !== undefined ? { maxWaitersPerCaller: config.maxWaitersPerCaller } : {}),
    },
    // On PostgreSQL the gateway always runs as a replica: alone it owns every session, and a
    // second replica started on the same database needs nothing more.
    ...(config.replica
      ? { cluster: { replicaId: config.replica.id ?? defaultReplicaId(), leaseMs: config.replica.leaseMs, notify: config.replica.notify } }
      : {}),
  });
  await gateway.start();
  const server = await startServer({
    host: config.host,
    port: config.port,
    routes: gateway.routes,
    interceptors: gateway.interceptors,
    corsOrigins: config.corsOrigins,
    logger,
    metricsRegistry: metrics.registry,
    isHealthy: () => gateway.isHealthy(),
    onShutdown: () => gateway.shutdown(),
  });
  logger.info(
    { url: server.url, store: store.kind, auth: config.auth.mode, corsOrigins: config.corsOrigins },
    `openshell-gateway listening on ${server.url}`,
  );

  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", () => resolve("SIGINT"));
    process.once("SIGTERM", () => resolve("SIGTERM"));
  });
  logger.info({ signal, graceMs: SHUTDOWN_GRACE_MS }, "shutting down; send the signal again to stop at once");
  const force = () => {
    logger.warn("second signal: exiting without waiting");
    process.exit(1);
  };
  process.once("SIGINT", force);
  process.once("SIGTERM", force);
  await server.close({ graceMs: SHUTDOWN_GRACE_MS });
  await store.close();
  logger.info("gateway stopped");
  return 0;
}

async function loadAuth(config: GatewayConfig, logger: Logger): Promise<AuthFile | undefined> {
  if (config.auth.mode === "file") {
    const auth = await loadAuthFile(config.auth.path);
    logger.info({ authFile: config.auth.path, tokens: auth.entries.length }, "bearer tokens loaded");
    return auth;
  }
  const loopback = config.host === "127.0.0.1" || config.host === "::1" || config.host === "localhost";
  logger.warn(
    { auth: "none", host: config.host },
    "*** --no-auth: AUTHENTICATION IS DISABLED. Every request runs as an admin of every workspace. For local demos only. ***",
  );
  if (!loopback) logger.error({ host: config.host }, `*** --no-auth on ${config.host}: anyone who can reach this port has admin rights ***`);
  return undefined;
}

/** The gateway package's version (package.json sits one level above both src/ and dist/). */
function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: string };
    return pkg.version ?? "dev";
  } catch {
    return "dev";
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`openshell-gateway: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
