// One ConnectSupervisor stream from hello to its end: the hello, the session answer, the
// bootstrap and its result, live updates applied one at a time with their results, heartbeats
// both ways, and the fault flags. Reconnecting is the caller's job (session.ts).

import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type Client } from "@connectrpc/connect";
import {
  ConfigApplyOutcome,
  ConfigComponent,
  ConfigApplyFailureSchema,
  ConfigComponentApplyResultSchema,
  ConfigBootstrapResultSchema,
  ConfigUpdateResultSchema,
  RelayOpenResultSchema,
  StartupConfigPreparedSchema,
  SupervisorHeartbeatSchema,
  SupervisorHelloSchema,
  SupervisorMessageSchema,
  SupervisorRuntimeReadySchema,
  type ConfigBootstrap,
  type ConfigComponentApplyResult,
  type ConfigUpdate,
  type GatewayMessage,
  type OpenShell,
  type SessionAccepted,
  type SupervisorMessage,
} from "openshell-config/raw";
import { admissionFor, bootstrapVerdict, outcomeConsistencyError, toApplyResult } from "./apply.js";
import type { Logger } from "./log.js";
import { AsyncQueue } from "./queue.js";
import type { SimulatedSandbox } from "./sandbox.js";
import { validatePolicy, describeViolations } from "./validate.js";

export const DEFAULT_HEARTBEAT_MS = 15_000;
/** The gateway may spend up to 45 s building a bootstrap (§3.9.2); wait a little longer for the answer. */
export const DEFAULT_ACCEPT_TIMEOUT_MS = 60_000;
/** After a half-close, how long the gateway gets to end the stream before it is cut. */
const HALF_CLOSE_GRACE_MS = 1_000;
/** After a SessionRejected, how long the gateway gets to end the stream with its status. */
const REJECTION_DRAIN_MS = 5_000;

/** Test and chaos switches (`--apply-delay-ms`, `--drop-acks`, `--disconnect-after`, `--fail-bootstrap`). */
export interface Faults {
  readonly applyDelayMs: number;
  readonly dropAcks: boolean;
  /** Close the stream after this many live updates (per connection); 0 = never. */
  readonly disconnectAfter: number;
  readonly failBootstrap: boolean;
}

export const NO_FAULTS: Faults = { applyDelayMs: 0, dropAcks: false, disconnectAfter: 0, failBootstrap: false };

export interface ConnectionOptions {
  readonly client: Client<typeof OpenShell>;
  readonly url: string;
  readonly sandboxId: string;
  readonly instanceId: string;
  readonly epoch: bigint;
  readonly token: string | undefined;
  readonly sandbox: SimulatedSandbox;
  readonly logger: Logger;
  readonly faults: Faults;
  readonly acceptTimeoutMs: number;
  /** Aborts when the supervisor stops. */
  readonly stopSignal: AbortSignal;
  /** Called for each live update handled (for statistics). */
  readonly onEvent?: (e: ConnectionEvent) => void;
}

export type ConnectionEvent = "accepted" | "bootstrapped" | "update";

export type ConnectionEnd =
  | { readonly kind: "rejected"; readonly reason: string; readonly permanent: boolean }
  | { readonly kind: "closed"; readonly accepted: boolean; readonly bootstrapped: boolean; readonly reason: string; readonly code?: Code };

type Job = { readonly kind: "bootstrap"; readonly bootstrap: ConfigBootstrap } | { readonly kind: "update"; readonly update: ConfigUpdate };

/** A rejection the supervisor cannot fix by retrying: the gateway needs capabilities it lacks. */
export function isPermanentRejection(reason: string, code: Code | undefined): boolean {
  return code === Code.FailedPrecondition || /capabilit|supports_config|protocol revision/i.test(reason);
}

const msg = (payload: SupervisorMessage["payload"]): SupervisorMessage => create(SupervisorMessageSchema, { payload });

/** Runs one stream to its end. Never throws. */
export async function runConnection(o: ConnectionOptions): Promise<ConnectionEnd> {
  return new Connection(o).run();
}

