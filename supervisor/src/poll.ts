// Polling mode (`--poll-interval D`): the upstream baseline without a ConnectSupervisor stream.
// Every interval each sandbox reads its desired configuration with GetSandboxConfig (supervisor
// token), applies it through the same simulated runtime as streamed snapshots (sandbox.ts) when
// its revision changed, and reports the policy's load status with ReportPolicyStatus. Nothing is
// acknowledged per operation: a polling gateway learns only the policy status.

import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import {
  ConfigApplyOutcome,
  GetSandboxConfigResponseSchema,
  OpenShell,
  PolicySource,
  PolicyStatus,
  ReportPolicyStatusRequestSchema,
  SandboxConfigSnapshotSchema,
  type SandboxConfigSnapshot,
  type SandboxPolicy,
} from "openshell-config/raw";
import { sleep } from "./backoff.js";
import type { SupervisorConfig } from "./config.js";
import type { FleetEnd, FleetMember } from "./fleet.js";
import { createSupervisorTransport } from "./fleet.js";
import type { Logger } from "./log.js";
import type { StateDir } from "./runtime.js";
import { SimulatedSandbox } from "./sandbox.js";

export interface PollingFleetOptions {
  readonly members: readonly FleetMember[];
  readonly gateways: readonly string[];
  readonly stateDir: StateDir;
  readonly logger: Logger;
  readonly intervalMs: number;
  readonly localPolicy?: SandboxPolicy | undefined;
  readonly applyDelayMs?: number;
  readonly probeTimeoutMs?: number;
  /** Default `createSupervisorTransport`. */
  readonly transportFor?: (url: string) => Transport;
  readonly random?: () => number;
}

/** Outcomes after which the policy counts as loaded. */
const LOADED_OUTCOMES = new Set([ConfigApplyOutcome.APPLIED, ConfigApplyOutcome.DEGRADED, ConfigApplyOutcome.IGNORED_DUPLICATE]);

/** What one poll did, for tests and statistics. */
export type PollResult = "unchanged" | "applied" | "error";

/** One sandbox's poll loop. */
export class PollingMember {
  private lastRevision = "";
  /** A policy version whose status is still to be reported (a report that failed is retried). */
  private unreported: { version: number; status: PolicyStatus; loadError: string } | undefined;
  private index = 0;

  constructor(
    readonly sandbox: SimulatedSandbox,
    private readonly o: {
      readonly name: string;
      readonly token: string | undefined;
      readonly gateways: readonly string[];
      readonly clientFor: (url: string) => Client<typeof OpenShell>;
      readonly logger: Logger;
      readonly applyDelayMs: number;
    },
  ) {}

  /** One poll: read, apply when changed, report. Never throws. */
  async pollOnce(signal?: AbortSignal): Promise<PollResult> {
    const url = this.o.gateways[this.index % this.o.gateways.length]!;
    const client = this.o.clientFor(url);
    const headers = new Headers();
    if (this.o.token !== undefined) headers.set("authorization", `Bearer ${this.o.token}`);
    try {
      const res = await client.getSandboxConfig({ name: this.o.name }, { headers, ...(signal ? { signal } : {}) });
      // Same field numbers as the streamed snapshot: convert through the wire format.
      const snapshot = fromBinary(SandboxConfigSnapshotSchema, toBinary(GetSandboxConfigResponseSchema, res));
      const revision = revisionKey(snapshot);
      let result: PollResult = "unchanged";
      if (revision !== this.lastRevision) {
        const decision = await this.sandbox.applySandboxConfig(snapshot, { delayMs: this.o.applyDelayMs });
        this.lastRevision = revision;
        result = "applied";
        // The policy status names a sandbox policy version; a global policy has none to report.
        if (snapshot.policySource !== PolicySource.GLOBAL && snapshot.version > 0) {
          const loaded = LOADED_OUTCOMES.has(decision.outcome);
          this.unreported = {
            version: snapshot.version,
            status: loaded ? PolicyStatus.LOADED : PolicyStatus.FAILED,
            loadError: loaded ? "" : (decision.failure?.message ?? ConfigApplyOutcome[decision.outcome] ?? "not loaded"),
          };
        }
      }
      if (this.unreported) {
        const r = this.unreported;
        await client.reportPolicyStatus(create(ReportPolicyStatusRequestSchema, { sandboxId: this.o.name, ...r }), { headers, ...(signal ? { signal } : {}) });
        if (this.unreported === r) this.unreported = undefined;
      }
      return result;
    } catch (err) {
      if (signal?.aborted) return "error";
      this.index += 1;
      this.o.logger.warn("poll failed; trying again at the next interval", { gateway: url, err: (err as Error).message });
      return "error";
    }
  }
}

/** The polled revision: a change of any part means a new configuration to apply. */
function revisionKey(s: SandboxConfigSnapshot): string {
  return [s.version, s.policyHash, s.configRevision, s.settingsRevision, s.globalPolicyVersion, s.policySource].join("|");
}

/** Many sandboxes polling from one process over one transport per gateway URL. */
export class PollingFleet {
  readonly members: readonly PollingMember[];
  private readonly clients = new Map<string, Client<typeof OpenShell>>();
  private readonly stopper = new AbortController();

  constructor(private readonly o: PollingFleetOptions) {
    if (o.gateways.length === 0) throw new Error("polling mode needs at least one gateway URL");
    const transportFor = o.transportFor ?? createSupervisorTransport;
    const clientFor = (url: string) => {
      let c = this.clients.get(url);
      if (!c) this.clients.set(url, (c = createClient(OpenShell, transportFor(url))));
      return c;
    };
    this.members = o.members.map((m) => {
      const logger = o.logger.child({ sandbox: m.name });
      const sandbox = new SimulatedSandbox({
        name: m.name,
        stateDir: o.stateDir,
        logger,
        localPolicy: o.localPolicy,
        ...(o.probeTimeoutMs !== undefined ? { probeTimeoutMs: o.probeTimeoutMs } : {}),
      });
      return new PollingMember(sandbox, { name: m.name, token: m.token, gateways: o.gateways, clientFor, logger, applyDelayMs: o.applyDelayMs ?? 0 });
    });
  }

  /** Polls every sandbox each interval (first polls spread over one interval) until stop(). */
  async run(): Promise<FleetEnd> {
    const { signal } = this.stopper;
    const random = this.o.random ?? Math.random;
    await Promise.all(this.members.map((m) => m.sandbox.start()));
    this.o.logger.info("polling mode: no supervisor stream", { sandboxes: this.members.length, intervalMs: this.o.intervalMs, gateways: this.o.gateways });
    await Promise.all(
      this.members.map(async (m) => {
        await sleep(Math.floor(random() * this.o.intervalMs), signal);
        while (!signal.aborted) {
          const started = Date.now();
          await m.pollOnce(signal);
          await sleep(Math.max(0, this.o.intervalMs - (Date.now() - started)), signal);
        }
      }),
    );
    return { kind: "stopped" };
  }

  stop(): void {
    this.stopper.abort();
  }
}

/** The polling fleet the command line describes. */
export function createPollingFleet(config: SupervisorConfig, intervalMs: number, logger: Logger, stateDir: StateDir): PollingFleet {
  return new PollingFleet({
    members: config.members,
    gateways: config.gateways,
    transportFor: (url) => createSupervisorTransport(url, config.ca),
    stateDir,
    logger,
    intervalMs,
    localPolicy: config.localPolicy,
    applyDelayMs: config.faults.applyDelayMs,
    probeTimeoutMs: config.probeTimeoutMs,
  });
}
