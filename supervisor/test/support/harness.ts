// Runs the supervisor in-process for tests: a Fleet over a temp state dir, with every log line
// captured, stopped and cleaned up by `stop()`.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SandboxPolicy } from "openshell-config/raw";
import { NO_FAULTS, type Faults } from "../../src/connection.js";
import { Fleet, type FleetEnd } from "../../src/fleet.js";
import { createLogger } from "../../src/log.js";
import { StateDir } from "../../src/runtime.js";

export interface StartOptions {
  gateways: string[];
  /** Sandbox names (default ["dev"]). */
  names?: string[];
  token?: string;
  faults?: Partial<Faults>;
  localPolicy?: SandboxPolicy;
  probeTimeoutMs?: number;
  /** Reconnect backoff (default: 50 ms doubling to 500 ms) and its random source. */
  backoff?: { baseMs: number; capMs: number };
  random?: () => number;
}

export interface RunningSupervisor {
  readonly fleet: Fleet;
  readonly stateDir: StateDir;
  readonly logs: string[];
  /** Resolves when the fleet ends by itself (e.g. a permanent rejection). */
  readonly ended: Promise<FleetEnd>;
  logText(): string;
  stop(): Promise<void>;
}

export function startSupervisor(o: StartOptions): RunningSupervisor {
  const dir = mkdtempSync(join(tmpdir(), "osc-supervisor-"));
  const stateDir = new StateDir(dir);
  const logs: string[] = [];
  const logger = createLogger({ level: "debug", sink: (line) => logs.push(line) });
  const names = o.names ?? ["dev"];
  const fleet = new Fleet({
    members: names.map((name) => ({ name, token: o.token ?? `token-${name}` })),
    gateways: o.gateways,
    stateDir,
    logger,
    localPolicy: o.localPolicy,
    faults: { ...NO_FAULTS, ...o.faults },
    probeTimeoutMs: o.probeTimeoutMs ?? 300,
    backoff: o.backoff ?? { baseMs: 50, capMs: 500 },
    ...(o.random ? { random: o.random } : {}),
  });
  const ended = fleet.run();
  return {
    fleet,
    stateDir,
    logs,
    ended,
    logText: () => logs.join("\n"),
    async stop() {
      fleet.stop();
      await ended;
      // As the command does at stop: fold the effective logs, so no idle fold comes later to
      // make the removed directory again.
      await stateDir.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