class Connection {
  private readonly out = new AsyncQueue<SupervisorMessage>();
  private readonly jobs = new AsyncQueue<Job>();
  private readonly abort = new AbortController();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly log: Logger;
  private accepted = false;
  private bootstrapped = false;
  private acks = true;
  private updatesHandled = 0;
  private localEnd: string | undefined;
  private lastReceived = Date.now();

  constructor(private readonly o: ConnectionOptions) {
    this.log = o.logger.child({ epoch: o.epoch.toString(), gateway: o.url });
  }

  async run(): Promise<ConnectionEnd> {
    const onStop = () => this.cut("supervisor stopping");
    if (this.o.stopSignal.aborted) return this.closed("supervisor stopping");
    this.o.stopSignal.addEventListener("abort", onStop, { once: true });
    try {
      return await this.converse();
    } catch (err) {
      const e = ConnectError.from(err);
      const reason = this.localEnd ?? `stream failed: [${Code[e.code] ?? e.code}] ${e.rawMessage}`;
      if (!this.accepted && isPermanentRejection(e.rawMessage, undefined) && e.code === Code.FailedPrecondition) {
        return { kind: "rejected", reason: e.rawMessage, permanent: true };
      }
      return { kind: "closed", accepted: this.accepted, bootstrapped: this.bootstrapped, reason, code: e.code };
    } finally {
      this.o.stopSignal.removeEventListener("abort", onStop);
      for (const t of this.timers) clearTimeout(t);
      this.timers.clear();
      void this.jobs.return();
      this.out.close();
      this.abort.abort(new ConnectError("connection finished", Code.Canceled));
    }
  }

  private async converse(): Promise<ConnectionEnd> {
    const { o } = this;
    this.out.push(
      msg({
        case: "hello",
        value: create(SupervisorHelloSchema, {
          sandboxId: o.sandboxId,
          instanceId: o.instanceId,
          connectionEpoch: o.epoch,
          supportsConfigSnapshots: true,
          supportsConfigApply: true,
        }),
      }),
    );
    const headers = new Headers();
    if (o.token !== undefined) headers.set("authorization", `Bearer ${o.token}`);
    const responses = o.client.connectSupervisor(this.out, { signal: this.abort.signal, headers })[Symbol.asyncIterator]();

    const acceptTimer = this.after(o.acceptTimeoutMs, () => this.cut(`no session answer within ${o.acceptTimeoutMs} ms`));
    const first = await responses.next();
    clearTimeout(acceptTimer);
    this.timers.delete(acceptTimer);
    if (first.done) return this.closed("stream ended before the session was accepted");
    const payload = first.value.payload;
    if (payload.case === "sessionRejected") return this.rejected(payload.value.reason, responses);
    if (payload.case !== "sessionAccepted") return this.closed(`expected session_accepted, got ${payload.case ?? "an empty message"}`);
    this.onAccepted(payload.value);

    // The worker ends when `jobs` is closed (in run's finally); an apply in progress completes.
    void this.work();
    for (;;) {
      const r = await responses.next();
      if (r.done) break;
      this.lastReceived = Date.now();
      this.dispatch(r.value);
    }
    return this.closed(this.localEnd ?? "gateway ended the stream");
  }

  private async rejected(reason: string, responses: AsyncIterator<GatewayMessage>): Promise<ConnectionEnd> {
    let code: Code | undefined;
    // The stream should end right after the rejection (with the status that says why); do not wait forever.
    this.after(REJECTION_DRAIN_MS, () => this.cut("the gateway did not end a rejected stream"));
    try {
      while (!(await responses.next()).done) {
        /* the stream should end right after the rejection */
      }
    } catch (err) {
      code = ConnectError.from(err).code;
    }
    return { kind: "rejected", reason, permanent: isPermanentRejection(reason, code) };
  }

  private closed(reason: string): ConnectionEnd {
    return { kind: "closed", accepted: this.accepted, bootstrapped: this.bootstrapped, reason };
  }

