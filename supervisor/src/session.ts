// One sandbox's supervisor session over time: connects, and after every stream end or error
// reconnects with capped, fully jittered exponential backoff, rotating through the gateway URLs,
// with the same instance id and the next connection epoch. A permanent rejection ends it.

import { randomUUID } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import type { OpenShell } from "openshell-config/raw";
import { backoffDelay, sleep, type BackoffOptions } from "./backoff.js";
import { WAKE_JITTER_MS, type RecoveryBeacon } from "./recovery.js";
import { DEFAULT_ACCEPT_TIMEOUT_MS, NO_FAULTS, runConnection, type ConnectionEnd, type Faults } from "./connection.js";
import type { Logger } from "./log.js";
import type { SimulatedSandbox } from "./sandbox.js";

/** The backoff attempt an accepted-but-cut session resumes from (at most ~1 s with the defaults). */
const ACCEPTED_ATTEMPT = 2;

export interface SessionOptions {
  readonly sandbox: SimulatedSandbox;
  /** Sent as `hello.sandbox_id`: the sandbox name or id, as configured. */
  readonly sandboxId: string;
  /** Sent as `authorization: Bearer <token>`; omitted when undefined. */
  readonly token: string | undefined;
  /** Gateway URLs, tried in turn. */
  readonly gateways: readonly string[];
  /** The shared client of a gateway URL (one transport per URL). */
  readonly clientFor: (url: string) => Client<typeof OpenShell>;
  readonly logger: Logger;
  readonly faults?: Faults;
  readonly backoff?: BackoffOptions;
  readonly random?: () => number;
  readonly acceptTimeoutMs?: number;
  /** Shared by the sessions of one process: a peer's acceptance cuts this session's backoff short. */
  readonly recovery?: RecoveryBeacon;
  /** Default: a random UUID, fixed for the life of this object (one process start). */
  readonly instanceId?: string;
}

export type SessionEnd = { readonly kind: "stopped" } | { readonly kind: "fatal"; readonly reason: string };

export interface SessionStats {
  connections: number;
  accepted: number;
  bootstraps: number;
  updates: number;
}

export class SupervisorSession {
  readonly instanceId: string;
  readonly sandboxId: string;
  readonly stats: SessionStats = { connections: 0, accepted: 0, bootstraps: 0, updates: 0 };
  private epoch = 0n;
  private readonly stopper = new AbortController();
  private readonly log: Logger;

  constructor(private readonly o: SessionOptions) {
    if (o.gateways.length === 0) throw new Error("a session needs at least one gateway URL");
    this.instanceId = o.instanceId ?? randomUUID();
    this.sandboxId = o.sandboxId;
    this.log = o.logger;
  }

  /** The epoch of the latest connection (0 before the first). */
  get connectionEpoch(): bigint {
    return this.epoch;
  }

  /** Connects and keeps reconnecting until stop() or a permanent rejection. */
  async run(): Promise<SessionEnd> {
    const { o } = this;
    let attempt = 0;
    let index = 0;
    while (!this.stopper.signal.aborted) {
      const url = o.gateways[index % o.gateways.length]!;
      this.epoch += 1n;
      this.stats.connections += 1;
      const end = await runConnection({
        client: o.clientFor(url),
        url,
        sandboxId: o.sandboxId,
        instanceId: this.instanceId,
        epoch: this.epoch,
        token: o.token,
        sandbox: o.sandbox,
        logger: this.log,
        faults: o.faults ?? NO_FAULTS,
        acceptTimeoutMs: o.acceptTimeoutMs ?? DEFAULT_ACCEPT_TIMEOUT_MS,
        stopSignal: this.stopper.signal,
        onEvent: (e) => {
          if (e === "accepted") {
            this.stats.accepted += 1;
            o.recovery?.accepted();
          }
          else if (e === "bootstrapped") this.stats.bootstraps += 1;
          else this.stats.updates += 1;
        },
      });
      if (this.stopper.signal.aborted) break;
      if (end.kind === "rejected" && end.permanent) {
        this.log.error("the gateway rejected the session permanently", { reason: end.reason, gateway: url });
        return { kind: "fatal", reason: `gateway ${url} rejected sandbox ${o.sandboxId}: ${end.reason}` };
      }
      // A session that got as far as applying its bootstrap was healthy: start the backoff over.
      // One the gateway accepted reached a live gateway, so the wait stays short (a network that
      // keeps cutting connections must not push every session to the 30 s ceiling); one that
      // was never accepted backs off in full.
      if (end.kind === "closed" && end.bootstrapped) attempt = 0;
      else if (end.kind === "closed" && end.accepted) attempt = Math.min(attempt, ACCEPTED_ATTEMPT);
      index += 1;
      const delayMs = backoffDelay(attempt, o.backoff, o.random);
      attempt += 1;
      this.log.warn("supervisor stream ended; reconnecting", {
        reason: describe(end),
        nextGateway: o.gateways[index % o.gateways.length],
        delayMs,
        attempt,
      });
      if (await this.sleepUnlessHealed(delayMs)) attempt = Math.min(attempt, ACCEPTED_ATTEMPT);
    }
    return { kind: "stopped" };
  }

  /**
   * Sleeps `delayMs`, unless a peer session is accepted first: then the gateway is back, and this
   * session reconnects after a short jitter instead of the rest of its grown backoff. True when
   * woken so.
   */
  private async sleepUnlessHealed(delayMs: number): Promise<boolean> {
    const { recovery } = this.o;
    if (recovery === undefined || delayMs <= WAKE_JITTER_MS) {
      await sleep(delayMs, this.stopper.signal);
      return false;
    }
    const healed = recovery.next();
    const until = Date.now() + delayMs;
    const timer = new AbortController();
    const onStop = () => timer.abort();
    this.stopper.signal.addEventListener("abort", onStop, { once: true });
    const woken = await Promise.race([sleep(delayMs, timer.signal).then(() => false), healed.promise.then(() => true)]);
    healed.cancel();
    timer.abort();
    this.stopper.signal.removeEventListener("abort", onStop);
    if (!woken || this.stopper.signal.aborted) return false;
    const jitter = Math.floor((this.o.random ?? Math.random)() * WAKE_JITTER_MS);
    this.log.info("a peer session was accepted; reconnecting early", { savedMs: Math.max(0, until - Date.now() - jitter) });
    await sleep(Math.min(jitter, Math.max(0, until - Date.now())), this.stopper.signal);
    return true;
  }

  /** Ends the current stream and stops reconnecting. */
  stop(): void {
    this.stopper.abort();
  }
}

function describe(end: ConnectionEnd): string {
  return end.kind === "rejected" ? `session rejected: ${end.reason}` : end.reason;
}
