// Many sandboxes in one process: a simulated sandbox and a session for each, all sessions to a
// gateway URL sharing ONE HTTP/2 transport (one connection, many streams). Without gateways
// (standalone mode) the sandboxes only enforce their local policy.

import { rootCertificates } from "node:tls";
import { createClient, type Client, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { OpenShell, type SandboxPolicy } from "openshell-config/raw";
import type { BackoffOptions } from "./backoff.js";
import { NO_FAULTS, type Faults } from "./connection.js";
import type { Logger } from "./log.js";
import type { StateDir } from "./runtime.js";
import { SimulatedSandbox } from "./sandbox.js";
import { SupervisorSession, type SessionEnd } from "./session.js";
import { createRecoveryBeacon } from "./recovery.js";

export interface FleetMember {
  readonly name: string;
  readonly token: string | undefined;
}

export interface FleetOptions {
  readonly members: readonly FleetMember[];
  /** Empty: standalone mode (requires a local policy). */
  readonly gateways: readonly string[];
  readonly stateDir: StateDir;
  readonly logger: Logger;
  readonly localPolicy?: SandboxPolicy | undefined;
  readonly faults?: Faults;
  readonly probeTimeoutMs?: number;
  readonly backoff?: BackoffOptions;
  readonly acceptTimeoutMs?: number;
  /** Builds the transport of a gateway URL; default `createSupervisorTransport`. */
  readonly transportFor?: (url: string) => Transport;
  /** The backoff's random source (tests make it predictable); default Math.random. */
  readonly random?: () => number;
}

export type FleetEnd = { readonly kind: "stopped" } | { readonly kind: "fatal"; readonly reason: string };

/**
 * The transport of one gateway URL: gRPC over one HTTP/2 connection, pinged while idle, and
 * without compression (connect-node would otherwise gzip messages of 1 KiB and more). An https
 * URL is verified against the system roots plus `ca` (PEM), when given.
 */
export function createSupervisorTransport(url: string, ca?: string): Transport {
  return createGrpcTransport({
    baseUrl: url,
    acceptCompression: [],
    pingIntervalMs: 15_000,
    pingTimeoutMs: 10_000,
    // Node's `ca` replaces the default roots: keep them, so a public certificate still verifies.
    ...(ca !== undefined && url.startsWith("https:") ? { nodeOptions: { ca: [...rootCertificates, ca] } } : {}),
  });
}

export class Fleet {
  readonly sandboxes: readonly SimulatedSandbox[];
  readonly sessions: readonly SupervisorSession[];
  private readonly clients = new Map<string, Client<typeof OpenShell>>();
  private readonly transportFactory: (url: string) => Transport;
  private stopResolve: (() => void) | undefined;
  private readonly stopped = new Promise<void>((r) => (this.stopResolve = r));
  private isStopped = false;

  constructor(private readonly o: FleetOptions) {
    if (o.gateways.length === 0 && !o.localPolicy) throw new Error("standalone mode needs a local policy");
    this.transportFactory = o.transportFor ?? createSupervisorTransport;
    // One for the whole process: a session the gateway accepts again wakes its peers' backoff.
    const recovery = createRecoveryBeacon();
    this.sandboxes = o.members.map(
      (m) =>
        new SimulatedSandbox({
          name: m.name,
          stateDir: o.stateDir,
          logger: o.logger.child({ sandbox: m.name }),
          localPolicy: o.localPolicy,
          ...(o.probeTimeoutMs !== undefined ? { probeTimeoutMs: o.probeTimeoutMs } : {}),
        }),
    );
    this.sessions =
      o.gateways.length === 0
        ? []
        : o.members.map(
            (m, i) =>
              new SupervisorSession({
                sandbox: this.sandboxes[i]!,
                sandboxId: m.name,
                token: m.token,
                gateways: o.gateways,
                clientFor: (url) => this.clientFor(url),
                logger: o.logger.child({ sandbox: m.name }),
                faults: o.faults ?? NO_FAULTS,
                ...(o.backoff ? { backoff: o.backoff } : {}),
                ...(o.acceptTimeoutMs !== undefined ? { acceptTimeoutMs: o.acceptTimeoutMs } : {}),
                ...(o.random ? { random: o.random } : {}),
                recovery,
              }),
          );
  }

  /** Number of distinct transports created (one per gateway URL in use). */
  get transportCount(): number {
    return this.clients.size;
  }

  /** Prepares every sandbox, then runs every session until stop() or a permanent rejection (which stops the rest). */
  async run(): Promise<FleetEnd> {
    await Promise.all(this.sandboxes.map((s) => s.start()));
    if (this.sessions.length === 0) {
      this.o.logger.info("standalone mode: enforcing the local policy without a gateway", { sandboxes: this.sandboxes.length });
      // Keep the event loop alive until stopped.
      const keepAlive = setInterval(() => {}, 1 << 30);
      await this.stopped;
      clearInterval(keepAlive);
      return { kind: "stopped" };
    }
    this.o.logger.info("starting supervisor sessions", { sandboxes: this.sessions.length, gateways: this.o.gateways });
    let fatal: SessionEnd | undefined;
    await Promise.all(
      this.sessions.map(async (s) => {
        const end = await s.run();
        if (end.kind === "fatal" && !fatal) {
          fatal = end;
          this.stop();
        }
      }),
    );
    return fatal?.kind === "fatal" ? fatal : { kind: "stopped" };
  }

  stop(): void {
    if (this.isStopped) return;
    this.isStopped = true;
    for (const s of this.sessions) s.stop();
    this.stopResolve?.();
  }

  private clientFor(url: string): Client<typeof OpenShell> {
    let c = this.clients.get(url);
    if (!c) {
      c = createClient(OpenShell, this.transportFactory(url));
      this.clients.set(url, c);
    }
    return c;
  }
}