  private onAccepted(a: SessionAccepted): void {
    const { o } = this;
    this.accepted = true;
    this.acks = a.configApplyEnabled && !o.faults.dropAcks;
    o.onEvent?.("accepted");
    const hb = a.heartbeatInterval;
    const fromGateway = hb ? Number(hb.seconds) * 1000 + Math.floor(hb.nanos / 1e6) : 0;
    const heartbeatMs = fromGateway > 0 ? fromGateway : DEFAULT_HEARTBEAT_MS;
    this.log.info("session accepted", {
      sessionId: a.sessionId,
      configApplyEnabled: a.configApplyEnabled,
      heartbeatMs,
      hasBootstrap: a.bootstrap !== undefined,
      ...(o.faults.dropAcks ? { dropAcks: true } : {}),
    });
    if (!a.configApplyEnabled) this.log.warn("the gateway did not enable config apply: snapshots are applied but not acknowledged");
    this.startHeartbeats(heartbeatMs);
    if (a.bootstrap) this.jobs.push({ kind: "bootstrap", bootstrap: a.bootstrap });
    else this.log.warn("session accepted without a configuration bootstrap; waiting for live updates");
  }

  /** Our heartbeat every interval; and once the gateway has shown it sends heartbeats, silence for 3 intervals ends the stream. */
  private startHeartbeats(intervalMs: number): void {
    let gatewaySendsHeartbeats = false;
    const tick = () => {
      this.out.push(msg({ case: "heartbeat", value: create(SupervisorHeartbeatSchema) }));
      if (gatewaySendsHeartbeats && Date.now() - this.lastReceived > 3 * intervalMs) {
        this.cut(`no message from the gateway for ${3 * intervalMs} ms`);
        return;
      }
      schedule();
    };
    const schedule = () => this.after(intervalMs, tick);
    this.markGatewayHeartbeat = () => {
      gatewaySendsHeartbeats = true;
    };
    schedule();
  }

  private markGatewayHeartbeat: () => void = () => {};

  private dispatch(m: GatewayMessage): void {
    const p = m.payload;
    switch (p.case) {
      case "heartbeat":
        this.markGatewayHeartbeat();
        return;
      case "configUpdate":
        this.jobs.push({ kind: "update", update: p.value });
        return;
      case "configurationAdmission":
        this.log.debug("gateway recorded the configuration admission", { state: p.value.state, policyVersion: p.value.policyVersion });
        return;
      case "startupConfigCandidate": {
        const violations = validatePolicy(p.value.policy);
        const result: SupervisorMessage["payload"] =
          violations.length === 0
            ? { case: "startupConfigPrepared", value: create(StartupConfigPreparedSchema, { candidateId: p.value.candidateId, result: { case: "unchanged", value: {} } }) }
            : {
                case: "startupConfigPrepared",
                value: create(StartupConfigPreparedSchema, {
                  candidateId: p.value.candidateId,
                  result: { case: "failure", value: create(ConfigApplyFailureSchema, { code: "invalid_policy", message: describeViolations(violations), retryable: false }) },
                }),
              };
        this.out.push(msg(result));
        return;
      }
      case "relayOpen":
        this.out.push(
          msg({ case: "relayOpenResult", value: create(RelayOpenResultSchema, { channelId: p.value.channelId, success: false, error: "this supervisor does not support relays" }) }),
        );
        return;
      case "relayClose":
        return;
      case "sessionRedirect":
        this.log.warn("the gateway redirected the session; redirects are not supported, reconnecting to the configured gateways");
        this.halfClose("session redirect");
        return;
      case "sessionAccepted":
      case "sessionRejected":
        this.log.warn(`unexpected ${p.case} after the session started; ending the stream`);
        this.halfClose(`unexpected ${p.case}`);
        return;
      default:
        this.log.debug("ignoring an unknown gateway message");
    }
  }

  /** Applies bootstrap and updates strictly in order, one at a time. */
  private async work(): Promise<void> {
    try {
      for await (const job of this.jobs) {
        if (job.kind === "bootstrap") await this.applyBootstrap(job.bootstrap);
        else await this.applyUpdate(job.update);
      }
    } catch (err) {
      this.log.error("applying configuration failed unexpectedly; ending the stream", { err });
      this.cut("internal apply error");
    }
  }

