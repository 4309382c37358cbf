#!/usr/bin/env node
// The `openshell-gateway` command: parses the command line, opens the store, wires the gateway
// into the server, and shuts everything down in order on SIGINT/SIGTERM.

import { readFileSync } from "node:fs";
import { checkAuthFileSections, EMPTY_AUTH_FILE, loadAuthFile, type AuthFile } from "./auth/auth-file.js";
import { createOidcVerifier, type OidcVerifier } from "./auth/oidc-verifier.js";
import { parseCommandLine, UsageError, type GatewayConfig } from "./config.js";
import { createGateway } from "./gateway.js";
import { loadTlsFiles, type TlsMaterial } from "./http/tls-files.js";
import { createLogger, type Logger } from "./observability/logger.js";
import { createMetrics } from "./observability/metrics.js";
import { startServer } from "./server.js";
import { openStore } from "./store/open-store.js";
import { defaultReplicaId } from "./cluster/replica-id.js";
import { startupProblem } from "./startup-problem.js";

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
    // One plain line on stderr whatever went wrong (startup-problem.ts); a bug's stack goes to the debug log.
    const problem = startupProblem(err, config.db);
    if (!problem.known) logger.debug({ err }, "gateway failed to start");
    process.stderr.write(`openshell-gateway: ${problem.line}\n`);
    return 1;
  }
}

