#!/usr/bin/env node
// The `openshell-supervisor` command: parses the command line (usage errors exit 2), runs the
// fleet of sandbox sessions (or standalone mode), and stops cleanly on SIGINT/SIGTERM.
// Exit status: 0 stopped, 1 failed, 2 usage error, 3 permanently rejected by the gateway.

import { parseCommandLine, UsageError } from "./config.js";
import { createSupervisorTransport, Fleet } from "./fleet.js";
import { createLogger } from "./log.js";
import { createPollingFleet } from "./poll.js";
import { readEffective } from "./effective-state.js";
import { StateDir } from "./runtime.js";

declare const __SUPERVISOR_VERSION__: string | undefined;

/** How long a graceful stop may take before the process exits anyway. */
const STOP_GRACE_MS = 5_000;

async function main(): Promise<number> {
  let command;
  try {
    command = parseCommandLine(process.argv.slice(2), process.env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`openshell-supervisor: ${err.message}\n`);
    return err.exitCode;
  }
  if (command.kind === "help") {
    process.stdout.write(`${command.text}\n`);
    return 0;
  }
  if (command.kind === "version") {
    process.stdout.write(`${typeof __SUPERVISOR_VERSION__ === "string" ? __SUPERVISOR_VERSION__ : "dev"}\n`);
    return 0;
  }
  if (command.kind === "print-effective") {
    const doc = readEffective(command.stateDir, command.sandbox);
    if (doc === undefined) {
      process.stderr.write(`openshell-supervisor: nothing recorded for sandbox ${command.sandbox} under ${command.stateDir}\n`);
      return 1;
    }
    process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
    return 0;
  }
  const config = command.config;
  const stateDir = new StateDir(config.stateDir);
  const logger = createLogger({ level: config.logLevel });
  if (config.gateways.length > 0 && config.members.some((m) => m.token === undefined)) {
    logger.warn(
      "no token for some sandboxes: they connect without an authorization header, which only a gateway started with --no-auth accepts (it binds each session to the sandbox the supervisor names)",
    );
  }
  // --poll-interval: the upstream polling baseline (poll.ts) instead of ConnectSupervisor streams.
  const fleet = config.pollIntervalMs !== undefined ? createPollingFleet(config, config.pollIntervalMs, logger, stateDir) : new Fleet({
    members: config.members,
    gateways: config.gateways,
    transportFor: (url) => createSupervisorTransport(url, config.ca),
    stateDir,
    logger,
    localPolicy: config.localPolicy,
    faults: config.faults,
    probeTimeoutMs: config.probeTimeoutMs,
  });
  const onSignal = (signal: NodeJS.Signals) => {
    logger.info(`${signal}: stopping`);
    fleet.stop();
    setTimeout(() => process.exit(0), STOP_GRACE_MS).unref();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  logger.info("openshell-supervisor starting", {
    sandboxes: config.members.length,
    gateways: config.gateways,
    stateDir: stateDir.root,
    localPolicy: config.localPolicyFile ?? null,
    faults: config.faults,
  });
  try {
    const end = await fleet.run().finally(() =>
      // Leaves every sandbox with an up-to-date effective.json and no log.
      stateDir.close().catch((err: unknown) => logger.warn("could not fold the effective logs", { err })),
    );
    if (end.kind === "fatal") {
      logger.error("supervisor exiting: the gateway rejected the session permanently", { reason: end.reason });
      process.stderr.write(`openshell-supervisor: ${end.reason}\n`);
      return 3;
    }
    logger.info("supervisor stopped");
    return 0;
  } catch (err) {
    logger.error("supervisor failed", { err });
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`openshell-supervisor: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