  private async applyBootstrap(b: ConfigBootstrap): Promise<void> {
    const { o } = this;
    const delayMs = o.faults.applyDelayMs;
    const injectedFailure = o.faults.failBootstrap ? "bootstrap apply failed (injected by --fail-bootstrap)" : undefined;
    const sandbox = b.sandboxConfig ? await o.sandbox.applySandboxConfig(b.sandboxConfig, { delayMs, ...(injectedFailure ? { injectedFailure } : {}) }) : undefined;
    const provider = b.providerEnvironment ? await o.sandbox.applyProviderEnvironment(b.providerEnvironment) : undefined;
    const results = [sandbox, provider].filter((d) => d !== undefined).map((d) => this.checked(toApplyResult(d)));
    const verdict = sandbox ? bootstrapVerdict(sandbox, provider) : undefined;
    this.bootstrapped = true;
    o.onEvent?.("bootstrapped");
    if (!b.sandboxConfig) this.log.warn("bootstrap without a sandbox config snapshot: no admission can be reported");
    if (!this.acks) return;
    this.out.push(
      msg({
        case: "configBootstrapResult",
        value: create(ConfigBootstrapResultSchema, {
          results,
          admission: b.sandboxConfig && verdict ? admissionFor(b.sandboxConfig, o.instanceId, verdict) : undefined,
        }),
      }),
    );
    this.log.info("bootstrap result sent", { admitted: verdict?.admitted ?? false });
    // The workload starts only with an accepted configuration (§3.9.3).
    if (verdict?.admitted) this.out.push(msg({ case: "runtimeReady", value: create(SupervisorRuntimeReadySchema) }));
  }

  private async applyUpdate(u: ConfigUpdate): Promise<void> {
    const { o } = this;
    const delayMs = o.faults.applyDelayMs;
    let result: ConfigComponentApplyResult;
    let admission;
    switch (u.component.case) {
      case "sandboxConfig": {
        const d = await o.sandbox.applySandboxConfig(u.component.value, { delayMs });
        result = toApplyResult(d);
        admission = admissionFor(u.component.value, o.instanceId, { admitted: d.admitted, error: d.failure?.message });
        break;
      }
      case "providerEnvironment":
        result = toApplyResult(await o.sandbox.applyProviderEnvironment(u.component.value, { delayMs }));
        break;
      default:
        this.log.warn("config update with an unknown component; reporting UNSUPPORTED", { updateId: u.updateId });
        result = create(ConfigComponentApplyResultSchema, { component: ConfigComponent.UNSPECIFIED, outcome: ConfigApplyOutcome.UNSUPPORTED });
    }
    this.updatesHandled += 1;
    o.onEvent?.("update");
    if (this.acks) {
      this.out.push(
        msg({
          case: "configUpdateResult",
          value: create(ConfigUpdateResultSchema, { updateId: u.updateId, componentSequence: u.componentSequence, result: this.checked(result), admission }),
        }),
      );
    }
    if (this.log.enabled("debug")) this.log.debug("config update handled", {
      updateId: u.updateId,
      componentSequence: u.componentSequence.toString(),
      outcome: ConfigApplyOutcome[result.outcome],
      acknowledged: this.acks,
    });
    if (o.faults.disconnectAfter > 0 && this.updatesHandled >= o.faults.disconnectAfter) {
      this.log.warn(`closing the stream after ${this.updatesHandled} updates (--disconnect-after)`);
      this.halfClose("--disconnect-after");
    }
  }

  /** Logs (loudly) a result that breaks §3.10.2; the gateway would reject it. */
  private checked(r: ConfigComponentApplyResult): ConfigComponentApplyResult {
    if (r.outcome === ConfigApplyOutcome.UNSUPPORTED) return r;
    const problem = outcomeConsistencyError(r);
    if (problem) this.log.error("BUG: inconsistent apply result", { outcome: ConfigApplyOutcome[r.outcome], problem });
    return r;
  }

  /** Ends our side of the stream and gives the gateway a moment to end its side. */
  private halfClose(reason: string): void {
    this.localEnd ??= reason;
    this.out.close();
    this.after(HALF_CLOSE_GRACE_MS, () => this.cut(reason));
  }

  /** A timer that is cleared when the connection ends. */
  private after(ms: number, fn: () => void): NodeJS.Timeout {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
    return t;
  }

  /** Cancels the call now. */
  private cut(reason: string): void {
    this.localEnd ??= reason;
    this.abort.abort(new ConnectError(reason, Code.Canceled));
  }
}