async function serve(config: GatewayConfig, logger: Logger): Promise<number> {
  const auth = await loadAuth(config, logger);
  const tls = config.tls ? await loadTls(config.tls, logger) : undefined;
  const oidc = config.oidc ? await startOidc(config.oidc, auth, logger) : undefined;
  const metrics = createMetrics();
  const store = await openStore(config.db, { log: logger, ...(config.dbPoolSize !== undefined ? { poolSize: config.dbPoolSize } : {}) });
  const gateway = createGateway({
    store,
    logger,
    metrics,
    auth,
    ...(oidc ? { oidc } : {}),
    waitMaxMs: config.waitMaxMs,
    version: packageVersion(),
    ...(config.withoutOperations ? { trackOperations: false } : {}),
    ...(config.withoutSharedRollouts ? { sharedRollouts: false } : {}),
    session: {
      ...(config.ackTimeoutMs !== undefined ? { ackTimeoutMs: config.ackTimeoutMs } : {}),
      ...(config.heartbeatMs !== undefined ? { heartbeatMs: config.heartbeatMs } : {}),
      ...(config.supervisorWriteTimeoutMs !== undefined ? { writeTimeoutMs: config.supervisorWriteTimeoutMs } : {}),
    },
    ...(config.maxSupervisorStreams !== undefined ? { supervisorStreams: { maxStreams: config.maxSupervisorStreams } } : {}),
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
  let server;
  try {
    server = await startServer({
      host: config.host,
      port: config.port,
      routes: gateway.routes,
      interceptors: gateway.interceptors,
      corsOrigins: config.corsOrigins,
      logger,
      metricsRegistry: metrics.registry,
      isHealthy: () => gateway.isHealthy(),
      onShutdown: () => gateway.shutdown(),
      ...(tls ? { tls } : {}),
      ...(config.sandboxPort !== undefined ? { sandboxListener: { port: config.sandboxPort } } : {}),
    });
  } catch (err) {
    await gateway.shutdown();
    oidc?.close();
    await store.close();
    throw err;
  }
  logger.info(
    {
      url: server.url,
      ...(server.sandboxUrl ? { sandboxUrl: server.sandboxUrl } : {}),
      store: store.kind,
      auth: config.auth.mode,
      clientCertificates: tls?.clientCa !== undefined,
      ...(config.oidc ? { oidcIssuer: config.oidc.issuer } : {}),
      corsOrigins: config.corsOrigins,
    },
    `openshell-gateway listening on ${server.url}${server.sandboxUrl ? `; supervisors on ${server.sandboxUrl}` : ""}`,
  );

  // Only the same signal again forces the exit. A Ctrl-C reaches every process of the terminal's
  // foreground group, and a parent that runs the gateway (npm run gateway, a process manager)
  // then sends SIGTERM of its own: that second signal means "stop", which is under way. One
  // listener per signal for the whole run, so that no signal ever meets Node's default action
  // (an exit without closing the store) between the first and the second.
  await new Promise<void>((resolve) => {
    let first: NodeJS.Signals | undefined;
    const onSignal = (received: NodeJS.Signals) => {
      if (first === undefined) {
        first = received;
        logger.info({ signal: received, graceMs: SHUTDOWN_GRACE_MS }, `shutting down; send ${received} again to stop at once`);
        resolve();
      } else if (received === first) {
        logger.warn({ signal: received }, "second signal: exiting without waiting");
        process.exit(1);
      } else logger.info({ signal: received }, "already shutting down");
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
  await server.close({ graceMs: SHUTDOWN_GRACE_MS });
  oidc?.close();
  await store.close();
  logger.info("gateway stopped");
  return 0;
}

async function loadAuth(config: GatewayConfig, logger: Logger): Promise<AuthFile | undefined> {
  if (config.auth.mode === "file") {
    const path = config.auth.path;
    const auth = await loadAuthFile(path, {
      refuseShared: config.auth.allowReadable !== true,
      onReadableByOthers: (mode) =>
        logger.warn({ authFile: path, mode: mode.toString(8).padStart(4, "0") }, "the auth file holds bearer tokens that other users of this machine can read (--allow-readable-auth-file)"),
    });
    checkAuthFileSections(auth, { clientCertificates: config.tls?.clientCaFile !== undefined, oidc: config.oidc !== undefined }, `auth file ${path}`);
    logger.info({ authFile: path, tokens: auth.entries.length }, "bearer tokens loaded");
    return auth;
  }
  if (config.auth.mode === "tls-or-oidc") {
    logger.info(
      { clientCertificates: config.tls?.clientCaFile !== undefined, oidc: config.oidc !== undefined },
      "no auth file: a verified client certificate is the platform admin, OIDC tokens map by their roles",
    );
    return EMPTY_AUTH_FILE;
  }
  // The command line allows --no-auth on a loopback --host only, and the server answers only
  // requests addressed to a loopback name (http/loopback-host.ts).
  logger.warn(
    { auth: "none", host: config.host },
    "*** --no-auth: AUTHENTICATION IS DISABLED. Every request runs as an admin of every workspace. For local demos only. ***",
  );
  return undefined;
}

async function loadTls(files: NonNullable<GatewayConfig["tls"]>, logger: Logger): Promise<TlsMaterial> {
  const { leaf, ...material } = await loadTlsFiles(files);
  const now = Date.now();
  if (Date.parse(leaf.validTo) < now || Date.parse(leaf.validFrom) > now) {
    logger.warn({ certFile: files.certFile, validFrom: leaf.validFrom, validTo: leaf.validTo }, "the TLS certificate is not valid now: clients will refuse it");
  }
  logger.info({ certFile: files.certFile, subject: leaf.subject, validTo: leaf.validTo, clientCaFile: files.clientCaFile }, "TLS certificate loaded");
  return material;
}

/**
 * Starts OIDC discovery and waits for its first attempt (bounded by the fetch timeout). An issuer
 * that is down does not stop the gateway: discovery keeps retrying in the background, and its
 * tokens get UNAVAILABLE meanwhile, while auth-file tokens and client certificates work.
 */
async function startOidc(settings: NonNullable<GatewayConfig["oidc"]>, auth: AuthFile | undefined, logger: Logger): Promise<OidcVerifier> {
  const verifier = createOidcVerifier({ ...settings, logger, ...(auth?.oidc ? { roles: auth.oidc } : {}) });
  await verifier.firstAttempt;
  return verifier;
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
